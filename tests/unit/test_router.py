"""Routing, origins and preflight in front of the transports."""

from __future__ import annotations

import json

from tests.support import Tenant
from vigil.transports.http import HttpRequest
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
