"""The MCP endpoint at the JSON-RPC level, as raw bytes, on the in-memory store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import MODERN_META, Tenant, modern_headers
from vigil import catalog
from vigil.kit.http import HttpRequest
from vigil.transports.mcp import McpEndpoint
from vigil.transports.router import Router

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def endpoint(tenant: Tenant) -> McpEndpoint:
    return McpEndpoint(tenant.app)


def post(
    endpoint: McpEndpoint | Router, message: Any, secret: str | None = None, **headers: str
) -> tuple[int, Any]:
    all_headers = {**HEADERS, **{k.replace("_", "-"): v for k, v in headers.items()}}
    if secret:
        all_headers["authorization"] = f"Bearer {secret}"
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    response = endpoint.handle(HttpRequest("POST", "/mcp", all_headers, body))
    return response.status, json.loads(response.body) if response.body else None


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def error_code(reply: dict[str, Any]) -> str:
    result = reply["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    return str(json.loads(result["content"][0]["text"])["error"]["code"])


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": arguments})


def test_initialize_pins_2025_06_18(endpoint: McpEndpoint) -> None:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw"}}
    status, body = post(endpoint, rpc("initialize", params))
    assert status == 200
    assert body["result"]["protocolVersion"] == "2025-06-18"
    assert body["result"]["capabilities"]["tools"] == {"listChanged": False}
    assert body["result"]["serverInfo"]["name"] == "vigil"


def test_initialize_counter_offers_a_supported_version(endpoint: McpEndpoint) -> None:
    _status, body = post(endpoint, rpc("initialize", {"protocolVersion": "1999-01-01"}))
    assert body["result"]["protocolVersion"] == "2025-11-25"


def test_notifications_are_accepted_without_a_body(endpoint: McpEndpoint) -> None:
    status, body = post(endpoint, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, body) == (202, None)


def test_only_post_is_served(endpoint: McpEndpoint) -> None:
    for method in ("GET", "DELETE", "PUT"):
        response = endpoint.handle(HttpRequest(method, "/mcp", HEADERS, b""))
        assert response.status == 405
        assert response.headers["allow"] == "POST"


def test_foreign_origins_are_refused(tenant: Tenant) -> None:
    # The one Origin check sits in front of every route, /mcp included.
    router = Router(tenant.app, frozenset({"https://console.example"}))
    status, _ = post(router, rpc("ping"), origin="https://evil.example")
    assert status == 403
    status, _ = post(router, rpc("ping"), origin="https://console.example")
    assert status == 200


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"\xff\xfe", -32700),
        (json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]).encode(), -32600),
        (json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}).encode(), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "method": 5}).encode(), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": [1], "method": "ping"}).encode(), -32600),
    ],
)
def test_malformed_messages_are_protocol_errors(
    endpoint: McpEndpoint, body: bytes, code: int
) -> None:
    status, reply = post(endpoint, body)
    assert status == 400
    assert reply["error"]["code"] == code


def test_unknown_methods_and_tools_are_protocol_errors(
    endpoint: McpEndpoint, tenant: Tenant
) -> None:
    _, reply = post(endpoint, rpc("resources/list"))
    assert reply["error"]["code"] == -32601
    _, reply = post(endpoint, call("no_such_tool", {}), tenant.operator_secret)
    assert reply["error"]["code"] == -32602


def test_unsupported_protocol_header_names_the_supported_ones(endpoint: McpEndpoint) -> None:
    status, reply = post(endpoint, rpc("ping"), mcp_protocol_version="2030-01-01")
    assert status == 400
    assert reply["error"]["code"] == -32022
    assert "2025-06-18" in reply["error"]["data"]["supported"]


def test_every_tool_lists_a_closed_input_schema_and_an_output_schema(
    endpoint: McpEndpoint, tenant: Tenant
) -> None:
    _, reply = post(endpoint, rpc("tools/list"), tenant.operator_secret, x_mcp_toolsets="all")
    tools = reply["result"]["tools"]
    assert [t["name"] for t in tools] == list(catalog.DECLARED_IN)

    def objects(node: Any) -> list[dict[str, Any]]:
        found = []
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                found += objects(value)
        elif isinstance(node, list):
            for value in node:
                found += objects(value)
        return found

    for tool in tools:
        assert tool["inputSchema"]["type"] == "object"
        # Closed: an object declares its properties and refuses others, or is free-form (a
        # JSON document of the caller's, kit/bounds.py) with a bounded value for any name.
        assert all(
            o.get("additionalProperties") is False
            or ("properties" not in o and "$ref" in o.get("additionalProperties", {}))
            for o in objects(tool["inputSchema"])
        )
        assert tool["outputSchema"]["type"] == "object"
        assert tool["description"]


def test_annotations_say_only_what_differs_from_the_defaults(
    endpoint: McpEndpoint, tenant: Tenant
) -> None:
    """A host reads an absent hint as its default (writes, destroys, not idempotent, open
    world): each listed hint must be one that changes that reading, and a title is read from
    the annotations by every revision's hosts."""
    _, reply = post(endpoint, rpc("tools/list"), tenant.operator_secret, x_mcp_toolsets="all")
    listed = {t["name"]: t for t in reply["result"]["tools"]}
    for tool in catalog.tools():
        seen = listed[tool.name]
        assert "title" not in seen
        hints = seen["annotations"]
        assert hints["title"] == tool.title
        assert hints["openWorldHint"] is False
        assert "idempotentHint" not in hints
        if tool.read_only:
            assert hints.get("readOnlyHint") is True
            assert "destructiveHint" not in hints
        else:
            assert "readOnlyHint" not in hints
            assert hints.get("destructiveHint", True) is tool.destructive
    assert listed["list_switches"]["annotations"]["readOnlyHint"] is True
    assert listed["heartbeat"]["annotations"]["destructiveHint"] is False
    assert "destructiveHint" not in listed["delete_channel"]["annotations"]


def test_a_listed_output_schema_is_the_results_members_and_their_types(
    endpoint: McpEndpoint, tenant: Tenant
) -> None:
    _, reply = post(endpoint, rpc("tools/list"), tenant.operator_secret, x_mcp_toolsets="all")
    listed = {t["name"]: t["outputSchema"] for t in reply["result"]["tools"]}
    assert listed["list_directory"] == {
        "type": "object",
        "properties": {
            "items": {"type": "array"},
            "next_cursor": {"type": ["string", "null"]},
            "order": {"type": "string"},
        },
    }
    for tool in catalog.tools():
        fields = tool.output_model.model_fields
        names = [field.serialization_alias or field.alias or name for name, field in fields.items()]
        assert list(listed[tool.name]["properties"]) == names, tool.name


def test_tool_results_carry_structured_content_and_the_same_json_as_text(
    endpoint: McpEndpoint, tenant: Tenant
) -> None:
    _, reply = post(endpoint, call("whoami", {}), tenant.operator_secret)
    result = reply["result"]
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["structuredContent"]["principal"]["role"] == "operator"


def test_business_failures_are_typed_tool_errors(endpoint: McpEndpoint, tenant: Tenant) -> None:
    _, reply = post(
        endpoint,
        call("register", {"kind": "agent", "name": "x", "bogus": 1}),
        tenant.operator_secret,
    )
    assert error_code(reply) == "invalid_argument"
    _, reply = post(
        endpoint, call("register", {"kind": "agent", "name": 7}), tenant.operator_secret
    )
    assert error_code(reply) == "invalid_argument"
    _, reply = post(endpoint, call("list_agents", []), tenant.operator_secret)  # type: ignore[arg-type]
    assert error_code(reply) == "invalid_argument"


def test_another_namespaces_credential_sees_nothing_here(
    endpoint: McpEndpoint, tenant: Tenant, other_tenant: Tenant
) -> None:
    agent_id, _ = tenant.register()
    _, reply = post(endpoint, call("list_agents", {}), other_tenant.operator_secret)
    assert agent_id not in json.dumps(reply)
    _, reply = post(
        endpoint,
        call("revoke_principal", {"principal_id": agent_id, "version": 1}),
        other_tenant.operator_secret,
    )
    assert error_code(reply) == "not_found"


def test_the_stateless_era_discovers_and_carries_its_version_per_request(
    endpoint: McpEndpoint, tenant: Tenant
) -> None:
    meta = {"_meta": MODERN_META}
    discover = rpc("server/discover", meta)
    status, reply = post(endpoint, discover, **_headers(discover))
    assert status == 200
    assert reply["result"]["supportedVersions"][0] == "2026-07-28"
    listing_request = rpc("tools/list", meta)
    _, listing = post(endpoint, listing_request, **_headers(listing_request))
    assert listing["result"]["resultType"] == "complete"
    assert listing["result"]["cacheScope"] == "private"
    old = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2027-01-01"}}
    status, reply = post(endpoint, rpc("server/discover", old))
    assert (status, reply["error"]["code"]) == (400, -32022)


def _headers(message: dict[str, Any]) -> dict[str, str]:
    return {name.replace("-", "_"): value for name, value in modern_headers(message).items()}


def test_the_instructions_tell_an_agent_how_to_beat_and_receive(endpoint: McpEndpoint) -> None:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    _, body = post(endpoint, rpc("initialize", params))
    instructions = body["result"]["instructions"]
    for tool, practice in (
        ("heartbeat", "every third of expect_within_seconds"),
        ("session_heartbeat", "acknowledgedInstructionIds"),
        ("receive", "acknowledge each delivery"),
    ):
        assert f"- {tool}" in instructions
        assert practice in instructions
    assert "never an instruction to you" in instructions
