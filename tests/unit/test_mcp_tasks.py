"""The Tasks extension (io.modelcontextprotocol/tasks) on the MCP endpoint, as raw JSON-RPC on
the in-memory store: an ``ask`` from a host that declares the extension is a task, and the task
is the request, its status computed from the stored request on every poll."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import Tenant, app_on, error_of, modern_headers, served_over_http
from vigil.clock import ManualClock, iso
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.store import Store
from vigil.transports.router import Router
from vigil.transports.stdio import StdioBridge
from vigil.transports.tasks import POLL_INTERVAL_MS, TASKS

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
MODERN = "2026-07-28"
DECLARED = {"extensions": {TASKS: {}}}


class Host:
    """A host at 2026-07-28 holding one principal's secret, declaring the Tasks extension on
    each request unless told otherwise."""

    def __init__(self, router: Router, secret: str | None, declares: bool = True) -> None:
        self.router = router
        self.secret = secret
        self.declares = declares

    def send(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN}
        meta["io.modelcontextprotocol/clientCapabilities"] = DECLARED if self.declares else {}
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        headers = {**HEADERS, **modern_headers(message)}
        if self.secret is not None:
            headers["authorization"] = f"Bearer {self.secret}"
        response = self.router.handle(
            HttpRequest("POST", "/mcp", headers, json.dumps(message).encode())
        )
        return response.status, json.loads(response.body)

    def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        status, reply = self.send(method, params)
        assert status == 200, reply
        result: dict[str, Any] = reply["result"]
        return result

    def ask(self, **arguments: Any) -> dict[str, Any]:
        return self.result("tools/call", {"name": "ask", "arguments": arguments})

    def get(self, task_id: str) -> dict[str, Any]:
        return self.result("tasks/get", {"taskId": task_id})


@pytest.fixture
def router(tenant: Tenant) -> Router:
    return Router(tenant.app, frozenset())


@pytest.fixture
def people(tenant: Tenant) -> dict[str, tuple[str, str]]:
    return {
        "ann": tenant.register(name="ann"),
        "pat": tenant.register(kind="person", name="Pat"),
        "bob": tenant.register(name="bob"),
    }


@pytest.fixture
def ann(router: Router, people: dict[str, tuple[str, str]]) -> Host:
    return Host(router, people["ann"][1])


def approval(people: dict[str, tuple[str, str]], **more: Any) -> dict[str, Any]:
    target = {"kind": "person", "id": people["pat"][0]}
    return {"target": target, "kind": "approval", "body": "May I deploy?", **more}


def pat_replies(tenant: Tenant, people: dict[str, tuple[str, str]], task_id: str) -> None:
    tenant.call("reply", people["pat"][1], id=task_id, version=1, outcome="approved")


def test_discovery_advertises_the_extension_and_the_handshake_does_not(
    router: Router, ann: Host
) -> None:
    assert ann.result("server/discover", {})["capabilities"]["extensions"][TASKS] == {}
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}
    response = router.handle(HttpRequest("POST", "/mcp", HEADERS, json.dumps(message).encode()))
    assert "extensions" not in json.loads(response.body)["result"]["capabilities"]


def test_an_ask_from_a_declaring_host_is_a_task_that_is_the_request(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host, clock: ManualClock
) -> None:
    created = ann.ask(**approval(people, expires_in_seconds=3600))
    assert created["resultType"] == "task"
    task_id = created["taskId"]
    request = tenant.call("get_request", people["ann"][1], id=task_id)
    assert request["state"] == "open"  # the task id is the request's id: stored once
    assert created["status"] == "working"
    assert created["createdAt"] == created["lastUpdatedAt"] == iso(clock.now())
    assert (created["ttlMs"], created["pollIntervalMs"]) == (3_600_000, POLL_INTERVAL_MS)
    polled = ann.get(task_id)
    assert polled["resultType"] == "complete"
    assert {k: polled[k] for k in ("taskId", "status", "ttlMs")} == {
        "taskId": task_id,
        "status": "working",
        "ttlMs": 3_600_000,
    }


def test_a_decision_completes_the_task_with_the_tools_result(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host, clock: ManualClock
) -> None:
    task_id = ann.ask(**approval(people))["taskId"]
    clock.advance(30)
    pat_replies(tenant, people, task_id)
    polled = ann.get(task_id)
    assert polled["status"] == "completed"
    assert polled["lastUpdatedAt"] == iso(clock.now())
    result = polled["result"]
    decided = tenant.call("get_request", people["ann"][1], id=task_id)
    # The task's result is what ask returns: the request without get_request's detail.
    del decided["execution"], decided["policy"]
    assert result["isError"] is False
    assert result["structuredContent"] == decided
    assert json.loads(result["content"][0]["text"]) == decided
    assert decided["state"] == "approved"


def test_expiry_fails_the_task_with_a_typed_error(
    people: dict[str, tuple[str, str]], ann: Host, clock: ManualClock
) -> None:
    task_id = ann.ask(**approval(people, expires_in_seconds=60))["taskId"]
    clock.advance(60)  # no alarm has run: the read computes the expiry
    polled = ann.get(task_id)
    assert polled["status"] == "failed"
    assert "result" not in polled
    error = polled["error"]
    assert isinstance(error["code"], int)
    assert error["data"]["code"] == "version_conflict"
    assert error["data"]["details"] == {"state": "expired"}
    assert polled["statusMessage"] == error["message"]


def test_a_replaced_request_fails_its_task_naming_the_replacement(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host
) -> None:
    task_id = ann.ask(**approval(people))["taskId"]
    replaced = tenant.call(
        "replace_request",
        people["ann"][1],
        id=task_id,
        version=1,
        body="May I deploy tomorrow?",
        idempotency_key="r1",
    )
    error = ann.get(task_id)["error"]
    assert error["data"]["details"] == {
        "state": "replaced",
        "replaced_by": replaced["replacement"]["id"],
    }
    # The replacement is a request of the same asker: its id is a task to poll.
    assert ann.get(replaced["replacement"]["id"])["status"] == "working"


def test_cancelling_withdraws_the_request_audited(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host, clock: ManualClock
) -> None:
    task_id = ann.ask(**approval(people))["taskId"]
    clock.advance(5)
    acknowledged = ann.result("tasks/cancel", {"taskId": task_id})
    assert acknowledged == {"resultType": "complete"}
    polled = ann.get(task_id)
    assert (polled["status"], polled["lastUpdatedAt"]) == ("cancelled", iso(clock.now()))
    request = tenant.call("get_request", people["ann"][1], id=task_id)
    assert request["state"] == "withdrawn"
    assert request["history"][-1]["kind"] == "withdrawn"
    assert request["history"][-1]["by"] == people["ann"][0]
    (event, *_) = tenant.call("list_audit_events")["events"]
    assert (event["action"], event["target_kind"], event["target"]) == (
        "withdraw_request",
        "request",
        task_id,
    )
    assert (event["actor"], event["before_version"], event["after_version"]) == (
        people["ann"][0],
        1,
        2,
    )
    # Withdrawn, it can no longer be decided, and it no longer counts as open.
    refusal = error_of(
        tenant.call, "reply", people["pat"][1], id=task_id, version=2, outcome="approved"
    )
    assert refusal.details == {"state": "withdrawn"}
    assert tenant.app.store.quota_usage(tenant.namespace, "open_requests") == 0
    # A second cancel is acknowledged and changes nothing.
    assert ann.result("tasks/cancel", {"taskId": task_id}) == {"resultType": "complete"}
    assert len(tenant.call("get_request", people["ann"][1], id=task_id)["history"]) == 2


def test_a_cancel_after_the_decision_changes_nothing(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host
) -> None:
    task_id = ann.ask(**approval(people))["taskId"]
    pat_replies(tenant, people, task_id)
    assert ann.result("tasks/cancel", {"taskId": task_id}) == {"resultType": "complete"}
    assert ann.get(task_id)["status"] == "completed"
    assert tenant.call("list_audit_events")["events"][0]["action"] != "withdraw_request"


def test_a_host_that_declares_nothing_gets_the_tools_result(
    router: Router, people: dict[str, tuple[str, str]]
) -> None:
    plain = Host(router, people["ann"][1], declares=False)
    result = plain.ask(**approval(people))
    assert result["resultType"] == "complete"
    assert result["structuredContent"]["state"] == "open"
    # And it may not poll: the extension is declared on each request or not at all.
    status, reply = plain.send("tasks/get", {"taskId": result["structuredContent"]["id"]})
    assert status == 400
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": DECLARED}


def test_only_an_open_request_becomes_a_task(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host
) -> None:
    refused = ann.ask(**approval(people, expires_in_seconds=1))
    assert (refused["resultType"], refused["isError"]) == ("complete", True)
    question = {**approval(people), "kind": "question", "shared_key": "deploy-window"}
    first = ann.ask(**question)["taskId"]
    tenant.call("reply", people["pat"][1], id=first, version=1, outcome="answered", answer="ok")
    reused = ann.ask(**question)  # answered at once with the shared answer: nothing to wait on
    assert reused["resultType"] == "complete"
    assert reused["structuredContent"]["state"] == "answered"


def _missing(host: Host, method: str, task_id: str) -> dict[str, Any]:
    status, reply = host.send(method, {"taskId": task_id})
    assert status == 200
    error: dict[str, Any] = reply["error"]
    return error


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel", "tasks/update"])
def test_no_one_but_the_asker_learns_a_task_exists(
    router: Router,
    tenant: Tenant,
    other_tenant: Tenant,
    people: dict[str, tuple[str, str]],
    ann: Host,
    method: str,
) -> None:
    task_id = ann.ask(**approval(people))["taskId"]
    missing = _missing(ann, method, "req_" + "x" * len(task_id[4:]))
    assert missing["code"] == -32602
    _, foreign_secret = other_tenant.register(name="mallory")
    for stranger in (people["bob"][1], people["pat"][1], foreign_secret):
        assert _missing(Host(router, stranger), method, task_id) == missing
    # Nobody but the asker withdrew anything.
    assert tenant.call("get_request", people["ann"][1], id=task_id)["state"] == "open"


def test_a_task_method_without_a_credential_is_http_401(
    router: Router, people: dict[str, tuple[str, str]], ann: Host
) -> None:
    task_id = ann.ask(**approval(people))["taskId"]
    status, reply = Host(router, None).send("tasks/get", {"taskId": task_id})
    assert status == 401
    assert reply["error"]["data"]["code"] == "unauthenticated"


def test_a_malformed_task_id_is_invalid_params(ann: Host) -> None:
    status, reply = ann.send("tasks/get", {"taskId": 7})
    assert (status, reply["error"]["code"]) == (200, -32602)


class Recording(Router):
    """The router, keeping the headers of each request it serves."""

    def __init__(self, tenant: Tenant) -> None:
        super().__init__(tenant.app, frozenset())
        self.headers: list[dict[str, str]] = []

    def handle(self, request: HttpRequest) -> HttpResponse:
        self.headers.append(dict(request.headers))
        return super().handle(request)


def test_the_stdio_bridge_names_the_task_on_its_http_requests(
    tenant: Tenant, people: dict[str, tuple[str, str]]
) -> None:
    # The extension's routing rule: a tasks/* request over HTTP carries its method and task
    # id as headers, so that what routes HTTP needs no body to route it.
    router = Recording(tenant)
    with served_over_http(router) as url:
        bridge = StdioBridge(url, people["ann"][1])
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": DECLARED,
        }
        asked = {"name": "ask", "arguments": approval(people), "_meta": meta}
        created = json.loads(bridge.forward(rpc_line("tools/call", asked)) or "")["result"]
        polled = {"taskId": created["taskId"], "_meta": meta}
        task = json.loads(bridge.forward(rpc_line("tasks/get", polled)) or "")["result"]
    assert task["status"] == "working"
    (*_, asking, polling) = router.headers
    assert (asking["mcp-method"], asking["mcp-name"]) == ("tools/call", "ask")
    assert (polling["mcp-method"], polling["mcp-name"]) == ("tasks/get", created["taskId"])


def rpc_line(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def test_a_withdrawn_request_drops_its_blocking_edge(
    tenant: Tenant, people: dict[str, tuple[str, str]], ann: Host
) -> None:
    bob, bob_secret = people["bob"]
    on_bob = {"target": {"kind": "agent", "id": bob}, "kind": "task", "body": "Build it."}
    task_id = ann.ask(**on_bob, blocking=True)["taskId"]
    on_ann = {"target": {"kind": "agent", "id": people["ann"][0]}, "kind": "task", "body": "Wait."}
    refusal = error_of(tenant.call, "ask", bob_secret, **on_ann, blocking=True)
    assert "cycle" in refusal.details
    ann.result("tasks/cancel", {"taskId": task_id})
    assert tenant.call("ask", bob_secret, **on_ann, blocking=True)["blocking"] is True


def test_a_withdrawal_is_one_transaction_on_either_store(store: Store, clock: ManualClock) -> None:
    tenant = Tenant(app_on(store, clock), clock, "acme")
    people = {"ann": tenant.register(name="ann"), "pat": tenant.register(kind="person")}
    ann = Host(Router(tenant.app, frozenset()), people["ann"][1])
    task_id = ann.ask(**approval(people))["taskId"]
    assert store.quota_usage("acme", "open_requests") == 1
    clock.advance(1)
    ann.result("tasks/cancel", {"taskId": task_id})
    assert ann.get(task_id)["status"] == "cancelled"
    assert store.quota_usage("acme", "open_requests") == 0
    (event, *_) = tenant.call("list_audit_events")["events"]
    assert (event["action"], event["target"]) == ("withdraw_request", task_id)


@pytest.mark.parametrize("task_id", ["req_" + "a" * 2000, "req_AAAAAAAAAAAAAAAA", "../x"])
def test_an_id_of_no_requests_shape_is_not_found_before_the_store_is_asked(
    dynamo_store: Store, clock: ManualClock, task_id: str
) -> None:
    """On DynamoDB, a 2 KB id made a key over its limit: the store's refusal came back as
    unavailable. An id no request has is now not found, and the store is never asked."""
    app = app_on(dynamo_store, clock)
    tenant = Tenant(app, clock, "acme")
    _, secret = tenant.register(name="ann")
    asked: list[str] = []
    app.act_as = lambda *args, **kwargs: asked.append("the store")  # type: ignore[method-assign]
    status, reply = Host(Router(app, frozenset()), secret).send("tasks/get", {"taskId": task_id})
    assert (status, reply["error"]["code"], reply["error"]["message"]) == (
        200,
        -32602,
        "task not found",
    )
    assert asked == []
