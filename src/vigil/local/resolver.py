"""CloudFormation's intrinsic functions (Ref, Fn::GetAtt, Fn::Sub, Fn::If, ...), its
conditions and its parameters, evaluated against the local stack: what provisioning reads a
translated template's properties through, and what the template's tests check it with."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from vigil.local.stack import LocalNames

_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class TemplateError(ValueError):
    """The template uses something the local runtime cannot reproduce."""


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE: Any = _NoValue()


def as_text(value: Any) -> str:
    """A scalar as CloudFormation writes it into a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise TemplateError(f"expected a scalar, got {value!r}")


def references(value: Any) -> set[str]:
    """Names that ``value`` refers to through Ref, Fn::GetAtt and Fn::Sub."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= references(item)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                found.add(arg)
            elif key == "Fn::GetAtt":
                found.add(arg.split(".", 1)[0] if isinstance(arg, str) else str(arg[0]))
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                for name in _SUB_VARIABLE.findall(text):
                    if not name.startswith("!"):
                        found.add(name.split(".", 1)[0])
                if isinstance(arg, list) and len(arg) > 1:
                    found |= references(arg[1])
            else:
                found |= references(arg)
    return found


class Resolver:
    """Evaluates CloudFormation intrinsic functions against the local stack."""

    def __init__(self, cfn: Mapping[str, Any], names: LocalNames) -> None:
        self.cfn = cfn
        self.names = names
        self.refs: dict[str, Any] = {}
        self.attributes: dict[str, dict[str, Any]] = {}
        self._conditions: dict[str, bool] = {}
        self._parameters = self._parameter_values()

    def _parameter_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        declared = self.cfn.get("Parameters") or {}
        unknown = set(self.names.parameters) - set(declared)
        if unknown:
            raise TemplateError(f"unknown parameters: {', '.join(sorted(unknown))}")
        for name, spec in declared.items():
            if name in self.names.parameters:
                raw: Any = self.names.parameters[name]
            elif "Default" in spec:
                raw = spec["Default"]
            else:
                raise TemplateError(f"parameter {name} has no default: give it a value")
            allowed = spec.get("AllowedValues")
            if allowed is not None and as_text(raw) not in [as_text(a) for a in allowed]:
                raise TemplateError(f"parameter {name}={raw!r} is not one of {allowed}")
            kind = str(spec.get("Type", "String"))
            if kind.startswith("AWS::SSM::"):
                raise TemplateError(f"parameter {name}: SSM parameters are not available locally")
            if kind == "CommaDelimitedList" or kind.startswith("List<"):
                values[name] = [part.strip() for part in as_text(raw).split(",")] if raw else []
            else:
                values[name] = as_text(raw)
        return values

    def register(self, logical_id: str, ref: Any, **attributes: Any) -> None:
        self.refs[logical_id] = ref
        self.attributes[logical_id] = attributes

    def pseudo(self, name: str) -> Any:
        names = self.names
        pseudo: dict[str, Any] = {
            "AWS::Region": names.region,
            "AWS::AccountId": names.account_id,
            "AWS::Partition": "aws",
            "AWS::StackName": names.stack_name,
            "AWS::StackId": names.arn(
                "cloudformation",
                f"stack/{names.stack_name}/{uuid.uuid5(uuid.NAMESPACE_URL, names.stack_name)}",
            ),
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NotificationARNs": [],
            "AWS::NoValue": NO_VALUE,
        }
        if name not in pseudo:
            raise TemplateError(f"unknown pseudo parameter {name}")
        return pseudo[name]

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        if name in self._parameters:
            return self._parameters[name]
        if name in self.refs:
            return self.refs[name]
        if name in (self.cfn.get("Resources") or {}):
            # A resource that has no local counterpart still has a stable physical id.
            return self.names.physical(name)
        raise TemplateError(f"Ref to unknown name {name}")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        attributes = self.attributes.get(logical_id, {})
        if attribute not in attributes:
            raise TemplateError(f"{logical_id}.{attribute} is not available locally")
        return attributes[attribute]

    def present(self) -> dict[str, Any]:
        """The template's resources whose condition holds: those a deploy would create."""
        resources: Mapping[str, Any] = self.cfn.get("Resources") or {}
        return {
            logical_id: resource
            for logical_id, resource in resources.items()
            if "Condition" not in resource or self.condition(resource["Condition"])
        }

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions = self.cfn.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"unknown condition {name}")
            self._conditions[name] = self._truth(conditions[name])
        return self._conditions[name]

    def _truth(self, expression: Any) -> bool:
        if isinstance(expression, dict) and len(expression) == 1:
            ((key, arg),) = expression.items()
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::Equals":
                left, right = (self.resolve(side) for side in arg)
                return bool(_comparable(left) == _comparable(right))
            if key == "Fn::Not":
                return not self._truth(arg[0])
            if key == "Fn::And":
                return all(self._truth(part) for part in arg)
            if key == "Fn::Or":
                return any(self._truth(part) for part in arg)
        resolved = self.resolve(expression)
        if isinstance(resolved, bool):
            return resolved
        raise TemplateError(f"not a condition: {expression!r}")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [item for item in map(self.resolve, value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key.startswith("Fn::"):
                return self._function(key, arg)
        resolved = {key: self.resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not NO_VALUE}

    def _function(self, key: str, arg: Any) -> Any:
        handlers: dict[str, Callable[[Any], Any]] = {
            "Fn::GetAtt": self._fn_get_att,
            "Fn::Sub": self._fn_sub,
            "Fn::Join": lambda a: as_text(a[0]).join(as_text(p) for p in self.resolve(a[1])),
            "Fn::If": lambda a: self.resolve(a[1] if self.condition(a[0]) else a[2]),
            "Fn::Select": lambda a: self.resolve(a[1])[int(self.resolve(a[0]))],
            "Fn::Split": lambda a: as_text(self.resolve(a[1])).split(as_text(a[0])),
            "Fn::Base64": lambda a: base64.b64encode(as_text(self.resolve(a)).encode()).decode(),
            "Fn::FindInMap": self._fn_find_in_map,
            "Fn::GetAZs": lambda a: [f"{self.names.region}{zone}" for zone in "abc"],
            "Fn::Equals": lambda a: self._truth({key: a}),
            "Fn::Not": lambda a: self._truth({key: a}),
            "Fn::And": lambda a: self._truth({key: a}),
            "Fn::Or": lambda a: self._truth({key: a}),
        }
        if key not in handlers:
            raise TemplateError(f"{key} is not supported locally")
        return handlers[key](arg)

    def _fn_get_att(self, arg: Any) -> Any:
        if isinstance(arg, str):
            logical_id, attribute = arg.split(".", 1)
        else:
            logical_id, attribute = arg[0], self.resolve(arg[1])
        return self.get_att(logical_id, attribute)

    def _fn_find_in_map(self, arg: Any) -> Any:
        name, top, second = (as_text(self.resolve(part)) for part in arg[:3])
        try:
            return self.cfn["Mappings"][name][top][second]
        except KeyError:
            raise TemplateError(f"Fn::FindInMap: no {name}/{top}/{second}") from None

    def _fn_sub(self, arg: Any) -> str:
        if isinstance(arg, str):
            text, variables = arg, {}
        else:
            text, variables = arg[0], self.resolve(arg[1] if len(arg) > 1 else {})

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return as_text(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return as_text(self.get_att(logical_id, attribute))
            return as_text(self.ref(name))

        return _SUB_VARIABLE.sub(substitute, text)


def _comparable(value: Any) -> Any:
    return as_text(value) if isinstance(value, bool | int | float) else value
