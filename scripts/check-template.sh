#!/usr/bin/env bash
# Offline checks of the SAM template (no AWS account, no credentials, no Docker):
#   1. cfn-lint template.yaml
#   2. sam validate --lint --template template.yaml
#   3. samtranslator turns the template into plain CloudFormation (what the
#      AWS::Serverless transform does on deploy), then cfn-lint runs on that.
#      This catches what only shows after the transform, e.g. a schedule
#      faster than once a minute on the generated AWS::Events::Rule.
#   4. invariants of the translated template that the application relies on
#      (functions, binaries, runtime, routes, env vars, IAM scope).
#
# Tools: cfn-lint, aws-sam-cli and aws-sam-translator from PyPI. If all three
# are already on PATH / importable they are used as they are. Otherwise they
# are installed into a dedicated virtualenv (default ~/.cache/mm-sam-tools,
# override with MM_SAM_TOOLS_VENV) rather than the shared interpreter:
# aws-sam-cli pins boto3/botocore and installing it next to a preinstalled
# awscli breaks awscli's own pins.
#
# Usage: scripts/check-template.sh   (from any directory; exits non-zero if any check fails)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TEMPLATE=template.yaml

# sam and samtranslator need a region; nothing here talks to AWS.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0

TOOLS_VENV="${MM_SAM_TOOLS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mm-sam-tools}"

tools_in() { # $1: directory holding the executables, or "" for PATH
    local bin="${1:+$1/}"
    command -v "${bin}cfn-lint" >/dev/null 2>&1 &&
        command -v "${bin}sam" >/dev/null 2>&1 &&
        "${bin}python3" -c 'import samtranslator, cfnlint' >/dev/null 2>&1
}

if tools_in ""; then
    BIN=""
elif tools_in "$TOOLS_VENV/bin"; then
    BIN="$TOOLS_VENV/bin/"
else
    echo "==> installing cfn-lint, aws-sam-cli, aws-sam-translator into $TOOLS_VENV" >&2
    python3 -m venv "$TOOLS_VENV"
    "$TOOLS_VENV/bin/python3" -m pip install --quiet --disable-pip-version-check \
        cfn-lint aws-sam-cli aws-sam-translator
    BIN="$TOOLS_VENV/bin/"
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

translate() {
    "$PY" - "$TEMPLATE" "$TMP/translated.json" <<'PY'
"""SAM -> CloudFormation with samtranslator, offline."""
import json
import sys

from cfnlint.decode import cfn_yaml
from samtranslator.translator.transform import transform

src, dst = sys.argv[1], sys.argv[2]


class FakeManagedPolicyLoader:
    """Stands in for the IAM ListPolicies call samtranslator would make to
    resolve managed policy *names* given under a function's Policies."""

    def load(self):
        return {
            name: "arn:aws:iam::aws:policy/" + path
            for name, path in {
                "AWSLambdaBasicExecutionRole": "service-role/AWSLambdaBasicExecutionRole",
                "AWSLambdaVPCAccessExecutionRole": "service-role/AWSLambdaVPCAccessExecutionRole",
                "AWSXrayWriteOnlyAccess": "AWSXrayWriteOnlyAccess",
            }.items()
        }


template = cfn_yaml.load(src)
# `sam package` replaces local CodeUri paths with S3 locations before the
# transform runs; do the same with placeholders.
glob = template.get("Globals", {}).get("Function", {})
if "CodeUri" in glob:
    glob["CodeUri"] = "s3://placeholder-bucket/code.zip"
for name, res in template["Resources"].items():
    props = res.get("Properties", {})
    if res.get("Type") == "AWS::Serverless::Function" and "CodeUri" in props:
        props["CodeUri"] = "s3://placeholder-bucket/%s.zip" % name

out = transform(template, {}, FakeManagedPolicyLoader())
with open(dst, "w") as f:
    json.dump(out, f, indent=1)
print("    translated %d resources -> %s" % (len(out["Resources"]), dst))
PY
}

invariants() {
    "$PY" - "$TMP/translated.json" <<'PY'
"""Properties of the deployed stack that the Rust code and the docs assume."""
import json
import sys

t = json.load(open(sys.argv[1]))
res = t["Resources"]
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


binaries = {
    "JoinFunction": "join",
    "LeaveFunction": "leave",
    "StatusFunction": "status",
    "MatcherFunction": "matcher",
    "WsConnectFunction": "ws-connect",
    "WsDisconnectFunction": "ws-disconnect",
}
pushers = {"JoinFunction", "MatcherFunction"}
env_vars = {
    "REDIS_URL", "REDIS_CLUSTER", "MM_NAMESPACE", "MM_WORLDS", "MM_INSTANT_MATCH",
    "MM_WS_ENDPOINT", "AUTH_ISSUER", "AUTH_AUDIENCE", "AUTH_JWKS_URL", "RUST_LOG",
}

functions = {k for k, v in res.items() if v["Type"] == "AWS::Lambda::Function"}
check(functions == set(binaries), "Lambda functions are %s" % sorted(functions))

for fn, binary in binaries.items():
    r = res.get(fn)
    if r is None:
        continue
    p, meta = r["Properties"], r.get("Metadata", {})
    check(meta.get("BuildMethod") == "rust-cargolambda", fn + ": BuildMethod")
    check(meta.get("BuildProperties", {}).get("Binary") == binary, fn + ": Binary != " + binary)
    check(p.get("Runtime") == "provided.al2023", fn + ": Runtime")
    check(p.get("Architectures") == ["arm64"], fn + ": Architectures")
    check(p.get("Handler") == "bootstrap", fn + ": Handler")
    check(p.get("MemorySize") == 256, fn + ": MemorySize")
    check(p.get("Timeout") == (60 if fn == "MatcherFunction" else 10), fn + ": Timeout")
    subnets = [s.get("Ref") for s in p.get("VpcConfig", {}).get("SubnetIds", [])]
    check(subnets == ["PrivateSubnetA", "PrivateSubnetB"], fn + ": not in the private subnets")
    missing = env_vars - set(p.get("Environment", {}).get("Variables", {}))
    check(not missing, "%s: missing env %s" % (fn, sorted(missing)))
    role = res.get(fn + "Role", {}).get("Properties", {})
    arns = json.dumps(role.get("ManagedPolicyArns", []))
    check("AWSLambdaVPCAccessExecutionRole" in arns, fn + ": no VPC access policy")
    check(("PushToConnectionsPolicy" in arns) == (fn in pushers),
          fn + ": push permission should be %s" % (fn in pushers))
    check("Policies" not in role, fn + ": unexpected inline role policies")

matcher = res.get("MatcherFunction", {}).get("Properties", {})
check(matcher.get("ReservedConcurrentExecutions") == 1, "matcher: ReservedConcurrentExecutions != 1")
rules = [v["Properties"] for v in res.values() if v["Type"] == "AWS::Events::Rule"]
check([r.get("ScheduleExpression") for r in rules] == ["rate(1 minute)"],
      "matcher schedule is %s" % [r.get("ScheduleExpression") for r in rules])

# HTTP API routes, all behind the JWT authorizer.
body = res.get("HttpApi", {}).get("Properties", {}).get("Body", {})
want = {
    ("post", "/v1/matching/join"): "JoinFunction",
    ("post", "/v1/matching/leave"): "LeaveFunction",
    ("get", "/v1/matching/queue-status/{worldType}"): "StatusFunction",
    ("get", "/v1/matching/my-status"): "StatusFunction",
}
got = {}
for path, methods in body.get("paths", {}).items():
    for method, op in methods.items():
        integ = op.get("x-amazon-apigateway-integration", {})
        target = json.dumps(integ.get("uri", ""))
        fn = next((f for f in binaries if "${%s.Arn}" % f in target), None)
        got[(method, path)] = fn
        check(op.get("security") == [{"JwtAuthorizer": []}], "%s %s: not behind JwtAuthorizer" % (method, path))
        check(integ.get("payloadFormatVersion") == "2.0", "%s %s: payload format" % (method, path))
check(got == want, "HTTP routes are %s" % got)

# WebSocket routes.
routes = {v["Properties"]["RouteKey"] for v in res.values() if v["Type"] == "AWS::ApiGatewayV2::Route"}
check(routes == {"$connect", "$disconnect"}, "WebSocket routes are %s" % sorted(routes))

# No IAM statement of ours grants anything on "*".
for name, v in res.items():
    if v["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
        for st in v["Properties"]["PolicyDocument"]["Statement"]:
            rs = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            check("*" not in rs, name + ": Resource *")

for o in ("HttpApiUrl", "WebSocketUrl", "ConnectionsEndpoint"):
    check(o in t.get("Outputs", {}), "missing output " + o)

for e in errors:
    print("    " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
}

lint_translated() {
    translate && "$CFN_LINT" "$TMP/translated.json"
}

run_check "1/4 cfn-lint $TEMPLATE" "$CFN_LINT" "$TEMPLATE"
# `sam validate` works offline and without credentials (verified with no
# AWS_* credential variables and no ~/.aws); it only needs a region.
run_check "2/4 sam validate --lint" "$SAM" validate --lint --template "$TEMPLATE"
run_check "3/4 samtranslator + cfn-lint on the CloudFormation output" lint_translated
if [[ -s "$TMP/translated.json" ]]; then
    run_check "4/4 template invariants" invariants
else
    echo "    FAILED: 4/4 template invariants (no translated template)" >&2
    failed+=("4/4 template invariants")
fi

if ((${#failed[@]})); then
    echo "template checks FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "all template checks passed"
