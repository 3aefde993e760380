"""A tool whose seed publishes its output schema is listed with that schema, whole: its
members' formats, what is required and that nothing else comes (seed 003's
create_run_heartbeat); and what the tool returns meets it. The outline is for the rest."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft7Validator, FormatChecker

from tests.support import Tenant
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router

# Seed 003, "Full schemas", output-schema.json, but its "$schema" and top-level description.
SEED_003_OUTPUT = {
    "type": "object",
    "properties": {
        "run_id": {
            "type": "string",
            "format": "uuid",
            "description": "Run identifier associated with this result.",
        },
        "expires_at": {
            "type": "string",
            "format": "date-time",
            "description": "The expires at returned by the tool.",
        },
    },
    "required": ["run_id", "expires_at"],
    "additionalProperties": False,
}


def mcp(router: Router, secret: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    headers = {"host": "vigil.example", "authorization": f"Bearer {secret}"}
    answer = router.handle(HttpRequest("POST", "/mcp", headers, body.encode()))
    result: dict[str, Any] = json.loads(answer.body)["result"]
    return result


def test_create_run_heartbeat_is_listed_with_the_seeds_output_schema(tenant: Tenant) -> None:
    router = Router(tenant.app, frozenset())
    _, secret = tenant.register(name="runner")
    tools = mcp(router, secret, "tools/list", {})["tools"]
    (listed,) = [tool for tool in tools if tool["name"] == "create_run_heartbeat"]
    assert listed["outputSchema"] == SEED_003_OUTPUT
    # The others keep the outline: members and their types.
    (other,) = [tool for tool in tools if tool["name"] == "get_run"]
    assert "required" not in other["outputSchema"]


def test_what_create_run_heartbeat_returns_meets_the_seeds_schema(tenant: Tenant) -> None:
    router = Router(tenant.app, frozenset())
    _, secret = tenant.register(name="runner")
    run_id = tenant.app.call("start_run", {}, secret, via="rest")["run"]["run_id"]
    result = mcp(
        router,
        secret,
        "tools/call",
        {"name": "create_run_heartbeat", "arguments": {"run_id": run_id}},
    )
    assert result["isError"] is False, result
    validator = Draft7Validator(SEED_003_OUTPUT, format_checker=FormatChecker())
    assert list(validator.iter_errors(result["structuredContent"])) == []
