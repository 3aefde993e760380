"""Input validated against a strict model, and a refusal that names each problem by where the
caller wrote it: what every tool's arguments go through, and each beat of a batch apart."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from vigil.errors import invalid
from vigil.kit.bounds import InexactNumber

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], arguments: dict[str, Any], refusal: str) -> M:
    """``arguments`` as ``model``; ``invalid(refusal)`` with the problems, bounded, if not."""
    try:
        return model.model_validate(arguments)
    except ValidationError as error:
        errors = error.errors(include_input=False, include_url=False)
        given = [e.get("input") for e in error.errors(include_url=False)]
        for e, value in zip(errors, given, strict=True):
            if isinstance(value, InexactNumber):
                e["msg"] = value.problem  # not "a valid integer": the number as written
        paths = [argument_path(arguments, e["loc"]) for e in errors]
        # An optional field is a union with None; that its value is not None says nothing
        # when the real problem with the value is reported too.
        found = [
            (path, e["msg"])
            for path, e in zip(paths, errors, strict=True)
            if not (e["type"] == "none_required" and _reported_otherwise(path, paths))
        ]
        # Bounded, because unknown property names come from the caller: a refusal must stay
        # small however many (or however long) they are.
        problems = [
            {"field": _shorten(path), "problem": message} for path, message in found[:_MAX_PROBLEMS]
        ]
        details: dict[str, Any] = {"problems": problems}
        if len(found) > _MAX_PROBLEMS:
            details["more_problems"] = len(found) - _MAX_PROBLEMS
        raise invalid(refusal, **details) from None


def _reported_otherwise(path: str, paths: list[str]) -> bool:
    return sum(p == path or p.startswith(path + ".") for p in paths) > 1


def argument_path(arguments: dict[str, Any], loc: tuple[int | str, ...]) -> str:
    """The path of the argument a validation problem is about, as the caller wrote it.

    The validator's location also names the schema's inner parts (the member of a union it
    tried, a constrained type), which mean nothing to a caller: only the parts that step into
    the arguments themselves, an object's key or an array's index, are kept.
    """
    parts: list[str] = []
    node: Any = arguments
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str) and (part in node or last):
            node = node.get(part)  # a key: present, or missing and the problem
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(node, dict | list):
            continue  # a schema part between a container and what it holds
        else:
            break  # inside a value: whatever follows names the schema, not the argument
        parts.append(str(part))
    return ".".join(parts) or "(arguments)"


_MAX_PROBLEMS = 20
_MAX_FIELD = 100


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_FIELD else text[: _MAX_FIELD - 1] + "…"
