#!/usr/bin/env python3
"""SAM -> CloudFormation with samtranslator, offline.

Usage: translate.py TEMPLATE OUT.json [NAME=VALUE ...]
NAME=VALUE: parameter values the transform sees (as `sam deploy
--parameter-overrides` would give them); the rest take their defaults."""
import json
import sys

from cfnlint.decode import cfn_yaml
from samtranslator.translator.transform import transform

src, dst = sys.argv[1], sys.argv[2]
parameter_values = dict(arg.split("=", 1) for arg in sys.argv[3:])


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

unknown = set(parameter_values) - set(template.get("Parameters", {}))
if unknown:
    sys.exit("translate.py: no such parameter: %s" % ", ".join(sorted(unknown)))
out = transform(template, parameter_values, FakeManagedPolicyLoader())
with open(dst, "w") as f:
    json.dump(out, f, indent=1)
given = " ".join("%s=%s" % kv for kv in sorted(parameter_values.items()))
print("    translated %d resources%s -> %s" % (len(out["Resources"]), " (%s)" % given if given else "", dst))
