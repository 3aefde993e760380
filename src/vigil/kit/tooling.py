"""What every tool is made of: strict input models, output models, and the declaration a
capability lists its tools with (its ``TOOLS``), typed by the context its functions read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

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
        description=(
            "Retry key for this mutation, 1-128 printable characters. Reuse it, with the same "
            "arguments, to retry an outcome you did not see; a new intent needs a new key."
        ),
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
        description="A label for the calling instance, e.g. worker-3; up to 64 characters, "
        "kept as written.",
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

    def admits(self, kind: Kind, role: Role) -> bool:
        """Whether a principal of ``kind`` and ``role`` may call it: what a call checks and
        what a listing shows."""
        return role in self.roles or kind in self.kinds

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
        return strict_schema(self.input_model.model_json_schema())

    def output_schema(self) -> dict[str, Any]:
        return self.output_model.model_json_schema(mode="serialization")


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
