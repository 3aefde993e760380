"""Every published schema is one a client can read whole: valid JSON Schema, each reference
resolving within the same schema and none recursive (hosts refuse a tool list with either), and
no title a property's name already gives."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from vigil import catalog
from vigil.context import Context
from vigil.kit.tooling import Tool, outline, published

_NAMED = ("properties", "patternProperties", "$defs")


def _references(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_references(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_references(value) for value in node))
    return set()


def _keywords(node: Any, inside_names: bool = False) -> set[str]:
    """The keywords used anywhere in a schema, not the names of its properties."""
    if isinstance(node, list):
        return set().union(*(_keywords(value) for value in node))
    if not isinstance(node, dict):
        return set()
    if inside_names:
        return set().union(*(_keywords(value) for value in node.values()))
    return set(node).union(*(_keywords(value, key in _NAMED) for key, value in node.items()))


def _recurs(definitions: dict[str, Any], name: str, seen: tuple[str, ...]) -> str | None:
    """The path by which ``name`` reaches itself again, if it does."""
    if name in seen:
        return " -> ".join((*seen, name))
    for reference in _references(definitions[name]):
        found = _recurs(definitions, reference.removeprefix("#/$defs/"), (*seen, name))
        if found:
            return found
    return None


def _schemas(tool: Tool[Context]) -> list[dict[str, Any]]:
    return [tool.input_schema(), tool.output_schema()]


@pytest.mark.parametrize("tool", catalog.tools(), ids=lambda tool: tool.name)
def test_every_reference_resolves_within_its_schema_and_none_recurs(tool: Tool[Context]) -> None:
    for schema in _schemas(tool):
        Draft202012Validator.check_schema(schema)
        definitions = schema.get("$defs", {})
        for reference in _references(schema):
            assert reference.startswith("#/$defs/")
            assert reference.removeprefix("#/$defs/") in definitions
        assert [_recurs(definitions, name, ()) for name in definitions] == [None] * len(definitions)


@pytest.mark.parametrize("tool", catalog.tools(), ids=lambda tool: tool.name)
def test_no_schema_carries_a_title(tool: Tool[Context]) -> None:
    for schema in _schemas(tool):
        assert "title" not in _keywords(schema)


def test_what_only_costs_bytes_is_left_out_and_validation_does_not_change() -> None:
    name = {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"}
    optional = {"type": "string", "minLength": 1, "pattern": "^[a-z]*$"}
    schema = {
        "type": "object",
        "properties": {
            "name": name,
            "optional": optional,
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "limit": {"type": "integer", "default": 50},
        },
    }
    shown = published(schema)
    assert shown["properties"] == {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "optional": optional,
        "note": {"type": ["string", "null"]},
        "limit": {"type": "integer", "default": 50},
    }
    for document in ({"name": ""}, {"optional": ""}, {"name": "a", "note": None}, {"limit": 1}):
        before = Draft202012Validator(schema).is_valid(document)
        assert Draft202012Validator(shown).is_valid(document) is before, document


def test_an_outline_names_each_member_and_its_types_and_accepts_what_the_whole_accepts() -> None:
    schema = {
        "$defs": {
            "Switch": {
                "type": "object",
                "properties": {"scope": {"type": "string"}},
                "required": ["scope"],
                "additionalProperties": False,
            }
        },
        "type": "object",
        "properties": {
            "switch": {"$ref": "#/$defs/Switch"},
            "death": {"anyOf": [{"$ref": "#/$defs/Switch"}, {"type": "null"}]},
            "state": {"enum": ["armed", "fired"]},
            "kind": {"const": "beat"},
            "count": {"type": ["integer", "null"]},
            "ratio": {"anyOf": [{"type": "integer"}, {"type": "number"}]},
            "payload": {},
        },
        "required": ["switch", "state"],
    }
    shown = outline(schema)
    assert shown == {
        "type": "object",
        "properties": {
            "switch": {"type": "object"},
            "death": {"type": ["object", "null"]},
            "state": {"type": "string"},
            "kind": {"type": "string"},
            "count": {"type": ["integer", "null"]},
            "ratio": {"type": "number"},
            "payload": {},
        },
    }
    accepted = {
        "switch": {"scope": "a"},
        "death": None,
        "state": "fired",
        "kind": "beat",
        "count": 3,
        "ratio": 0.5,
        "payload": [1, "x"],
    }
    assert Draft202012Validator(schema).is_valid(accepted)
    assert Draft202012Validator(shown).is_valid(accepted)
    assert not Draft202012Validator(shown).is_valid({**accepted, "switch": "a"})
    assert not Draft202012Validator(shown).is_valid({**accepted, "count": "3"})


@pytest.mark.parametrize("tool", catalog.tools(), ids=lambda tool: tool.name)
def test_every_listed_output_schema_is_valid_and_self_contained(tool: Tool[Context]) -> None:
    listed = tool.listed_output_schema()
    Draft202012Validator.check_schema(listed)
    assert _references(listed) == set()
    assert listed["type"] == "object"
