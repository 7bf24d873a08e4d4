#!/usr/bin/env bash
# The matchmaking simulator in one command (docs/simulator.md). Installs what
# it needs when it is missing (libfaketime; tcmalloc, which Debian's
# jemalloc-linked redis-server needs under libfaketime; redis-server), builds
# the simulator in release mode and runs it with the arguments given. Without
# arguments it runs the acceptance scenario: 50 arrivals/s, ratings
# N(1500, 300), team size 10, 10 minutes, every rule set in tools/sim/rules/
# plus FIFO and the oracle. The report goes to sim-results/<UTC time>/.
#
#   scripts/sim.sh                         the acceptance scenario
#   scripts/sim.sh --rules my-rules.json   another rule set (repeatable)
#   scripts/sim.sh --trace arrivals.csv    replay a trace (time,player,rating)
#   scripts/sim.sh --rules tools/sim/rules/teams --party-sizes 1:0.6,2:0.25,3:0.15
#                                          2x5 teams with parties (issue 12)
#   scripts/sim.sh --rules tools/sim/rules/ready --accept-probability 1,0.95,0.9
#                                          ready checks (issue 13)
#   scripts/sim.sh --help                  every flag
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh redis sim

echo "building the simulator (release)..." >&2
cargo build --release --quiet -p sim
target_dir="${CARGO_TARGET_DIR:-target}"
exec "$target_dir/release/mm-sim" "$@"
