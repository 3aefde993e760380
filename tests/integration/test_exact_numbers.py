"""Numbers nobody saw: a number in a body that no double holds exactly (I-JSON, RFC 7493) is
refused, typed, before any tool runs, over REST and MCP, in an approval's action and in an
answer; a number a double holds is kept and shown as written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import Tenant
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.transports.router import Router

HEADERS = {"host": "vigil.example", "x-forwarded-proto": "https"}


def rest(router: Router, secret: str, tool: str, body: str) -> HttpResponse:
    headers = {**HEADERS, "authorization": f"Bearer {secret}"}
    return router.handle(HttpRequest("POST", f"/v1/{tool}", headers, body.encode()))


def asked(router: Router, tenant: Tenant, action: str) -> HttpResponse:
    _, ann = tenant.register(name="ann")
    target = json.dumps({"kind": "person", "id": tenant.operator.id})
    body = (
        '{"kind": "approval", "body": "pay?", "target": ' + target + ', "action": ' + action + "}"
    )
    return rest(router, ann, "ask", body)


def amount(written: str) -> str:
    """An action paying ``written``, as raw JSON text."""
    return '{"op": "pay", "amount": ' + written + "}"


@pytest.mark.parametrize(
    "number", ["10000000000000001.0", "9007199254740993", "1e400", "123456789.123456789"]
)
def test_an_action_holding_a_number_no_double_holds_is_refused(tenant: Tenant, number: str) -> None:
    router = Router(tenant.app, frozenset())
    answer = asked(router, tenant, amount(number))
    assert answer.status == 400
    error = json.loads(answer.body)["error"]
    assert error["code"] == "invalid_argument"
    (problem,) = error["details"]["problems"]
    assert problem["field"] == "action"
    assert f"the number {number} is not one a double holds exactly" in problem["problem"]
    assert tenant.call("request_status")["requests"] == []


def test_over_mcp_a_typed_field_refuses_it_too_naming_it(tenant: Tenant) -> None:
    router = Router(tenant.app, frozenset())
    call = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "heartbeat", '
        '"arguments": {"scope": "s", "expect_within_seconds": 10000000000000001.0}}}'
    )
    headers = {**HEADERS, "authorization": f"Bearer {tenant.operator_secret}"}
    answer = router.handle(HttpRequest("POST", "/mcp", headers, call.encode()))
    result = json.loads(answer.body)["result"]
    assert result["isError"] is True
    (problem,) = json.loads(result["content"][0]["text"])["error"]["details"]["problems"]
    assert problem["field"] == "expect_within_seconds"
    assert "the number 10000000000000001.0 is not one a double holds" in problem["problem"]


@pytest.mark.parametrize(("written", "kept"), [("1.10", 1.1), ("0.1", 0.1), ("1e20", 1e20)])
def test_a_number_a_double_holds_is_kept(tenant: Tenant, written: str, kept: Any) -> None:
    router = Router(tenant.app, frozenset())
    answer = asked(router, tenant, amount(written))
    assert answer.status == 200, answer.body
    assert json.loads(answer.body)["action"]["amount"] == kept


def test_an_answer_holding_a_number_no_double_holds_is_refused(tenant: Tenant) -> None:
    router = Router(tenant.app, frozenset())
    _, ann = tenant.register(name="ann")
    question = tenant.app.call(
        "ask",
        {"target": {"kind": "person", "id": tenant.operator.id}, "body": "how many?"},
        ann,
        via="rest",
    )
    head = json.dumps({"id": question["id"], "version": question["version"]})[:-1]
    body = head + ', "outcome": "answered", "answer": {"n": 9007199254740993}}'
    answer = rest(router, tenant.operator_secret, "reply", body)
    assert answer.status == 400
    (problem,) = json.loads(answer.body)["error"]["details"]["problems"]
    assert problem["field"] == "answer"
    assert "9007199254740993" in problem["problem"]
    assert tenant.call("get_request", id=question["id"])["state"] == "open"
