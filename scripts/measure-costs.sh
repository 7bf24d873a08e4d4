#!/usr/bin/env bash
# Measures the figures of docs/deploy.md section 9 ("Cost per 1 M matches and
# per idle month") that can be measured without AWS, through the release
# function binaries: each invocation's billed duration (Lambda Runtime API
# emulator), the processes' peak memory, the log bytes they write, the
# @connections request bytes, and the Redis script time, round trips and
# bytes of every invocation. Everything runs on 127.0.0.1 with a private
# redis-server on a free port (never 6379). Not part of scripts/test.sh.
#
#   scripts/measure-costs.sh                             release build of the four functions, then about 3 minutes
#   COST_BIN_DIR=target/release scripts/measure-costs.sh existing binaries, no build
#   python3 scripts/measure_costs.py --from-json bench-results/costs.json
#                                                        no measurement: the costs (per 1 M matches, and the
#                                                        monthly tables per NetworkMode) recomputed from a saved run
#
# Knobs: COST_MATCHES (default 300), COST_HEARTBEATS (300), COST_MATCHER_SECS
# (60, the template's matcher timeout), COST_OUT (Markdown path; default
# bench-results/costs.md, git-ignored, with the raw figures as costs.json).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh redis
if ! command -v openssl >/dev/null; then      # signs the test tokens
  echo "installing openssl (apt-get)..." >&2
  SUDO=""; [[ "$(id -u)" -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openssl >/dev/null
fi

if [[ -z "${COST_BIN_DIR:-}" ]]; then
  echo "building the functions (release)..." >&2
  cargo build --release --quiet -p join -p ws-connect -p ws-disconnect -p matcher
  COST_BIN_DIR="${CARGO_TARGET_DIR:-target}/release"
fi

exec python3 scripts/measure_costs.py --bin-dir "$COST_BIN_DIR" ${COST_OUT:+--out "$COST_OUT"}
