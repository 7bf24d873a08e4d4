#!/usr/bin/env bash
# Runs the whole matchmaking system on this machine, no AWS account needed:
# HTTP API on 127.0.0.1:3000 (demo page at /), WebSocket API on
# 127.0.0.1:3001, the matcher ticking every second, and Redis: REDIS_URL if
# set, otherwise a private redis-server that stops with the stack.
# Configuration: the variables in docs/deploy.md#configuration (MM_RULES, MM_HTTP_ADDR, ...).
# Without MM_RULES, MM_RULES_FILE or MM_WORLDS, the worlds come from
# tools/local-stack/rules.json (the start banner lists them, with their
# sizes). Demo games last MM_DEMO_GAME_SECS (10 s) before their result.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${MM_RULES:-}${MM_RULES_FILE:-}${MM_WORLDS:-}" ]; then
  export MM_RULES_FILE="$PWD/tools/local-stack/rules.json"
fi

if [ -z "${REDIS_URL:-}" ]; then
  scripts/install-deps.sh redis
fi
exec cargo run --release --quiet -p local-stack --bin mm-local
