"""The tool catalog: every tool defined once (name, description, models, who may call it).

MCP ``tools/list``, the REST routes and the OpenAPI document are all generated from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from vigil.domain.identity import Role
from vigil.tools import identity
from vigil.tools.common import Context

ANYONE: frozenset[Role] = frozenset({"operator", "worker"})
OPERATORS: frozenset[Role] = frozenset({"operator"})


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    run: Callable[[Context, Any], BaseModel]
    roles: frozenset[Role] = ANYONE
    read_only: bool = False
    destructive: bool = False

    @property
    def takes_idempotency_key(self) -> bool:
        return "idempotency_key" in self.input_model.model_fields

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


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="register",
        title="Register a principal",
        description=(
            "Create a person, agent or service in the caller's namespace and issue its secret. "
            "The secret appears in this response only; Vigil keeps just its hash. Operators only. "
            "An agent's mailbox address is agent:<id>."
        ),
        input_model=identity.RegisterInput,
        output_model=identity.SecretIssued,
        run=identity.register,
        roles=OPERATORS,
    ),
    Tool(
        name="rotate_secret",
        title="Rotate a secret",
        description=(
            "Replace a principal's secret with a new one and invalidate the old one at once. "
            "Anyone may rotate their own; operators may rotate any in their namespace."
        ),
        input_model=identity.RotateSecretInput,
        output_model=identity.SecretIssued,
        run=identity.rotate_secret,
    ),
    Tool(
        name="revoke_principal",
        title="Revoke a principal",
        description=(
            "Revoke a principal so its secret stops working. Anyone may revoke themselves; "
            "operators may revoke any principal in their namespace."
        ),
        input_model=identity.RevokeInput,
        output_model=identity.PrincipalResult,
        run=identity.revoke_principal,
        destructive=True,
    ),
    Tool(
        name="whoami",
        title="Who am I",
        description="Describe the principal whose credential made this call: id, kind, role.",
        input_model=identity.NoInput,
        output_model=identity.PrincipalResult,
        run=identity.whoami,
        read_only=True,
    ),
    Tool(
        name="list_agents",
        title="List agents",
        description="List the agents of the caller's namespace with their mailbox addresses.",
        input_model=identity.NoInput,
        output_model=identity.AgentList,
        run=identity.list_agents,
        read_only=True,
    ),
    Tool(
        name="list_directory",
        title="Search the directory",
        description=(
            "Page through the people, agents or services of the caller's namespace, one kind at a "
            "time, optionally filtered by a search text."
        ),
        input_model=identity.ListDirectoryInput,
        output_model=identity.DirectoryPage,
        run=identity.list_directory,
        read_only=True,
    ),
)

BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
