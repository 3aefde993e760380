"""Invalid arguments derived from valid ones, one defect at a time, from the schema alone.

Each defect breaks the published schema (a wrong JSON type, a missing required property, an
unknown one, a bound crossed by one, NaN or Infinity for a number, a string too long or
malformed, a bad enum value, an array too long) except the ``semantic`` ones: strings that the
schema accepts but that no server could have issued, such as a cursor of garbage base64; and
the ``unstated`` ones: a bound the server checks with the schema but does not publish, which is
only the length of a free-form object's keys (``KEY_LENGTH``, kit/bounds.py). Every
string invented here contains ``MARKER``, so a response that echoes one is caught (the names of
unknown properties, which a refusal may name, are ``MARKER_...``).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.harness.schema import (
    JSON_TYPES,
    Path,
    accepts_key,
    branches,
    matches,
    properties,
    required,
    simplest,
    types_of,
    undeclared,
    valid,
)
from vigil.kit.bounds import KEY_LENGTH

MARKER = "zz-harness"
HUGE = 1 << 20  # a 1 MiB string

_SAMPLES: dict[str, Any] = {
    "null": None,
    "boolean": True,
    "integer": 7,
    "number": 1.5,
    "string": f"{MARKER}-wrong-type",
    "array": [MARKER],
    "object": {f"{MARKER}_key": 1},
}
_NOT_OBJECTS: tuple[tuple[str, Any], ...] = (
    ("an array", []),
    ("a string", MARKER),
    ("a number", 7),
    ("null", None),
    ("true", True),
)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Strings a cursor's schema accepts but no server issued: not base64, base64 of bytes that are
# not UTF-8, and base64 of JSON that is not the shape of any cursor.
GARBAGE_CURSORS = (
    "!!!!",
    f"{MARKER}%%%",
    _b64(b"\xff\xfe\xfd\xfc"),
    _b64(b"[]"),
    _b64(json.dumps(MARKER).encode()),
    _b64(json.dumps({f"{MARKER}_key": [1, 2]}).encode()),
)


@dataclass(frozen=True)
class Mutation:
    label: str
    arguments: Any
    semantic: bool = False
    # A bound checked on input like the schema's, that the published schema does not state.
    unstated: bool = False


def mutations(schema: dict[str, Any], arguments: dict[str, Any]) -> list[Mutation]:
    """Every single-defect variant of ``arguments`` (which must be valid for ``schema``)."""
    found = [Mutation(f"arguments are {name}", value) for name, value in _NOT_OBJECTS]
    found.append(Mutation("arguments inside an array", [arguments]))
    found.extend(_object_defects(schema, arguments, ()))
    unique: dict[str, Mutation] = {}
    for mutation in found:
        unique.setdefault(mutation.label, mutation)
    return list(unique.values())


# -- paths --------------------------------------------------------------------------------
def _name(path: Path) -> str:
    return ".".join(str(part) for part in path) or "(arguments)"


def _get(root: Any, path: Path) -> Any:
    node = root
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _put(root: Any, path: Path, value: Any) -> Any:
    changed = copy.deepcopy(root)
    node = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


def _drop(root: Any, path: Path) -> Any:
    changed = copy.deepcopy(root)
    node = changed
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return changed


# -- defects ------------------------------------------------------------------------------
def _object_defects(schema: dict[str, Any], root: Any, path: Path) -> Iterator[Mutation]:
    value = _get(root, path)
    assert isinstance(value, dict)
    name = _name(path)
    for key in required(schema):
        if key in value:
            yield Mutation(f"{name}: required {key} missing", _drop(root, (*path, key)))
    for length in (0, 2001, 10_001):
        unknown = f"{MARKER}_unknown".ljust(length, "x")
        if not accepts_key(schema, unknown):
            extra = _put(root, (*path, unknown), f"{MARKER}-extra-value")
            yield Mutation(f"{name}: unknown property ({len(unknown)} characters)", extra)
            break
    yield from _size_defects(schema, root, path, value)
    for key, sub in properties(schema).items():
        yield from _value_defects(sub, root, (*path, key))
    free = undeclared(schema)
    if free is None:
        return
    pattern, sub = free
    key = next((k for k in value if k not in properties(schema)), "k")
    if pattern is None or matches(pattern, key):
        yield from _value_defects(sub, root, (*path, key))
    if pattern is None and len(value) < schema.get("maxProperties", len(value) + 1):
        # Any name is let in, and the schema leaves its length to the server (every free-form
        # object the catalog takes is bounded by kit/bounds.py).
        long = f"{MARKER}_key".ljust(KEY_LENGTH + 1, "x")
        yield Mutation(
            f"{name}: a key of {len(long)} characters",
            _put(root, (*path, long), simplest(sub)),
            unstated=True,
        )


def _size_defects(
    schema: dict[str, Any], root: Any, path: Path, value: dict[str, Any]
) -> Iterator[Mutation]:
    most = schema.get("maxProperties")
    if most is None:
        return
    free = undeclared(schema)
    filler = simplest(free[1]) if free else None
    crowded = dict(value)
    index = 0
    while len(crowded) <= most and index < most + 100:
        key = f"k{index}"
        index += 1
        if key not in crowded and key not in properties(schema) and accepts_key(schema, key):
            crowded[key] = filler
    if len(crowded) > most:
        yield Mutation(
            f"{_name(path)}: {len(crowded)} properties (maxProperties {most})",
            _put(root, path, crowded) if path else crowded,
        )


def _value_defects(schema: dict[str, Any], root: Any, path: Path) -> Iterator[Mutation]:
    name = _name(path)
    allowed = types_of(schema)
    for kind in JSON_TYPES:
        if kind not in allowed:
            yield Mutation(
                f"{name}: {kind} instead of {sorted(allowed)}", _put(root, path, _SAMPLES[kind])
            )
    current = _get(root, path)
    for branch in branches(schema):
        kinds = types_of(branch)
        if "enum" in branch:
            bad = f"{MARKER}-not-a-choice" if "string" in kinds else 10**9 + 7
            yield Mutation(f"{name}: not one of the enum", _put(root, path, bad))
            continue
        if "string" in kinds:
            base = current if isinstance(current, str) and valid(branch, current) else None
            yield from _string_defects(branch, root, path, base)
        if kinds & {"integer", "number"}:
            yield from _number_defects(branch, root, path)
        if kinds == {"array"}:
            yield from _array_defects(branch, root, path, current)
        if kinds == {"object"}:
            base = current if isinstance(current, dict) and valid(branch, current) else None
            nested = root if base is not None else _put(root, path, simplest(branch))
            yield from _object_defects(branch, nested, path)


def _string_defects(
    schema: dict[str, Any], root: Any, path: Path, base: str | None
) -> Iterator[Mutation]:
    name = _name(path)
    text = base if base is not None else simplest(schema)
    candidates: list[tuple[str, str]] = []
    if "maxLength" in schema:
        longest = schema["maxLength"]
        candidates.append(
            (f"longer than maxLength {longest}", (text + "a" * (longest + 1))[: longest + 1])
        )
    if schema.get("maxLength", HUGE) < HUGE or not valid(schema, MARKER + "a" * HUGE):
        candidates.append(("a 1 MiB string", MARKER + "a" * HUGE))
    if schema.get("minLength", 0) > 0:
        candidates.append(
            (f"shorter than minLength {schema['minLength']}", text[: schema["minLength"] - 1])
        )
    if "pattern" in schema:
        prefixed = re.sub(r"^[A-Za-z]+(?=[_:])", "zzz", text)
        candidates += [
            ("a wrong prefix", prefixed),
            ("a trailing newline", text + "\n"),
            ("a NUL character", text + "\x00"),
            ("a leading space", " " + text),
            ("upper case", text.upper()),
            ("not matching the pattern", f"{MARKER}!"),
        ]
    if "format" in schema:
        candidates.append((f"not a {schema['format']}", f"{MARKER}-not-a-{schema['format']}"))
    for label, mutated in candidates:
        if len(mutated) > schema.get("maxLength", HUGE) or (
            mutated != text and not valid(schema, mutated)
        ):
            yield Mutation(f"{name}: {label}", _put(root, path, mutated))
    if "cursor" in str(path[-1]).lower():
        for garbage in GARBAGE_CURSORS:
            if valid(schema, garbage):
                yield Mutation(
                    f"{name}: a cursor no server issued ({garbage[:12]})",
                    _put(root, path, garbage),
                    semantic=True,
                )


def _number_defects(schema: dict[str, Any], root: Any, path: Path) -> Iterator[Mutation]:
    name = _name(path)
    bounds = (
        ("minimum", -1, "below minimum"),
        ("exclusiveMinimum", 0, "at exclusiveMinimum"),
        ("maximum", 1, "above maximum"),
        ("exclusiveMaximum", 0, "at exclusiveMaximum"),
    )
    # Not JSON, but Python's reader takes them, and json.dumps writes them.
    for label, odd in (("NaN", float("nan")), ("Infinity", float("inf"))):
        yield Mutation(f"{name}: {label}", _put(root, path, odd))
    for keyword, step, label in bounds:
        if keyword in schema:
            yield Mutation(
                f"{name}: {label} {schema[keyword]}", _put(root, path, schema[keyword] + step)
            )


def _array_defects(
    schema: dict[str, Any], root: Any, path: Path, current: Any
) -> Iterator[Mutation]:
    name = _name(path)
    items = schema.get("items", {})
    base = current if isinstance(current, list) and valid(schema, current) and current else None
    item = base[0] if base else simplest(items)
    choices = [v for b in branches(items) for v in b.get("enum", [])] or [item]
    if "maxItems" in schema:
        most = schema["maxItems"]
        crowded = [choices[i % len(choices)] for i in range(most + 1)]
        yield Mutation(f"{name}: {most + 1} items (maxItems {most})", _put(root, path, crowded))
    if schema.get("minItems", 0) > 0:
        yield Mutation(
            f"{name}: too few items", _put(root, path, [item] * (schema["minItems"] - 1))
        )
    if schema.get("uniqueItems"):
        yield Mutation(f"{name}: a repeated item", _put(root, path, [item, item]))
    yield from _value_defects(items, _put(root, path, [item]), (*path, 0))
