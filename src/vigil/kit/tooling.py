"""What every tool is made of: strict input models, output models, and the declaration a
capability lists its tools with (its ``TOOLS``), typed by the context its functions read."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema

from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.principals import Kind, Role
from vigil.kit.text import TEXT

# What a tool's functions are given for one call: each capability declares, as a protocol, the
# part of the deployment its tools read (its store ports, the clock, the caller...); the app's
# context provides every one of them.
C = TypeVar("C", contravariant=True)

ANYONE: frozenset[Role] = frozenset({"operator", "worker"})
OPERATORS: frozenset[Role] = frozenset({"operator"})
# People oversee the agents of their namespace (they watch and steer them) whatever their role.
PEOPLE: frozenset[Kind] = frozenset({"person"})

IdempotencyKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=PRINTABLE,
        description="Retry key; same arguments only.",
    ),
    normalised(128),
]

# An opaque page cursor, as every listing hands out in next_cursor.
Cursor = Annotated[str, Field(min_length=1, max_length=512)]

Scope = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=PRINTABLE,
        description="A unit of work, the scope of a dead-man switch, e.g. permit-review-2026-08.",
    ),
    normalised(200),
]

# Shown to people (who died, who holds a lease), never compared: free text, as the seed has it.
AgentLabel = Annotated[
    str,
    Field(
        max_length=64,
        description="A label for the calling instance, e.g. worker-3.",
    ),
    TEXT,
]


class StrictInput(BaseModel):
    """Inputs reject unknown fields and coercions: a wrong type is an error, not a guess."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)
    # The field that carries the retry key; a schema from elsewhere may spell it otherwise.
    idempotency_field: ClassVar[str] = "idempotency_key"


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


@dataclass(frozen=True)
class Replay(Generic[C]):
    """How a tool whose result repeats what the store keeps for good (an instruction's body, a
    request's text) keeps its idempotency completion small: ``kept`` is the result without
    those parts, which is what the completion stores, and ``rebuilt`` puts them back from the
    stored records when the key is replayed, so that a replay returns the first result exactly.
    Only parts that never change once stored may be left out: the rest stays as it was."""

    kept: Callable[[dict[str, Any]], dict[str, Any]]
    rebuilt: Callable[[C, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Tool(Generic[C]):
    name: str
    title: str
    description: str
    input_model: type[StrictInput]
    output_model: type[BaseModel]
    run: Callable[[C, Any], BaseModel]
    roles: frozenset[Role] = ANYONE
    # Principals of these kinds may call it too, whatever their role.
    kinds: frozenset[Kind] = frozenset()
    read_only: bool = False
    destructive: bool = False
    # What a replay still owes before it returns the stored result: a call whose result is
    # committed before the rest of its work (a message's deliveries) has a retry finish it.
    resume: Callable[[C, dict[str, Any]], None] | None = None
    # What its completion leaves out and how a replay puts it back; None keeps the whole result.
    replay: Replay[C] | None = None
    # The output schema a seed publishes for it, which tools/list then carries as published
    # (its members' formats, what is required, nothing else); None: the outline of its own.
    seed_output_schema: dict[str, Any] | None = None

    def admits(self, kind: Kind, role: Role) -> bool:
        """Whether a principal of ``kind`` and ``role`` may call it: what a call checks and
        what a listing shows."""
        return role in self.roles or kind in self.kinds

    @property
    def callers(self) -> str:
        """Who may call it, as a sentence for the REST mirror's document, which lists every
        tool; an MCP listing says it by leaving the tool out for anyone else."""
        if self.roles == ANYONE:
            return ""
        if self.roles != OPERATORS or not self.kinds <= PEOPLE:
            raise ValueError(f"{self.name}: no sentence says who may call it")
        return "People and operators only." if self.kinds else "Operators only."

    @property
    def idempotency_field(self) -> str:
        return self.input_model.idempotency_field

    @property
    def takes_idempotency_key(self) -> bool:
        return self.idempotency_field in self.input_model.model_fields

    @property
    def takes_agent_key(self) -> bool:
        return "agent_key" in self.input_model.model_fields

    def input_schema(self) -> dict[str, Any]:
        return published(
            strict_schema(self.input_model.model_json_schema(schema_generator=_Untitled))
        )

    def output_schema(self) -> dict[str, Any]:
        """The result's whole shape, as the REST mirror's OpenAPI document publishes it."""
        return published(
            self.output_model.model_json_schema(mode="serialization", schema_generator=_Untitled)
        )

    def listed_output_schema(self) -> dict[str, Any]:
        """The output schema tools/list carries: the seed's, for a tool a seed publishes one
        for; ``outline(self.output_schema())`` for the rest."""
        if self.seed_output_schema is not None:
            return self.seed_output_schema
        return outline(self.output_schema())


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Every object in an input schema closed to unknown properties, nested ones included."""

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    return schema


class _Untitled(GenerateJsonSchema):
    """No title derived from a field's name: the property's name already says it, and a model
    reads every byte of a published schema on every turn."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


# Keywords whose value maps names to subschemas, and those whose value is one subschema or a
# list of them: a walk over a schema's keywords, never over its properties' names.
_NAMED_SUBSCHEMAS = ("properties", "patternProperties", "$defs")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf", "prefixItems")
# Keywords that constrain a value whatever its type: a schema with one of them cannot merge
# with its null alternative into one list of types.
_ANY_TYPE_KEYWORDS = frozenset({"enum", "const", "$ref", "anyOf", "oneOf", "allOf", "not"})


def published(schema: dict[str, Any]) -> dict[str, Any]:
    """A generated schema as tools/list shows it, validating exactly the same documents in
    fewer bytes: a titled subschema (a named shape, such as one level of a JSON value) is
    written once under ``$defs`` and referenced wherever it recurs; titles are dropped (a
    model's is its ``$defs`` key); ``anyOf: [X, null]`` becomes ``X`` with ``null`` in its
    types where X's keywords only constrain its own type; a default of null is left out (a
    member not required may be left out, and null is what leaving it out means), and so is a
    minLength of 1 beside a pattern that no empty string matches."""
    shapes: dict[str, Any] = {}

    def shape(node: dict[str, Any]) -> dict[str, Any]:
        name = node.get("title")
        if not isinstance(name, str):
            return node
        if shapes.setdefault(name, node) != node:
            raise ValueError(f"two different shapes are both named {name}")
        return {"$ref": f"#/$defs/{name}"}

    def walk(node: Any, hoist: bool) -> Any:
        if isinstance(node, list):
            return [walk(each, hoist=True) for each in node]
        if not isinstance(node, dict):
            return node
        rebuilt: dict[str, Any] = {}
        for key, value in node.items():
            if key in _NAMED_SUBSCHEMAS:
                rebuilt[key] = {
                    name: walk(each, hoist=key != "$defs") for name, each in value.items()
                }
            elif key in _SUBSCHEMAS:
                rebuilt[key] = walk(value, hoist=True)
            elif key == "default" and value is None:
                continue
            else:
                rebuilt[key] = value
        rebuilt = _nullable(_without_implied_length(rebuilt))
        if hoist:
            return shape(rebuilt)
        rebuilt.pop("title", None)
        return rebuilt

    result: dict[str, Any] = walk(schema, hoist=False)
    for name, node in list(shapes.items()):
        shapes[name] = {key: value for key, value in node.items() if key != "title"}
    if shapes:
        result["$defs"] = {**result.get("$defs", {}), **shapes}
    return result


_JSON_TYPES: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    type(None): "null",
    dict: "object",
    list: "array",
}
_TYPE_ORDER = ("object", "array", "string", "integer", "number", "boolean", "null")


def outline(schema: dict[str, Any]) -> dict[str, Any]:
    """An object's schema reduced to its members and their JSON types: what tools/list carries
    as a tool's output schema. Every document the whole schema accepts, the outline accepts; a
    member's own shape (a switch's fields, a page's items) is left to the whole schema, which
    /openapi.json publishes, because an agent's host reads every listed byte on every turn and
    a code generator needs the names and types of what it gets back, not every bound."""
    definitions = schema.get("$defs", {})

    def resolved(node: dict[str, Any]) -> dict[str, Any]:
        while isinstance(node.get("$ref"), str):
            node = definitions[node["$ref"].removeprefix("#/$defs/")]
        return node

    def types(node: dict[str, Any]) -> set[str] | None:
        """The JSON types ``node`` admits; None where it admits any."""
        node = resolved(node)
        declared = node.get("type")
        if isinstance(declared, str):
            return {declared}
        if isinstance(declared, list):
            return set(declared)
        if "const" in node:
            return {_JSON_TYPES[type(node["const"])]}
        if isinstance(node.get("enum"), list):
            return {_JSON_TYPES[type(value)] for value in node["enum"]}
        alternatives = node.get("anyOf", node.get("oneOf"))
        if isinstance(alternatives, list):
            found: set[str] = set()
            for alternative in alternatives:
                admitted = types(alternative)
                if admitted is None:
                    return None
                found |= admitted
            return found
        return None

    def member(node: dict[str, Any]) -> dict[str, Any]:
        admitted = types(node)
        if admitted is None:
            return {}
        if "integer" in admitted and "number" in admitted:
            admitted.discard("integer")
        ordered = [name for name in _TYPE_ORDER if name in admitted]
        return {"type": ordered[0] if len(ordered) == 1 else ordered}

    whole = resolved(schema)
    members = {name: member(node) for name, node in whole.get("properties", {}).items()}
    return {"type": "object", "properties": members}


def _without_implied_length(node: dict[str, Any]) -> dict[str, Any]:
    pattern = node.get("pattern")
    if node.get("minLength") != 1 or not isinstance(pattern, str) or re.search(pattern, ""):
        return node
    return {key: value for key, value in node.items() if key != "minLength"}


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    alternatives = node.get("anyOf")
    if not (isinstance(alternatives, list) and len(alternatives) == 2):
        return node
    kept, null = alternatives
    if null != {"type": "null"} or not isinstance(kept.get("type"), str):
        return node
    if _ANY_TYPE_KEYWORDS & kept.keys():
        return node
    merged = {key: value for key, value in node.items() if key != "anyOf"}
    return {**kept, **merged, "type": [kept["type"], "null"]}
