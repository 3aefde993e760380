"""What signing in with OAuth costs, and what a call made with its token costs beside the same
call made with a secret: each HTTP request of a host's sign-in (registration, the consent page
and its form, the code's redemption), a refresh and a revocation, and a steady `heartbeat`
over MCP with a secret and with an access token; the AWS calls each makes (counted at the
botocore layer on moto, as ``make bench`` counts them) and their price at public on-demand
prices (``costs.Meter``), each HTTP request priced with its HTTP API and Lambda request.
docs/PERFORMANCE.md, "Signing in with OAuth", shows its output.

Usage: .venv/bin/python scripts/oauth_costs.py

A second table times the steady beat's CPU in this process, with each credential in turn
(2,000 beats each, interleaved, on the in-memory store: the call path alone, no I/O): the
access token's signature check against the secret's digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
CALLBACK = "http://127.0.0.1:33418/callback"
HOST = "vigil.example"
Row = tuple[str, str, float]


def measured(world: Any, step: Callable[[], Any]) -> tuple[str, float, Any]:
    from costs import Meter

    meter = Meter()
    clients = (world.dynamodb, world.sqs, world.scheduler, world.s3)
    for client in clients:
        meter.hook(client)
    try:
        result = step()
    finally:
        for client in clients:
            meter.unhook(client)
    return meter.summary() or "none", meter.cost(via_api=True) * 1e6, result


def rows() -> list[Row]:
    from tests.faults.world import World
    from tests.integration.test_console_http import Browser, field_of
    from vigil.kit.http import HttpRequest
    from vigil.transports.router import Router

    world = World()
    router = Router(world.app, frozenset())
    found: list[Row] = []

    def counted(what: str, step: Callable[[], Any]) -> Any:
        calls, price, result = measured(world, step)
        found.append((what, calls, price))
        return result

    def send(method: str, path: str, body: bytes = b"", **headers: str) -> Any:
        sent = {"host": HOST, "x-forwarded-proto": "https", **headers}
        return router.handle(HttpRequest(method, path, sent, body, source_ip="198.51.100.7"))

    def form(path: str, **fields: str) -> Any:
        body = urlencode(fields).encode()
        return send("POST", path, body, **{"content-type": "application/x-www-form-urlencoded"})

    def beat(credential: str) -> Any:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "heartbeat",
                "arguments": {"scope": "job-1", "expect_within_seconds": 600},
            },
        }
        return send(
            "POST",
            "/mcp",
            json.dumps(call).encode(),
            authorization=f"Bearer {credential}",
            **{"mcp-protocol-version": "2025-11-25"},
        )

    # Warm: the metadata and the classes each path builds once per process.
    send("GET", "/.well-known/oauth-authorization-server")
    registration = {
        "client_name": "Host",
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
    }
    registered = counted(
        "`POST /oauth/register` (a host that registers; one with a metadata document skips it)",
        lambda: send("POST", "/oauth/register", json.dumps(registration).encode()),
    )
    client_id = json.loads(registered.body)["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = hashlib.sha256(verifier.encode()).digest()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "state": "s",
        "code_challenge": base64.urlsafe_b64encode(challenge).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
        "resource": f"https://{HOST}/mcp",
        "scope": "vigil:agent",
    }
    browser = Browser(router)
    assert browser.sign_in(world.secrets["worker"]).status == 303
    page = counted(
        "`GET /console/authorize`: the consent page (signed in)",
        lambda: browser.get("/console/authorize", **query),
    )
    allow = {**query, "csrf": field_of(page, "csrf"), "shown": field_of(page, "shown")}
    allow["decision"] = "allow"
    answer = counted(
        "`POST /console/authorize`: Allow", lambda: browser.post("/console/authorize", allow)
    )
    code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
    redeemed = counted(
        "`POST /oauth/token`: the code redeemed, the grant created",
        lambda: form(
            "/oauth/token",
            grant_type="authorization_code",
            code=code,
            redirect_uri=CALLBACK,
            client_id=client_id,
            code_verifier=verifier,
        ),
    )
    tokens = json.loads(redeemed.body)
    # Each beat twice: the first of each credential warms what the process builds once.
    for credential, what in (
        (world.secrets["worker"], "`tools/call` `heartbeat`, steady, with a secret"),
        (tokens["access_token"], "`tools/call` `heartbeat`, steady, with an access token"),
    ):
        assert beat(credential).status == 200
        done = counted(what, lambda credential=credential: beat(credential))  # type: ignore[misc]
        assert json.loads(done.body)["result"]["isError"] is False
    refreshed = counted(
        "`POST /oauth/token`: a refresh (every 15 minutes a host is in use)",
        lambda: form(
            "/oauth/token",
            grant_type="refresh_token",
            refresh_token=tokens["refresh_token"],
            client_id=client_id,
        ),
    )
    assert refreshed.status == 200, refreshed.body
    later = json.loads(refreshed.body)
    counted(
        "`POST /oauth/revoke`",
        lambda: form("/oauth/revoke", token=later["refresh_token"], client_id=client_id),
    )
    return found


def cpu(beats: int = 2000) -> list[tuple[str, float]]:
    """The median microseconds of a steady beat over MCP through the router, in memory, with
    a secret and with an access token, interleaved."""
    import statistics
    import time

    from tests.support import Tenant, app_on
    from vigil.clock import ManualClock
    from vigil.kit.http import HttpRequest
    from vigil.stores.memory import MemoryStore
    from vigil.transports.router import Router

    clock = ManualClock(datetime(2026, 12, 7, tzinfo=UTC))
    app = app_on(MemoryStore(), clock)
    tenant = Tenant(app, clock, "acme")
    _, secret = tenant.register(name="worker")
    router = Router(app, frozenset())
    token = sign_in(router, secret)["access_token"]

    def beat(credential: str) -> float:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "heartbeat",
                "arguments": {"scope": "job-1", "expect_within_seconds": 600},
            },
        }
        headers = {
            "host": HOST,
            "x-forwarded-proto": "https",
            "authorization": f"Bearer {credential}",
            "mcp-protocol-version": "2025-11-25",
        }
        request = HttpRequest("POST", "/mcp", headers, json.dumps(call).encode())
        started = time.perf_counter()
        answer = router.handle(request)
        elapsed = time.perf_counter() - started
        assert answer.status == 200
        return elapsed * 1e6

    times: dict[str, list[float]] = {"a secret": [], "an access token": []}
    for _ in range(beats):
        times["a secret"].append(beat(secret))
        times["an access token"].append(beat(token))
    return [(name, statistics.median(found)) for name, found in times.items()]


def sign_in(router: Any, secret: str) -> dict[str, Any]:
    """A host's whole sign-in through ``router``, as ``secret``'s principal: its tokens."""
    from tests.integration.test_console_http import Browser, field_of
    from vigil.kit.http import HttpRequest

    def send(path: str, body: bytes, kind: str) -> Any:
        headers = {"host": HOST, "x-forwarded-proto": "https", "content-type": kind}
        return router.handle(HttpRequest("POST", path, headers, body, source_ip="192.0.2.1"))

    registration = {"client_name": "Host", "redirect_uris": [CALLBACK]}
    registration["token_endpoint_auth_method"] = "none"
    client_id = json.loads(
        send("/oauth/register", json.dumps(registration).encode(), "application/json").body
    )["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = hashlib.sha256(verifier.encode()).digest()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": base64.urlsafe_b64encode(challenge).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    browser = Browser(router)
    browser.sign_in(secret)
    page = browser.get("/console/authorize", **query)
    allow = {**query, "csrf": field_of(page, "csrf"), "shown": field_of(page, "shown")}
    allow["decision"] = "allow"
    answer = browser.post("/console/authorize", allow)
    code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
    fields = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": client_id,
        "code_verifier": verifier,
    }
    redeemed = send("/oauth/token", urlencode(fields).encode(), "application/x-www-form-urlencoded")
    tokens: dict[str, Any] = json.loads(redeemed.body)
    return tokens


def main() -> None:
    from moto import mock_aws

    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "scripts"), str(ROOT)]
    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    print("| HTTP request | AWS calls | USD per million |")
    print("| --- | --- | ---: |")
    with mock_aws():
        for what, calls, price in rows():
            print(f"| {what} | {calls} | {price:.2f} |")
    print()
    print("| a steady beat over MCP, in memory, with | median µs |")
    print("| --- | ---: |")
    for name, micros in cpu():
        print(f"| {name} | {micros:.0f} |")


if __name__ == "__main__":
    main()
