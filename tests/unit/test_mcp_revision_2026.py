"""The 2026-07-28 revision, strictly, as its text and the conformance suite's 0.2.0 checks read
it, over plain HTTP: server/discover's required _meta; 404 for what is not a method of the
revision (initialize and ping among them); the id kept in every error that can read it;
a header and _meta that disagree (-32020) told from a revision not served (-32022), whose
list of revisions is discover's; and Mcp-Method and Mcp-Name checked against the body."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.support import MODERN, MODERN_META, Tenant, modern_headers
from vigil.kit.http import HttpRequest
from vigil.transports.mcp import McpEndpoint

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


def send(
    tenant: Tenant, message: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    sent = {
        "host": "vigil.example",
        "authorization": f"Bearer {tenant.operator_secret}",
        **(modern_headers(message) if headers is None else headers),
    }
    answer = McpEndpoint(tenant.app).handle(
        HttpRequest("POST", "/mcp", sent, json.dumps(message).encode())
    )
    return answer.status, json.loads(answer.body)


def request(method: str, meta: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    body = {**params} if meta is None else {**params, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 41, "method": method, "params": body}


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {CAPABILITIES_KEY: {}},
        {VERSION_KEY: MODERN},
        {VERSION_KEY: MODERN, CAPABILITIES_KEY: "none"},
    ],
)
def test_discover_without_its_required_meta_is_invalid_params(
    tenant: Tenant, meta: dict[str, Any] | None
) -> None:
    status, reply = send(tenant, request("server/discover", meta))
    assert (status, reply["id"], reply["error"]["code"]) == (400, 41, -32602)


def test_discover_without_client_info_is_served(tenant: Tenant) -> None:
    status, reply = send(tenant, request("server/discover", MODERN_META))
    assert status == 200
    assert reply["result"]["resultType"] == "complete"


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "unknown/method"])
def test_what_is_no_method_of_the_revision_is_404(tenant: Tenant, method: str) -> None:
    status, reply = send(tenant, request(method, MODERN_META))
    assert (status, reply["id"], reply["error"]["code"]) == (404, 41, -32601)
    # A client of another revision learns which are served.
    assert MODERN in reply["error"]["data"]["supported"]


def test_an_unsupported_revision_is_refused_with_the_requests_id_and_discovers_list(
    tenant: Tenant,
) -> None:
    _, discovered = send(tenant, request("server/discover", MODERN_META))
    supported = discovered["result"]["supportedVersions"]
    message = request("tools/list", {**MODERN_META, VERSION_KEY: "v999.0.0"})
    headers = {**modern_headers(message), "mcp-protocol-version": "v999.0.0"}
    status, reply = send(tenant, message, headers)
    assert (status, reply["id"], reply["error"]["code"]) == (400, 41, -32022)
    assert reply["error"]["data"]["requested"] == "v999.0.0"
    assert set(reply["error"]["data"]["supported"]) <= set(supported)


def test_a_header_and_meta_naming_different_revisions_is_a_header_mismatch(
    tenant: Tenant,
) -> None:
    message = request("tools/list", {**MODERN_META, VERSION_KEY: "v999.0.0"})
    status, reply = send(tenant, message)  # the header says 2026-07-28
    assert (status, reply["id"], reply["error"]["code"]) == (400, 41, -32020)


@pytest.mark.parametrize(
    "change",
    [
        {"mcp-method": None},
        {"mcp-method": "tools/list"},
        {"mcp-name": None},
        {"mcp-name": "register"},
        {"mcp-name": "=?base64?not base64?="},
    ],
)
def test_method_and_name_headers_must_be_the_bodys(
    tenant: Tenant, change: dict[str, str | None]
) -> None:
    message = request("tools/call", MODERN_META, name="whoami", arguments={})
    headers = {**modern_headers(message), **change}
    sent = {name: value for name, value in headers.items() if value is not None}
    status, reply = send(tenant, message, sent)
    assert (status, reply["id"], reply["error"]["code"]) == (400, 41, -32020)


@pytest.mark.parametrize(
    "name_header", [" whoami ", "=?base64?" + base64.b64encode(b"whoami").decode() + "?="]
)
def test_a_name_header_trimmed_or_encoded_is_the_bodys(tenant: Tenant, name_header: str) -> None:
    message = request("tools/call", MODERN_META, name="whoami", arguments={})
    status, reply = send(tenant, message, {**modern_headers(message), "mcp-name": name_header})
    assert status == 200
    assert reply["result"]["isError"] is False
