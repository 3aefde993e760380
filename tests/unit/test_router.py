"""Routing, origins and preflight in front of the transports."""

from __future__ import annotations

import json
import logging

import pytest

from tests.support import Tenant
from vigil import catalog
from vigil.kit.http import HttpRequest
from vigil.kit.principals import CLI_AGENT
from vigil.transports.openapi import openapi_document
from vigil.transports.router import Router

ALLOWED = "https://console.example"


def router(tenant: Tenant) -> Router:
    return Router(tenant.app, frozenset({ALLOWED}))


def test_preflight_is_answered_only_for_allowed_origins(tenant: Tenant) -> None:
    ok = router(tenant).handle(HttpRequest("OPTIONS", "/v1/whoami", {"origin": ALLOWED}, b""))
    assert ok.status == 204
    assert ok.headers["access-control-allow-origin"] == ALLOWED
    assert "authorization" in ok.headers["access-control-allow-headers"]
    refused = router(tenant).handle(
        HttpRequest("OPTIONS", "/mcp", {"origin": "https://evil.example"}, b"")
    )
    assert refused.status == 403


def test_cross_origin_calls_are_refused_before_any_tool_runs(tenant: Tenant) -> None:
    headers = {
        "origin": "https://evil.example",
        "authorization": f"Bearer {tenant.operator_secret}",
    }
    body = json.dumps({"kind": "agent", "name": "x"}).encode()
    response = router(tenant).handle(HttpRequest("POST", "/v1/register", headers, body))
    assert response.status == 403
    assert tenant.call("list_agents")["agents"] == []


def test_allowed_origins_get_the_cors_header(tenant: Tenant) -> None:
    headers = {"origin": ALLOWED, "authorization": f"Bearer {tenant.operator_secret}"}
    response = router(tenant).handle(HttpRequest("POST", "/v1/whoami", headers, b"{}"))
    assert response.status == 200
    assert response.headers["access-control-allow-origin"] == ALLOWED


def test_unknown_routes_and_methods(tenant: Tenant) -> None:
    assert router(tenant).handle(HttpRequest("GET", "/nope", {}, b"")).status == 404
    assert router(tenant).handle(HttpRequest("POST", "/openapi.json", {}, b"")).status == 405
    assert router(tenant).handle(HttpRequest("GET", "/v1/whoami", {}, b"")).status == 405


def error_body(response: object) -> dict[str, object]:
    body = json.loads(response.body)  # type: ignore[attr-defined]
    assert set(body) == {"error"}
    assert set(body["error"]) >= {"code", "message", "retryable"}
    return dict(body["error"])


def test_every_refusal_at_the_edge_is_typed_json(tenant: Tenant) -> None:
    cases = [
        ("GET", "/nope", 404, "not_found", None),
        ("POST", "/openapi.json", 405, "invalid_argument", "GET, HEAD"),
        ("GET", "/v1/whoami", 405, "invalid_argument", "POST"),
        ("DELETE", "/mcp", 405, "invalid_argument", "POST"),
        ("PUT", "/", 405, "invalid_argument", "GET, HEAD"),
    ]
    for method, path, status, code, allow in cases:
        response = router(tenant).handle(HttpRequest(method, path, {}, b""))
        assert (response.status, response.headers["content-type"]) == (status, "application/json")
        assert error_body(response)["code"] == code, (method, path)
        assert response.headers.get("allow") == allow, (method, path)


def test_a_body_over_two_mebibytes_is_refused_typed_before_it_is_read(tenant: Tenant) -> None:
    body = b'{"name": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    headers = {"authorization": f"Bearer {tenant.operator_secret}"}
    rest = router(tenant).handle(HttpRequest("POST", "/v1/register", headers, body))
    assert rest.status == 413
    error = error_body(rest)
    assert error["code"] == "limit_exceeded"
    assert error["details"] == {"quota": "request_body_bytes", "limit": 2 * 1024 * 1024}
    mcp = router(tenant).handle(HttpRequest("POST", "/mcp", headers, body))
    assert mcp.status == 413
    message = json.loads(mcp.body)
    assert (message["jsonrpc"], message["id"], message["error"]["code"]) == ("2.0", None, -32600)
    assert message["error"]["data"] == error
    assert tenant.call("list_agents")["agents"] == []


def test_a_missing_or_wrong_credential_gets_a_bearer_challenge(tenant: Tenant) -> None:
    headers = {"host": "vigil.example", "x-forwarded-proto": "https"}
    for credential in (None, "Bearer vgl.nope", f"Basic {tenant.operator_secret}"):
        sent = {**headers, **({"authorization": credential} if credential else {})}
        response = router(tenant).handle(HttpRequest("POST", "/v1/whoami", sent, b"{}"))
        assert response.status == 401
        assert error_body(response)["code"] == "unauthenticated"
        assert response.headers["www-authenticate"] == (
            'Bearer realm="vigil", '
            'resource_metadata="https://vigil.example/.well-known/oauth-protected-resource"'
        )
    ok = {**headers, "authorization": f"Bearer {tenant.operator_secret}"}
    response = router(tenant).handle(HttpRequest("POST", "/v1/whoami", ok, b"{}"))
    assert response.status == 200
    assert "www-authenticate" not in response.headers


def test_the_protected_resource_metadata_names_its_own_authorization_server(
    tenant: Tenant,
) -> None:
    headers = {"host": "vigil.example", "x-forwarded-proto": "https"}
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        response = router(tenant).handle(HttpRequest("GET", path, headers, b""))
        assert response.status == 200
        assert json.loads(response.body) == {
            "resource": "https://vigil.example/mcp",
            "authorization_servers": ["https://vigil.example"],
            "scopes_supported": ["vigil:agent", "vigil:people", "vigil:admin"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Vigil",
            "resource_documentation": "https://vigil.example/openapi.json",
        }


def test_the_root_is_an_index_of_the_endpoints(tenant: Tenant) -> None:
    headers = {"host": "127.0.0.1:8080", "x-forwarded-proto": "http"}
    response = router(tenant).handle(HttpRequest("GET", "/", headers, b""))
    assert response.status == 200
    endpoints = json.loads(response.body)["endpoints"]
    assert endpoints == {
        "mcp": "http://127.0.0.1:8080/mcp",
        "rest": "http://127.0.0.1:8080/v1/{tool}",
        "openapi": "http://127.0.0.1:8080/openapi.json",
        "docs": "http://127.0.0.1:8080/docs",
        "console": "http://127.0.0.1:8080/console",
        "protected_resource_metadata": "http://127.0.0.1:8080/.well-known/oauth-protected-resource",
    }


def test_a_browser_caller_may_read_where_to_sign_in(tenant: Tenant) -> None:
    """A 401's challenge names the metadata that says how to get a credential: a page on an
    allowed origin must be let to read it, or a browser host cannot start signing in."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}
    ).encode()
    response = router(tenant).handle(
        HttpRequest("POST", "/mcp", {"origin": ALLOWED, "host": "vigil.example"}, body)
    )
    assert response.status == 401
    assert "resource_metadata" in response.headers["www-authenticate"]
    exposed = response.headers["access-control-expose-headers"].split(", ")
    assert "www-authenticate" in exposed


def test_the_rest_document_says_who_may_call_what_a_listing_leaves_out() -> None:
    """tools/list leaves a tool out for whoever may not call it, so its description does not
    say who may; the REST mirror's document lists every tool, so it says so there."""
    paths = openapi_document()["paths"]
    said = {name: paths[f"/v1/{name}"]["post"]["description"] for name in catalog.DECLARED_IN}
    assert said["create_channel"].endswith(" Operators only.")
    assert said["list_switches"].endswith(" People and operators only.")
    assert said["heartbeat"] == catalog.tool("heartbeat").description
    for tool in catalog.tools():
        assert "perators only" not in tool.description, tool.name
        assert said[tool.name] == f"{tool.description} {tool.callers}".rstrip()


def test_each_door_tells_the_call_which_surface_it_came_through(
    tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    bearer = {"authorization": f"Bearer {tenant.operator_secret}"}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}
    sent = [
        ("/v1/whoami", {}, b"{}"),
        ("/v1/whoami", {"user-agent": f"{CLI_AGENT}1.0"}, b"{}"),
        ("/v1/whoami", {"user-agent": "curl/8.5"}, b"{}"),
        ("/mcp", {"accept": "application/json, text/event-stream"}, json.dumps(rpc).encode()),
    ]
    with caplog.at_level(logging.INFO, logger="vigil"):
        for path, headers, body in sent:
            request = HttpRequest("POST", path, {**bearer, **headers}, body)
            assert router(tenant).handle(request).status == 200
    told = [r.__dict__["fields"]["via"] for r in caplog.records if r.msg == "tool call"]
    assert told == ["rest", "cli", "rest", "mcp"]
