#!/usr/bin/env bash
# Offline checks of the SAM template (no AWS account, no credentials, no Docker):
#   1. cfn-lint template.yaml
#   2. cfn-lint template.yaml -a cfn_lint_serverless.rules: the Serverless
#      Rules (log retention, access logs, default throttling, async failure
#      destinations, ...). A rule may only be switched off next to the
#      resource, with the reason in a comment (template.yaml, Metadata).
#   3. sam validate --lint --template template.yaml
#   4. samtranslator turns the template into plain CloudFormation (what the
#      AWS::Serverless transform does on deploy), then cfn-lint, with the
#      Serverless Rules, runs on that. This catches what only shows after the
#      transform, e.g. a schedule faster than once a minute on the generated
#      AWS::Events::Rule, or a parameter SAM resolves while transforming.
#      Done once per NetworkMode (Ipv6Egress, NatGateway), the transform
#      given that value.
#   5. invariants of the translated template that the application and the
#      docs rely on (functions, binaries, runtime, routes, env vars, IAM
#      scope, logs, throttling, failure destination, alarms, dashboard),
#      including MM_RULES / MM_WORLDS: exactly one of them per function,
#      for the default parameters and for a given Rules parameter; and the
#      network layout of each NetworkMode (run once per mode on that mode's
#      translation): Ipv6Egress has no NAT gateway, Elastic IP, internet
#      gateway or IPv4 route out, but an egress-only gateway, dual-stack
#      private subnets, a dualstack WebSocket API and the JWKS proxy;
#      NatGateway has today's layout; in neither does anything refer to a
#      resource that does not exist in that mode.
#
# cfn-lint (steps 1, 2 and the lint of step 4) checks every condition's
# branches statically, so both modes are linted by each run.
#
# Pass/fail: every cfn-lint finding fails its check -- errors, warnings and
# informational ones alike (--non-zero-exit-code informational; cfn-lint's exit
# code is a bit mask: 2 errors, 4 warnings, 8 informational, anything else
# means it did not run).
#
# Tools: cfn-lint, cfn-lint-serverless, aws-sam-cli and aws-sam-translator
# from PyPI. If they are on PATH / importable -- and the cfn-lint on PATH can
# load the Serverless Rules, which a plain global cfn-lint cannot -- they are
# used as they are. Otherwise they are installed into a dedicated virtualenv
# (default ~/.cache/mm-sam-tools, override with MM_SAM_TOOLS_VENV) rather
# than the shared interpreter: aws-sam-cli pins boto3/botocore and installing
# it next to a preinstalled awscli breaks awscli's own pins.
#
# Usage: scripts/check-template.sh   (from any directory; exits non-zero if any check fails)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TEMPLATE=template.yaml

# sam and samtranslator need a region; nothing here talks to AWS.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0

TOOLS_VENV="${MM_SAM_TOOLS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mm-sam-tools}"

SERVERLESS_RULES=cfn_lint_serverless.rules

tools_in() { # $1: directory holding the executables, or "" for PATH
    local bin="${1:+$1/}"
    command -v "${bin}cfn-lint" >/dev/null 2>&1 &&
        command -v "${bin}sam" >/dev/null 2>&1 &&
        "${bin}python3" -c 'import samtranslator, cfnlint' >/dev/null 2>&1 &&
        # The Serverless Rules must load into this very cfn-lint (its own
        # interpreter), and it must know --non-zero-exit-code (cfn-lint v1).
        # (grep reads everything: with -q it could exit early, cfn-lint would
        # die of SIGPIPE and pipefail would call the tools unusable.)
        "${bin}cfn-lint" --non-zero-exit-code informational --list-rules \
            -a "$SERVERLESS_RULES" 2>/dev/null | grep '^ES1007' >/dev/null
}

if tools_in ""; then
    BIN=""
elif tools_in "$TOOLS_VENV/bin"; then
    BIN="$TOOLS_VENV/bin/"
else
    echo "==> installing cfn-lint, cfn-lint-serverless, aws-sam-cli, aws-sam-translator into $TOOLS_VENV" >&2
    [[ -x "$TOOLS_VENV/bin/python3" ]] || python3 -m venv "$TOOLS_VENV"
    "$TOOLS_VENV/bin/python3" -m pip install --quiet --disable-pip-version-check \
        cfn-lint cfn-lint-serverless aws-sam-cli aws-sam-translator
    BIN="$TOOLS_VENV/bin/"
    if ! tools_in "$TOOLS_VENV/bin"; then
        echo "FAILED: $TOOLS_VENV has no usable cfn-lint with $SERVERLESS_RULES, sam and samtranslator" >&2
        exit 1
    fi
fi
CFN_LINT="${BIN}cfn-lint"
SAM="${BIN}sam"
PY="${BIN}python3"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

failed=()
run_check() { # $1: name, rest: command
    local name="$1"
    shift
    echo "==> $name"
    if "$@"; then
        echo "    ok: $name"
    else
        echo "    FAILED: $name" >&2
        failed+=("$name")
    fi
}

# cfn-lint with an exit code that means what it says: 0 = no finding at all.
lint() { # cfn-lint arguments (template first: -a takes several values)
    local rc=0
    "$CFN_LINT" --non-zero-exit-code informational "$@" || rc=$?
    if ((rc == 0)); then
        return 0
    fi
    if ((rc >= 2 && rc <= 14 && rc % 2 == 0)); then
        local kinds=()
        ((rc & 2)) && kinds+=(errors)
        ((rc & 4)) && kinds+=(warnings)
        ((rc & 8)) && kinds+=(informational)
        echo "    cfn-lint reported: ${kinds[*]} (exit $rc)" >&2
    else
        echo "    cfn-lint did not run (exit $rc)" >&2
    fi
    return 1
}

NETWORK_MODES=(Ipv6Egress NatGateway)

translate() { # $1: NetworkMode
    "$PY" scripts/template/translate.py "$TEMPLATE" "$TMP/translated-$1.json" "NetworkMode=$1"
}

invariants() { # $1: NetworkMode
    "$PY" scripts/template/invariants.py "$TMP/translated-$1.json" --network-mode "$1"
}

lint_translated() { # $1: NetworkMode
    translate "$1" && lint "$TMP/translated-$1.json" -a "$SERVERLESS_RULES"
}

run_check "1/5 cfn-lint $TEMPLATE" lint "$TEMPLATE"
run_check "2/5 cfn-lint $TEMPLATE -a $SERVERLESS_RULES" lint "$TEMPLATE" -a "$SERVERLESS_RULES"
# `sam validate` works offline and without credentials (verified with no
# AWS_* credential variables and no ~/.aws); it only needs a region. It also
# reads samconfig.toml ([default.validate.parameters]).
run_check "3/5 sam validate --lint" "$SAM" validate --lint --template "$TEMPLATE"
for mode in "${NETWORK_MODES[@]}"; do
    run_check "4/5 samtranslator + cfn-lint (with $SERVERLESS_RULES) on the CloudFormation output, NetworkMode=$mode" \
        lint_translated "$mode"
done
for mode in "${NETWORK_MODES[@]}"; do
    if [[ -s "$TMP/translated-$mode.json" ]]; then
        run_check "5/5 template invariants, NetworkMode=$mode" invariants "$mode"
    else
        echo "    FAILED: 5/5 template invariants, NetworkMode=$mode (no translated template)" >&2
        failed+=("5/5 template invariants, NetworkMode=$mode")
    fi
done

if ((${#failed[@]})); then
    echo "template checks FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "all template checks passed"
