"""The audit trail: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.test_store_contract import principal
from vigil.audit.records import AuditEvent
from vigil.clock import ManualClock
from vigil.kit.uow import ConditionFailed
from vigil.store import Store

OPERATOR = "per_aaaaaaaaaaaaaaaa"


def event(clock: ManualClock, namespace: str = "acme", **changes: Any) -> AuditEvent:
    fields: dict[str, Any] = {
        "namespace": namespace,
        "actor": OPERATOR,
        "action": "rotate_secret",
        "target_kind": "principal",
        "target": "agt_bbbbbbbbbbbbbbbb",
        "before_version": 1,
        "after_version": 2,
        "now": clock.now(),
    }
    return AuditEvent.of(**{**fields, **changes})


def test_events_read_newest_first_a_page_at_a_time(store: Store, clock: ManualClock) -> None:
    made = []
    for n in range(5):
        made.append(event(clock, target=f"job-{n} ✓", target_kind="switch"))
        clock.advance(1)
    store.commit([store.add_audit_event(e) for e in made])
    newest_first = list(reversed(made))
    first = store.audit_events("acme", None, 2)
    assert first == newest_first[:2]
    rest = store.audit_events("acme", first[-1].position, 10)
    assert rest == newest_first[2:]
    assert store.audit_events("acme", made[0].position, 10) == []


def test_events_at_the_same_moment_are_all_kept_in_one_order(
    store: Store, clock: ManualClock
) -> None:
    same = [event(clock) for _ in range(4)]
    store.commit([store.add_audit_event(e) for e in same])
    listed = store.audit_events("acme", None, 10)
    assert sorted(e.id for e in listed) == sorted(e.id for e in same)
    assert [e.position for e in listed] == sorted((e.position for e in same), reverse=True)
    walked = store.audit_events("acme", None, 1)
    while len(walked) < 4:
        walked += store.audit_events("acme", walked[-1].position, 1)
    assert walked == listed


def test_each_namespace_reads_its_own_trail(store: Store, clock: ManualClock) -> None:
    mine, theirs = event(clock), event(clock, namespace="globex")
    store.commit([store.add_audit_event(mine), store.add_audit_event(theirs)])
    assert store.audit_events("acme", None, 10) == [mine]
    assert store.audit_events("globex", None, 10) == [theirs]
    assert store.audit_events("initech", None, 10) == []


def test_an_event_is_never_overwritten(store: Store, clock: ManualClock) -> None:
    first = event(clock)
    store.commit([store.add_audit_event(first)])
    forged = first.model_copy(update={"actor": "per_cccccccccccccccc"})
    with pytest.raises(ConditionFailed):
        store.commit([store.add_audit_event(forged)])
    assert store.audit_events("acme", None, 10) == [first]


def test_an_event_lands_with_its_change_or_not_at_all(store: Store, clock: ManualClock) -> None:
    agent = principal(clock)
    store.commit([store.add_principal(agent)])
    with pytest.raises(ConditionFailed):
        # The principal exists already: the change fails, and its event with it.
        store.commit([store.add_principal(agent), store.add_audit_event(event(clock))])
    assert store.audit_events("acme", None, 10) == []
    recorded = event(clock, action="revoke_principal")
    store.commit(
        [store.save_principal(agent.revoked(clock.now())), store.add_audit_event(recorded)]
    )
    assert store.audit_events("acme", None, 10) == [recorded]
