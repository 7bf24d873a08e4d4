#!/usr/bin/env bash
# The project's one reproducible benchmark. Installs redis-server and
# valgrind (row 10) when they are missing, builds everything it measures in
# release mode, then runs the bench binary, which starts its own private
# redis-server processes on free loopback ports (never 6379) and the local
# stack on free ports. Prints the results and writes them as Markdown to
# bench-results/latest.md (see docs/benchmark.md).
#
#   scripts/bench.sh                 full run (several minutes)
#   BENCH_QUICK=1 scripts/bench.sh   smoke run: smaller sizes, shorter runs (< 1 min after the build)
#
# Other knobs: BENCH_ROWS=1,3 (run some rows, 1-14; by default all but 12
# and 13, which fill a million players: they run only when named;
# 14 is one ticket in several worlds), BENCH_REPS (default 5),
# BENCH_E2E_SECS (default 30, quick 5), BENCH_OUT (Markdown path).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh redis valgrind

echo "building (release)..." >&2
cargo build --release --quiet \
  -p bench -p local-stack \
  -p join -p leave -p status -p matcher -p ws-connect -p ws-disconnect

target_dir="${CARGO_TARGET_DIR:-target}"
export BENCH_BIN_DIR="${BENCH_BIN_DIR:-$target_dir/release}"
exec "$target_dir/release/bench"
