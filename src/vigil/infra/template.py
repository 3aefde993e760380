"""Load ``template.yaml`` and expand it from AWS SAM into plain CloudFormation.

Used by the tests and by the local stack builder, which creates its moto
resources from the same template that ``sam deploy`` uses. ``aws-sam-translator``
and PyYAML are development dependencies only: they are imported inside the
functions, so importing this module never requires them (the Lambda package
ships neither).
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_REGION", "load", "main", "translate"]

DEFAULT_REGION = "us-east-1"

# The translator only accepts S3 locations for code; local paths are swapped
# for this placeholder, as `sam validate` does. It never reaches AWS.
_PLACEHOLDER_BUCKET = "vigil-local-placeholder"

# (resource type, property) pairs that point at local files before packaging.
_LOCAL_URI_PROPERTIES = (
    ("AWS::Serverless::Function", "CodeUri"),
    ("AWS::Serverless::LayerVersion", "ContentUri"),
    ("AWS::Serverless::Api", "DefinitionUri"),
    ("AWS::Serverless::HttpApi", "DefinitionUri"),
    ("AWS::Serverless::StateMachine", "DefinitionUri"),
)
_GLOBALS_SECTION = {
    "AWS::Serverless::Function": "Function",
    "AWS::Serverless::Api": "Api",
    "AWS::Serverless::HttpApi": "HttpApi",
}


def _construct_intrinsic(loader: Any, tag_suffix: str, node: Any) -> dict[str, Any]:
    import yaml

    key = tag_suffix if tag_suffix in ("Ref", "Condition") else f"Fn::{tag_suffix}"
    value: Any
    if tag_suffix == "GetAtt" and isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node).split(".", 1)
    elif isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {key: value}


@cache
def _loader() -> type[Any]:
    """SafeLoader subclass that reads CloudFormation short-form intrinsics.

    A private subclass, so that other users of ``yaml.safe_load`` in the same
    process are not affected (samtranslator's own helper patches SafeLoader).
    PyYAML is imported here because the Lambda package does not ship it.
    """
    import yaml

    class CfnLoader(yaml.SafeLoader):
        pass

    CfnLoader.add_multi_constructor("!", _construct_intrinsic)
    return CfnLoader


def load(template_path: Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML (or JSON) template into a dict."""
    import yaml

    with Path(template_path).open(encoding="utf-8") as stream:
        try:
            document = yaml.load(stream, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as exc:
            raise ValueError(f"{template_path}: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{template_path}: not a template (top level is not a mapping)")
    return document


def _is_local_uri(value: Any) -> bool:
    return isinstance(value, str) and not value.startswith("s3://")


def _placeholder(value: str) -> str:
    key = value.strip("./") or "root"
    return f"s3://{_PLACEHOLDER_BUCKET}/{key}"


def _replace_local_uris(template: dict[str, Any]) -> None:
    for resource in (template.get("Resources") or {}).values():
        if not isinstance(resource, dict):
            continue
        properties = resource.get("Properties")
        if not isinstance(properties, dict):
            continue
        for resource_type, prop in _LOCAL_URI_PROPERTIES:
            if resource.get("Type") == resource_type and _is_local_uri(properties.get(prop)):
                properties[prop] = _placeholder(properties[prop])
    for resource_type, section in _GLOBALS_SECTION.items():
        group = (template.get("Globals") or {}).get(section)
        if not isinstance(group, dict):
            continue
        for typ, prop in _LOCAL_URI_PROPERTIES:
            if typ == resource_type and _is_local_uri(group.get(prop)):
                group[prop] = _placeholder(group[prop])


class _NoManagedPolicies:
    """Managed-policy loader that needs no AWS access.

    The template names managed policies by ARN only, so the translator never
    has to resolve a policy name through IAM.
    """

    def load(self) -> dict[str, str]:
        return {}


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


def translate(template_path: Path, parameters: dict[str, str] | None = None) -> dict[str, Any]:
    """Return the CloudFormation template that ``template_path`` expands to.

    ``parameters`` overrides template parameter defaults (and may set pseudo
    parameters such as ``AWS::AccountId``). The region comes from
    ``AWS_REGION``/``AWS_DEFAULT_REGION``, else ``us-east-1``; no AWS call is made.
    """
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.utils.py27hash_fix import (
        to_py27_compatible_template,
        undo_mark_unicode_str_in_template,
    )

    template = load(template_path)
    _replace_local_uris(template)
    parameter_values: dict[str, Any] = dict(parameters or {})

    # The session only tells the translator its region (and so the
    # partition); it is never used to call AWS.
    session = boto3.session.Session(region_name=_region())
    policies = _NoManagedPolicies()
    to_py27_compatible_template(template, parameter_values)
    translator = Translator(None, Parser(), boto_session=session)
    try:
        translated = translator.translate(
            template,
            parameter_values=parameter_values,
            get_managed_policy_map=policies.load,
        )
    except InvalidDocumentException as exc:
        reasons = "; ".join(cause.message for cause in exc.causes) or exc.message
        raise ValueError(f"{template_path}: {reasons}") from exc
    result: dict[str, Any] = undo_mark_unicode_str_in_template(translated)
    return result


def _default_template() -> Path:
    return Path.cwd() / "template.yaml"


def main(argv: list[str] | None = None) -> int:
    """``python -m vigil.infra.template [template.yaml] [Name=Value ...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    overrides = [arg for arg in args if "=" in arg and not arg.endswith((".yaml", ".yml", ".json"))]
    paths = [arg for arg in args if arg not in overrides]
    if len(paths) > 1:
        print(
            "usage: python -m vigil.infra.template [template.yaml] [Name=Value ...]",
            file=sys.stderr,
        )
        return 2
    template_path = Path(paths[0]) if paths else _default_template()
    parameters = dict(arg.split("=", 1) for arg in overrides)
    try:
        translated = translate(template_path, parameters)
    except (OSError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    json.dump(translated, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
