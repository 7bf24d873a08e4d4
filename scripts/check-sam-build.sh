#!/usr/bin/env bash
# `sam build` of template.yaml, as a deploy would do it, and a check that every
# function got an arm64 `bootstrap`. Not part of the default test run: it
# cross-compiles six release binaries (several minutes on 2 cores).
#
# Installs what is missing, from PyPI into the same virtualenv that
# scripts/check-template.sh uses (default ~/.cache/mm-sam-tools, override with
# MM_SAM_TOOLS_VENV):
#   aws-sam-cli   -> sam
#   cargo-lambda  -> cargo-lambda (prebuilt binary; `cargo lambda ...`)
#   ziglang       -> zig, the cross linker cargo-lambda uses (python3 -m ziglang)
# and the Rust target aarch64-unknown-linux-gnu through rustup.
#
# Usage: scripts/check-sam-build.sh   (from any directory)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TEMPLATE=template.yaml
BUILD_DIR=.aws-sam/build

export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0

# Logical id -> cargo binary (= package) name; must match template.yaml.
FUNCTIONS=(
    JoinFunction:join
    LeaveFunction:leave
    StatusFunction:status
    MatcherFunction:matcher
    WsConnectFunction:ws-connect
    WsDisconnectFunction:ws-disconnect
)

TOOLS_VENV="${MM_SAM_TOOLS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mm-sam-tools}"
if [[ ! -x "$TOOLS_VENV/bin/python3" ]]; then
    echo "==> creating $TOOLS_VENV" >&2
    python3 -m venv "$TOOLS_VENV"
fi
# The venv first: cargo finds `cargo-lambda` on PATH, cargo-lambda finds zig
# through `python3 -m ziglang`.
export PATH="$TOOLS_VENV/bin:$PATH"

want=()
command -v sam >/dev/null 2>&1 || want+=(aws-sam-cli)
command -v cargo-lambda >/dev/null 2>&1 || want+=(cargo-lambda)
command -v zig >/dev/null 2>&1 || python3 -c 'import ziglang' 2>/dev/null || want+=(ziglang)
if ((${#want[@]})); then
    echo "==> installing ${want[*]} into $TOOLS_VENV" >&2
    python3 -m pip install --quiet --disable-pip-version-check "${want[@]}"
fi

if command -v rustup >/dev/null 2>&1 &&
    ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    echo "==> rustup target add aarch64-unknown-linux-gnu" >&2
    rustup target add aarch64-unknown-linux-gnu
fi

echo "==> tools"
sam --version
cargo lambda --version
echo "zig $(python3 -m ziglang version 2>/dev/null || zig version)"

# Fail early, with a clear message, if a binary the template names is not in
# the workspace (sam build would fail much later with a cargo error).
echo "==> checking the workspace has the six function binaries"
bins="$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
meta = json.load(sys.stdin)
for pkg in meta["packages"]:
    for t in pkg["targets"]:
        if "bin" in t["kind"]:
            print(t["name"])
')"
missing=()
for entry in "${FUNCTIONS[@]}"; do
    bin="${entry#*:}"
    grep -qx -- "$bin" <<<"$bins" || missing+=("$bin")
done
if ((${#missing[@]})); then
    echo "FAILED: the cargo workspace has no binary named: ${missing[*]}" >&2
    exit 1
fi

echo "==> sam build --build-in-source --template $TEMPLATE"
rm -rf "$BUILD_DIR"
# Rust builds always run in the source tree (cargo's target/ dir); saying so
# explicitly avoids a warning per function.
sam build --build-in-source --template "$TEMPLATE"

echo "==> checking build artifacts"
failed=0
for entry in "${FUNCTIONS[@]}"; do
    fn="${entry%%:*}"
    boot="$BUILD_DIR/$fn/bootstrap"
    if [[ ! -f "$boot" ]]; then
        echo "    FAILED: $boot is missing" >&2
        failed=1
        continue
    fi
    if [[ ! -x "$boot" ]]; then
        echo "    FAILED: $boot is not executable" >&2
        failed=1
        continue
    fi
    # ELF header: e_machine (bytes 18-19, little-endian) 0xB7 = AArch64.
    if ! python3 - "$boot" <<'PY'; then
import sys
with open(sys.argv[1], "rb") as f:
    head = f.read(20)
ok = head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 0xB7
sys.exit(0 if ok else 1)
PY
        echo "    FAILED: $boot is not an arm64 (aarch64) ELF executable" >&2
        failed=1
        continue
    fi
    echo "    ok: $boot ($(du -h "$boot" | cut -f1))"
done

if ((failed)); then
    echo "sam build check FAILED" >&2
    exit 1
fi
echo "sam build check passed: six arm64 bootstrap binaries in $BUILD_DIR"
