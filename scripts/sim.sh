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
#   scripts/sim.sh --help                  every flag
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
APT_UPDATED=0
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: apt-get not found; install these packages by hand: $*" >&2
    exit 1
  fi
  if [ "$APT_UPDATED" -eq 0 ]; then
    $SUDO apt-get update -qq
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# True if any of the given files exists.
any_exists() {
  for f in "$@"; do
    if [ -f "$f" ]; then return 0; fi
  done
  return 1
}
multiarch="$(gcc -print-multiarch 2>/dev/null || true)"
multiarch="${multiarch:-x86_64-linux-gnu}"
if [ -z "${MM_SIM_LIBFAKETIME:-}" ] && ! any_exists \
     "/usr/lib/$multiarch/faketime/libfaketime.so.1" /usr/lib/faketime/libfaketime.so.1 \
     /usr/lib64/faketime/libfaketime.so.1 /usr/local/lib/faketime/libfaketime.so.1; then
  echo "installing faketime (apt-get)..." >&2
  apt_install faketime
fi
if [ -z "${MM_SIM_ALLOCATOR:-}" ] && ! any_exists \
     "/usr/lib/$multiarch/libtcmalloc_minimal.so.4" /usr/lib64/libtcmalloc_minimal.so.4 \
     /usr/lib/libtcmalloc_minimal.so.4 /usr/local/lib/libtcmalloc_minimal.so.4; then
  echo "installing tcmalloc (apt-get)..." >&2
  if [ "$APT_UPDATED" -eq 0 ]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
  if apt-cache show libtcmalloc-minimal4t64 >/dev/null 2>&1; then
    apt_install libtcmalloc-minimal4t64
  else
    apt_install libtcmalloc-minimal4
  fi
fi
scripts/install-deps.sh redis

echo "building the simulator (release)..." >&2
cargo build --release --quiet -p sim
target_dir="${CARGO_TARGET_DIR:-target}"
exec "$target_dir/release/mm-sim" "$@"
