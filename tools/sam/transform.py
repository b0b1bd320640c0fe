"""Transforms template.yaml as CloudFormation does before it orders a stack.

1. Every AWS::Include (Fn::Transform) is replaced by the file it names, as
   CloudFormation inlines the snippet before it runs the SAM transform.
2. Local CodeUri values become the S3 placeholder sam validate uses (the
   SAM translator accepts only S3 locations; sam package uploads them), and
   a state machine's local DefinitionS3Location becomes the Bucket and Key
   object sam package writes there.
3. The SAM translator of the pinned aws-sam-cli (samtranslator) expands the
   AWS::Serverless-2016-10-31 transform, with its bundled map of AWS
   managed policies, so no AWS account is needed.

The result is written as JSON with sorted keys, so that it is byte-stable,
with the SHA-256 of each file it was made from under
Metadata.TransformedFrom (internal/cfn's freshness test compares them with
the files as they are). A template the translator refuses is an error
naming its resources.

usage: transform.py TEMPLATE OUT.json
"""

import hashlib
import json
import logging
import os
import sys

from samcli.lib.translate.sam_template_validator import SamTemplateValidator
from samcli.yamlhelper import yaml_parse
from samtranslator.internal.managed_policies import get_bundled_managed_policy_map
from boto3.session import Session
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser import parser
from samtranslator.translator.translator import Translator


READ = {}


def read(path, base):
    rel = os.path.relpath(path, base)
    with open(path, "rb") as f:
        data = f.read()
    READ[rel] = hashlib.sha256(data).hexdigest()
    return data.decode("utf-8")


def inline_includes(node, base):
    if isinstance(node, dict):
        t = node.get("Fn::Transform")
        if len(node) == 1 and isinstance(t, dict) and t.get("Name") == "AWS::Include":
            loc = t.get("Parameters", {}).get("Location")
            if not isinstance(loc, str) or loc.startswith("s3://"):
                raise SystemExit(f"AWS::Include: Location {loc!r} is not a local file")
            return inline_includes(yaml_parse(read(os.path.join(base, loc), base)), base)
        return {k: inline_includes(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [inline_includes(v, base) for v in node]
    return node


def main():
    # The translator's notes on feature toggles it does not know are not
    # about the template.
    logging.basicConfig(level=logging.ERROR)
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    base = os.path.dirname(os.path.abspath(src))
    tpl = inline_includes(yaml_parse(read(os.path.abspath(src), base)), base)

    for res in tpl.get("Resources", {}).values():
        props = res.get("Properties") or {}
        loc = props.get("DefinitionS3Location")
        if res.get("Type") == "AWS::StepFunctions::StateMachine" and isinstance(loc, str) and not loc.startswith("s3://"):
            props["DefinitionS3Location"] = {"Bucket": "bucket", "Key": loc}

    # sam validate's own replacement of local code locations.
    validator = SamTemplateValidator(tpl, managed_policy_loader=None, region="us-east-1")
    validator._replace_local_codeuri()
    tpl = validator.sam_template

    policies = get_bundled_managed_policy_map("aws") or {}
    translator = Translator(
        managed_policy_map=None, sam_parser=parser.Parser(), plugins=[], boto_session=Session(region_name="us-east-1")
    )
    try:
        result = translator.translate(sam_template=tpl, parameter_values={}, get_managed_policy_map=lambda: policies)
    except InvalidDocumentException as e:
        causes = "\n".join("  " + str(c) for c in e.causes)
        raise SystemExit(f"{src}: the SAM transform refuses the template:\n{causes}")
    result.setdefault("Metadata", {})["TransformedFrom"] = READ
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
