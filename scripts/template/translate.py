#!/usr/bin/env python3
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
