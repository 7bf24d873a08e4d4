#!/usr/bin/env bash
# The one test command (README, CI): installs what the tests need, then runs
# formatting, lints, the template checks and every test against real Redis
# (standalone and a 3-node cluster). Nothing is skipped when a tool is
# missing: it is installed, or the run fails.
#
# Longer soaks: MM_SOAK_OPS=1000000 scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-shot run gains nothing from incremental caches, which take as much
# disk as the build itself.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

scripts/install-deps.sh redis chromium sim

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== template checks (cfn-lint, sam validate --lint, cfn-lint after samtranslator)"
scripts/check-template.sh

echo "== cargo test"
cargo test --workspace
