"""What the MCP endpoint puts on the wire for each protocol revision, and which requests it
answers with HTTP 401: raw bytes through the router, on the in-memory store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import MODERN_META, Tenant, modern_headers
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "host": "vigil.example",
    "x-forwarded-proto": "https",
}
CHALLENGE = (
    'Bearer realm="vigil", '
    'resource_metadata="https://vigil.example/.well-known/oauth-protected-resource"'
)
MODERN = "2026-07-28"
# Members the 2026-07-28 revision added to results; a client of an older revision that
# validates strictly (the TypeScript SDK's ping) refuses a result that carries one.
STATELESS_MEMBERS = {"resultType", "ttlMs", "cacheScope"}


@pytest.fixture
def router(tenant: Tenant) -> Router:
    return Router(tenant.app, frozenset())


def post(
    router: Router,
    message: dict[str, Any],
    authorization: str | None = None,
    version: str | None = None,
) -> tuple[int, dict[str, str], Any]:
    headers = dict(HEADERS)
    if authorization is not None:
        headers["authorization"] = authorization
    if version is not None:
        headers["mcp-protocol-version"] = version
    if version == MODERN:
        headers.update(modern_headers(message))
    request = HttpRequest("POST", "/mcp", headers, json.dumps(message).encode())
    response = router.handle(request)
    return response.status, response.headers, json.loads(response.body or b"null")


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params or {}}


def modern(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return rpc(method, {**(params or {}), "_meta": MODERN_META})


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": arguments})


def bearer(secret: str) -> str:
    return f"Bearer {secret}"


INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}


@pytest.mark.parametrize("version", [None, "2025-03-26", "2025-06-18", "2025-11-25"])
def test_a_handshake_client_gets_no_stateless_members(
    router: Router, tenant: Tenant, version: str | None
) -> None:
    secret = bearer(tenant.operator_secret)
    replies = [
        post(router, rpc("initialize", INITIALIZE), secret),
        post(router, rpc("ping"), secret, version),
        post(router, rpc("tools/list"), secret, version),
        post(router, call("whoami", {}), secret, version),
        post(router, call("register", {"kind": "agent", "name": 7}), secret, version),
    ]
    for status, _, reply in replies:
        assert status == 200, reply
        assert not STATELESS_MEMBERS & set(reply["result"]), reply
    assert replies[1][2]["result"] == {}


def test_a_stateless_client_gets_result_type_and_cache_hints_on_lists(
    router: Router, tenant: Tenant
) -> None:
    secret = bearer(tenant.operator_secret)
    _, _, discovered = post(router, modern("server/discover"), None, MODERN)
    _, _, listing = post(router, modern("tools/list"), secret, MODERN)
    _, _, called = post(router, modern("tools/call", {"name": "whoami"}), secret, MODERN)
    assert called["result"]["resultType"] == "complete"
    assert "ttlMs" not in called["result"]
    for cacheable in (discovered, listing):
        assert cacheable["result"]["resultType"] == "complete"
        assert (cacheable["result"]["ttlMs"], cacheable["result"]["cacheScope"]) == (0, "private")


@pytest.mark.parametrize("arguments", [{}, {"agent_key": "vgl.acme.per_x.nope"}])
def test_a_tool_call_without_a_credential_is_http_401_with_a_challenge(
    router: Router, tenant: Tenant, arguments: dict[str, Any]
) -> None:
    """whoami takes no agent_key: carrying one is no way around the header."""
    status, headers, reply = post(router, call("whoami", arguments))
    assert status == 401
    assert headers["www-authenticate"] == CHALLENGE
    assert (reply["id"], reply["error"]["code"]) == (7, -32600)
    assert reply["error"]["data"]["code"] == "unauthenticated"
    listed = tenant.call("list_directory", kind="agent")["items"]
    status, headers, _ = post(router, call("register", {"kind": "agent", "name": "x"}))
    assert (status, headers["www-authenticate"]) == (401, CHALLENGE)
    assert tenant.call("list_directory", kind="agent")["items"] == listed


@pytest.mark.parametrize(
    "message",
    [
        rpc("initialize", INITIALIZE),
        rpc("ping"),
        rpc("tools/list"),
        call("whoami", {}),
        call("heartbeat", {"scope": "s", "expect_within_seconds": 60}),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ],
)
@pytest.mark.parametrize("credential", ["Bearer vgl.acme.per_x.nope", "Bearer not-a-secret"])
def test_a_bad_credential_is_http_401_whatever_the_method(
    router: Router, message: dict[str, Any], credential: str
) -> None:
    status, headers, reply = post(router, message, credential, "2025-11-25")
    assert status == 401
    assert headers["www-authenticate"] == CHALLENGE
    assert reply["error"]["data"]["code"] == "unauthenticated"
    assert reply["id"] == message.get("id")


def test_a_replaced_secret_is_a_bad_credential(router: Router, tenant: Tenant) -> None:
    agent_id, secret = tenant.register()
    tenant.call("rotate_secret", principal_id=agent_id, version=1)
    status, _, _ = post(router, rpc("ping"), bearer(secret), "2025-11-25")
    assert status == 401


def test_initialize_ping_and_listing_need_no_credential(router: Router) -> None:
    """The conformance suite and hosts that sign in later start here, with no header."""
    for message in (rpc("initialize", INITIALIZE), rpc("ping"), rpc("tools/list")):
        status, headers, reply = post(router, message, None, "2025-11-25")
        assert status == 200, reply
        assert "www-authenticate" not in headers
    status, _, _ = post(router, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202


def test_a_heartbeat_with_its_agent_key_needs_no_header(router: Router, tenant: Tenant) -> None:
    """The seed lets an agent whose host cannot set headers pass its secret as agent_key:
    such a call is never a 401, and a wrong key is the tool's typed refusal."""
    _, secret = tenant.register()
    beat = {"scope": "job-1", "expect_within_seconds": 60}
    status, _, reply = post(router, call("heartbeat", {**beat, "agent_key": secret}))
    assert status == 200
    assert reply["result"]["isError"] is False
    status, headers, reply = post(router, call("heartbeat", {**beat, "agent_key": "vgl.no"}))
    assert status == 200
    assert "www-authenticate" not in headers
    assert reply["result"]["isError"] is True
    assert json.loads(reply["result"]["content"][0]["text"])["error"]["code"] == ("unauthenticated")
