"""The audit trail: every operator action that changes a principal, a switch or a mailbox is
recorded with the change, and operators read it, newest first, through list_audit_events."""

from __future__ import annotations

import json
from typing import Any

from tests.support import Tenant, error_of
from vigil.bootstrap import rotate_operator
from vigil.clock import ManualClock
from vigil.errors import ErrorCode
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router


def trail(tenant: Tenant, secret: str | None = None) -> list[dict[str, Any]]:
    return list(tenant.call("list_audit_events", secret, limit=100)["events"])


def what(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    fields = ("actor", "action", "target_kind", "target", "before_version", "after_version")
    return [tuple(event[f] for f in fields) for event in events]


def test_each_operator_power_is_recorded_with_who_what_when_and_versions(
    tenant: Tenant, clock: ManualClock
) -> None:
    me = tenant.operator.id
    clock.advance(1)
    agent, _ = tenant.register(name="worker")
    clock.advance(1)
    tenant.call("create_mailbox", box="jobs", agent_id=agent)
    clock.advance(1)
    secret = tenant.call("rotate_secret", principal_id=agent, version=1)["secret"]
    tenant.call("heartbeat", secret, scope="job", expect_within_seconds=60)
    clock.advance(1)
    tenant.call("heartbeat", scope="job", expect_within_seconds=60, disarm=True)
    clock.advance(1)
    tenant.call("revoke_principal", principal_id=agent, version=2)
    events = trail(tenant)
    assert what(events) == [
        (me, "revoke_principal", "principal", agent, 2, 3),
        (me, "disarm", "switch", "job", 1, 2),
        (me, "rotate_secret", "principal", agent, 1, 2),
        (me, "create_mailbox", "mailbox", f"agent:{agent}/jobs", None, None),
        (me, "register", "principal", agent, None, 1),
        (None, "bootstrap", "principal", me, None, 1),
    ]
    assert [e["at"] for e in events] == [f"2026-01-01T00:00:0{n}Z" for n in range(5, -1, -1)]
    assert secret not in json.dumps(events)


def test_what_anyone_may_do_for_themselves_is_not_an_operator_power(tenant: Tenant) -> None:
    agent, secret = tenant.register()
    registered = trail(tenant)
    tenant.call("create_mailbox", secret, box="mine")
    tenant.call("heartbeat", secret, scope="job", expect_within_seconds=60)
    tenant.call("heartbeat", secret, scope="job", expect_within_seconds=60, disarm=True)
    tenant.call("heartbeat", scope="ops", expect_within_seconds=60)
    tenant.call("heartbeat", scope="ops", expect_within_seconds=60, disarm=True)
    secret = tenant.call("rotate_secret", secret, version=1)["secret"]
    tenant.call("revoke_principal", secret, principal_id=agent, version=2)
    mine = tenant.call("rotate_secret", version=1)["secret"]
    assert trail(tenant, mine) == registered


def test_a_replay_or_a_refusal_records_nothing(tenant: Tenant) -> None:
    agent, _ = tenant.register()
    other, _ = tenant.register(kind="person", role="operator", name="op2")
    before = trail(tenant)
    tenant.call("rotate_secret", principal_id=agent, version=1, idempotency_key="r1")
    tenant.call("rotate_secret", principal_id=agent, version=1, idempotency_key="r1")
    assert len(trail(tenant)) == len(before) + 1
    assert (
        error_of(tenant.call, "rotate_secret", principal_id=other, version=1).code
        is ErrorCode.FORBIDDEN
    )
    assert error_of(tenant.call, "revoke_principal", principal_id=agent, version=1).code is (
        ErrorCode.VERSION_CONFLICT
    )
    tenant.call("create_mailbox", box="jobs", agent_id=agent)
    tenant.call("create_mailbox", box="jobs", agent_id=agent)  # exists: nothing changes
    assert len(trail(tenant)) == len(before) + 2


def test_the_deployer_is_recorded_without_a_principal(tenant: Tenant, clock: ManualClock) -> None:
    clock.advance(1)
    operator, secret = rotate_operator(tenant.app.store, clock, "acme", tenant.operator.id)
    assert what(trail(tenant, secret)) == [
        (None, "rotate_operator", "principal", operator.id, 1, 2),
        (None, "bootstrap", "principal", operator.id, None, 1),
    ]


def test_only_operators_read_the_trail_of_their_own_namespace(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    tenant.register()
    _, secret = tenant.register()
    assert error_of(tenant.call, "list_audit_events", secret).code is ErrorCode.FORBIDDEN
    theirs = trail(other_tenant)
    assert what(theirs) == [(None, "bootstrap", "principal", other_tenant.operator.id, None, 1)]
    assert len(trail(tenant)) == 3


def test_the_trail_pages_newest_first_with_a_cursor_for_its_namespace_only(
    tenant: Tenant, other_tenant: Tenant, clock: ManualClock
) -> None:
    for _ in range(6):
        tenant.register()
        clock.advance(1)
    whole = trail(tenant)
    assert len(whole) == 7
    pages, cursor = [], None
    while True:
        arguments: dict[str, Any] = {"limit": 3}
        if cursor is not None:
            arguments["cursor"] = cursor
        page = tenant.call("list_audit_events", **arguments)
        assert page["order"] == "newest_first"
        pages.append(page["events"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [e for p in pages for e in p] == whole
    first = tenant.call("list_audit_events", limit=3)["next_cursor"]
    for bad in (first, "%%%"):
        assert error_of(other_tenant.call, "list_audit_events", cursor=bad).code is (
            ErrorCode.INVALID_ARGUMENT
        )
    for limit in (0, 101):
        assert (
            error_of(tenant.call, "list_audit_events", limit=limit).code
            is ErrorCode.INVALID_ARGUMENT
        )


def test_the_trail_is_in_the_rest_mirror(tenant: Tenant, clock: ManualClock) -> None:
    clock.advance(1)
    tenant.register()
    headers = {"authorization": f"Bearer {tenant.operator_secret}"}
    request = HttpRequest("POST", "/v1/list_audit_events", headers, b'{"limit": 1}')
    response = Router(tenant.app, frozenset()).handle(request)
    assert response.status == 200
    assert json.loads(response.body)["events"][0]["action"] == "register"


def test_the_trail_filters_by_actor_target_and_kind_across_pages(
    tenant: Tenant, clock: ManualClock
) -> None:
    """A filtered page keeps only matching events, newest first, and its cursor goes on with
    the same filters (and no others)."""
    me = tenant.operator.id
    agents = []
    for n in range(5):
        clock.advance(1)
        agents.append(tenant.register(name=f"worker-{n}")[0])
    clock.advance(1)
    tenant.call("pause_switches", scope_prefix="job-", until_next_beat=True)
    target = agents[1]
    tenant.call("rotate_secret", principal_id=target, version=1)

    def listed(**filters: Any) -> list[tuple[Any, ...]]:
        events, cursor = [], None
        while True:
            arguments = {"limit": 2, **filters, **({"cursor": cursor} if cursor else {})}
            page = tenant.call("list_audit_events", **arguments)
            events += page["events"]
            cursor = page["next_cursor"]
            if cursor is None:
                return [(e["action"], e["target"]) for e in events]

    assert listed(target=target) == [("rotate_secret", target), ("register", target)]
    assert listed(target_kind="pause") == [("pause", "job-")]
    assert len(listed(actor=me, target_kind="principal")) == 6
    assert listed(actor=agents[0]) == []
    assert listed(target_kind="channel") == []
    page = tenant.call("list_audit_events", limit=1, target_kind="principal")
    refused = error_of(
        tenant.call, "list_audit_events", cursor=page["next_cursor"], target_kind="pause"
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    bad = error_of(tenant.call, "list_audit_events", target_kind="moon")
    assert bad.code is ErrorCode.INVALID_ARGUMENT


def test_an_actor_of_another_namespace_is_one_nobody_here_has_heard_of(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    stranger = other_tenant.operator.id
    refused = error_of(tenant.call, "list_audit_events", actor=stranger)
    assert refused.code is ErrorCode.NOT_FOUND
    missing = error_of(tenant.call, "list_audit_events", actor="per_" + "a" * 16)
    assert refused.to_dict() == missing.to_dict()
