"""Request bodies are read as I-JSON (RFC 7493): a body that names one member twice in an
object is refused, typed, before any tool runs, over REST, MCP and the stdio bridge alike. A
JSON reader keeps one of the two values (Python's the last), so an approval of ``deploy``
would otherwise redeem for ``{"op": "delete-all", "op": "deploy"}``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest

from tests.support import Tenant, served_over_http
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router
from vigil.transports.stdio import StdioBridge

# Both hold an "op" twice: what a person approved, and what the other "op" would run.
ASK_ACTION = '{"op": "delete-all", "op": "deploy"}'
DEPLOY = {"op": "deploy"}


class Desk:
    """Agent ann, who asks, and person pat, who decides, calling through the router."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.router = Router(tenant.app, frozenset())
        self.ann, self.ann_secret = tenant.register(name="ann")
        self.pat, self.pat_secret = tenant.register(kind="person", role="worker", name="pat")

    def rest(self, tool: str, body: str) -> tuple[int, dict[str, Any]]:
        headers = {"authorization": f"Bearer {self.ann_secret}"}
        response = self.router.handle(HttpRequest("POST", f"/v1/{tool}", headers, body.encode()))
        return response.status, json.loads(response.body)

    def mcp(self, tool: str, arguments: str) -> tuple[int, dict[str, Any]]:
        headers = {"authorization": f"Bearer {self.ann_secret}"}
        body = (
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
            f'"params": {{"name": "{tool}", "arguments": {arguments}}}}}'
        )
        response = self.router.handle(HttpRequest("POST", "/mcp", headers, body.encode()))
        return response.status, json.loads(response.body)

    def ask_body(self, action: str) -> str:
        target = json.dumps({"kind": "person", "id": self.pat})
        return f'{{"target": {target}, "kind": "approval", "body": "ship?", "action": {action}}}'

    def requests(self) -> list[dict[str, Any]]:
        found = self.tenant.call("request_status", self.ann_secret)
        return list(found["requests"])

    def approved(self) -> str:
        asked = self.tenant.call(
            "ask",
            self.ann_secret,
            target={"kind": "person", "id": self.pat},
            kind="approval",
            body="ship?",
            action=DEPLOY,
        )
        self.tenant.call("reply", self.pat_secret, id=asked["id"], version=1, outcome="approved")
        return str(asked["id"])

    def intent(self, request_id: str) -> Any:
        return self.tenant.app.store.get_execution(self.tenant.namespace, request_id)


@pytest.fixture
def desk(tenant: Tenant) -> Desk:
    return Desk(tenant)


def assert_names_op_twice(error: dict[str, Any]) -> None:
    assert error["code"] == "invalid_argument"
    assert error["details"] == {"member": "op"}
    assert "RFC 7493" in error["message"]


def test_rest_refuses_an_action_that_names_a_member_twice(desk: Desk) -> None:
    status, refused = desk.rest("ask", desk.ask_body(ASK_ACTION))
    assert status == 400
    assert_names_op_twice(refused["error"])
    assert desk.requests() == []

    request_id = desk.approved()
    status, refused = desk.rest(
        "redeem_approval", f'{{"id": "{request_id}", "action": {ASK_ACTION}}}'
    )
    assert status == 400
    assert_names_op_twice(refused["error"])
    assert desk.intent(request_id) is None


def test_mcp_refuses_an_action_that_names_a_member_twice(desk: Desk) -> None:
    status, reply = desk.mcp("ask", desk.ask_body(ASK_ACTION))
    assert status == 400
    assert reply["error"]["code"] == -32700
    assert_names_op_twice(reply["error"]["data"])
    assert desk.requests() == []

    request_id = desk.approved()
    status, reply = desk.mcp("redeem_approval", f'{{"id": "{request_id}", "action": {ASK_ACTION}}}')
    assert status == 400
    assert_names_op_twice(reply["error"]["data"])
    assert desk.intent(request_id) is None


def test_a_member_named_twice_anywhere_in_a_body_is_refused(desk: Desk) -> None:
    request_id = desk.approved()
    twice = f'{{"id": "req_other", "id": "{request_id}", "action": {{"op": "deploy"}}}}'
    status, refused = desk.rest("redeem_approval", twice)
    assert (status, refused["error"]["details"]) == (400, {"member": "id"})
    headers = {"authorization": f"Bearer {desk.ann_secret}"}
    envelope = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "method": "tools/list"}'
    response = desk.router.handle(HttpRequest("POST", "/mcp", headers, envelope))
    assert response.status == 400
    assert json.loads(response.body)["error"]["data"]["details"] == {"member": "method"}
    assert desk.intent(request_id) is None
    long_name = "k" * 5000
    status, refused = desk.rest("whoami", f'{{"{long_name}": 1, "{long_name}": 2}}')
    assert (status, refused["error"]["details"]) == (400, {"member": "k" * 99 + "…"})
    # Members of one name in different objects are different members.
    nested = f'{{"id": "{request_id}", "action": {{"op": "deploy"}}}}'
    assert desk.rest("redeem_approval", nested)[0] == 200


@pytest.fixture
def served(desk: Desk) -> Iterator[str]:
    with served_over_http(desk.router) as url:
        yield url


def test_the_stdio_bridge_refuses_it_too(desk: Desk, served: str) -> None:
    request_id = desk.approved()
    line = (
        '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": '
        f'"redeem_approval", "arguments": {{"id": "{request_id}", "action": {ASK_ACTION}}}}}}}\n'
    )
    out = StringIO()
    StdioBridge(served, desk.ann_secret).serve(StringIO(line), out)
    reply = json.loads(out.getvalue())
    assert reply["error"]["code"] == -32700
    assert_names_op_twice(reply["error"]["data"])
    assert desk.intent(request_id) is None
