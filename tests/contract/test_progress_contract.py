"""Progress reports: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.support import pending_claim
from vigil.clock import ManualClock, to_ms
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.uow import ConditionFailed
from vigil.progress.records import PROGRESS_BOUNDS, ProgressReport
from vigil.store import Store
from vigil.switches.records import Switch

REPORTER = "agt_aaaaaaaaaaaaaaaa"
OTHER = "agt_bbbbbbbbbbbbbbbb"


def report(clock: ManualClock, **changes: Any) -> ProgressReport:
    fields: dict[str, Any] = {
        "namespace": "acme",
        "reported_by": REPORTER,
        "scope": None,
        "progress": {"step": 1, "note": "naïve ✓", "parts": [1, 2.5, None, True]},
        "reported_at": to_ms(clock.now()),
    }
    return ProgressReport(**{**fields, **changes})


def armed_switch(clock: ManualClock, scope: str) -> Switch:
    now = to_ms(clock.now())
    deadline = now + timedelta(seconds=30)
    return Switch(
        namespace="acme",
        scope=scope,
        holder=REPORTER,
        agent_id=None,
        state="armed",
        generation=1,
        deadline=deadline,
        expect_within_seconds=30,
        on_expiry=["mark_failed"],
        notify_address=None,
        armed_at=now,
        last_beat_at=now,
        beats=1,
        alarm_due=deadline,
        version=1,
    )


def claim(clock: ManualClock, token: str = "t1") -> IdempotencyRecord:
    return pending_claim(clock, REPORTER, "report_progress", token)


def test_a_report_is_its_reporters_latest_in_its_namespace_only(
    store: Store, clock: ManualClock
) -> None:
    first = report(clock)
    store.commit([store.save_progress(first, True)])
    assert store.latest_progress("acme", REPORTER) == first
    assert store.latest_progress("acme", OTHER) is None
    assert store.latest_progress("globex", REPORTER) is None
    assert store.scope_progress("acme", "job") is None


def test_a_scoped_report_is_also_the_scopes_latest(store: Store, clock: ManualClock) -> None:
    mine = report(clock, scope="job#1")
    store.commit([store.save_progress(mine, True)])
    assert store.scope_progress("acme", "job#1") == mine
    assert store.latest_progress("acme", REPORTER) == mine
    assert store.scope_progress("acme", "job") is None
    assert store.scope_progress("globex", "job#1") is None

    clock.advance(1)
    theirs = report(clock, reported_by=OTHER, scope="job#1", progress={"step": 9})
    store.commit([store.save_progress(theirs, True)])
    assert store.scope_progress("acme", "job#1") == theirs
    assert store.latest_progress("acme", REPORTER) == mine

    clock.advance(1)
    unscoped = report(clock, progress={"step": 2})
    store.commit([store.save_progress(unscoped, True)])
    assert store.latest_progress("acme", REPORTER) == unscoped
    assert store.scope_progress("acme", "job#1") == theirs  # an unscoped report leaves it


def test_a_later_report_replaces_and_an_earlier_one_is_refused(
    store: Store, clock: ManualClock
) -> None:
    early = report(clock, scope="job")
    clock.advance(2)
    late = report(clock, scope="job", progress={"step": 2})
    store.commit([store.save_progress(late, True)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_progress(early, True)])
    assert store.latest_progress("acme", REPORTER) == late
    assert store.scope_progress("acme", "job") == late

    # Refused as a whole: a newer report of the scope keeps the reporter's own unchanged too.
    clock.advance(1)
    other = report(clock, reported_by=OTHER, scope="job", progress={"step": 3})
    store.commit([store.save_progress(other, True)])
    mine = report(clock, scope="job", progress={"step": 4}).model_copy(
        update={"reported_at": late.reported_at + timedelta(milliseconds=500)}
    )
    with pytest.raises(ConditionFailed):
        store.commit([store.save_progress(mine, True)])
    assert store.latest_progress("acme", REPORTER) == late

    same_time = report(clock, scope="job", progress={"step": 5})
    store.commit([store.save_progress(same_time, True)])  # a tie goes to the last writer
    assert store.scope_progress("acme", "job") == same_time


def test_the_largest_report_and_longest_scope_fit(store: Store, clock: ManualClock) -> None:
    scope = "\U0001d51a" * 200
    big = report(clock, scope=scope, progress={f"k{i:02}": "\U0001d518" * 38 for i in range(50)})
    size = PROGRESS_BOUNDS.size(big.progress)
    assert PROGRESS_BOUNDS.max_bytes - 512 < size <= PROGRESS_BOUNDS.max_bytes
    store.commit([store.save_progress(big, True)])
    assert store.scope_progress("acme", scope) == big


def test_the_completion_is_atomic_with_the_report(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    done = record.model_copy(update={"status": "completed", "result": {"ok": True}})
    first = report(clock, scope="job")
    store.commit([store.save_progress(first, True)], done)
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"ok": True})

    # A claim that is no longer ours: neither place changes.
    clock.advance(1)
    with pytest.raises(ConditionFailed):
        store.commit(
            [store.save_progress(report(clock, scope="job", progress={"x": 1}), True)], done
        )
    assert store.latest_progress("acme", REPORTER) == first
    assert store.scope_progress("acme", "job") == first


def test_a_report_not_for_its_scope_stays_the_reporters(store: Store, clock: ManualClock) -> None:
    held = report(clock, scope="job")
    store.commit([store.save_progress(held, True)])
    clock.advance(1)
    elsewhere = report(clock, reported_by=OTHER, scope="job", progress={"step": 9})
    store.commit([store.save_progress(elsewhere, False)])
    assert store.latest_progress("acme", OTHER) == elsewhere
    assert store.scope_progress("acme", "job") == held


def test_a_scope_report_can_depend_on_holding_the_switch(store: Store, clock: ManualClock) -> None:
    armed = armed_switch(clock, "job")
    store.commit([store.save_switch(armed, None)])
    mine = report(clock, scope="job")
    store.commit([store.save_progress(mine, True), store.require_holder("acme", "job", REPORTER)])
    assert store.scope_progress("acme", "job") == mine

    # Another principal, a scope with no switch, and a fired switch: nothing is stored.
    clock.advance(1)
    late = report(clock, scope="job", progress={"step": 2})
    for scope, holder in (("job", OTHER), ("none", REPORTER)):
        with pytest.raises(ConditionFailed):
            store.commit(
                [store.save_progress(late, True), store.require_holder("acme", scope, holder)]
            )
    store.commit([store.save_switch(armed.changed(state="fired"), armed.version)])
    with pytest.raises(ConditionFailed):
        store.commit(
            [store.save_progress(late, True), store.require_holder("acme", "job", REPORTER)]
        )
    assert store.latest_progress("acme", REPORTER) == mine
    assert store.scope_progress("acme", "job") == mine


def test_a_scope_is_held_by_whoever_armed_its_switch_until_it_fires(
    store: Store, clock: ManualClock
) -> None:
    assert store.scope_holder("acme", "job") is None
    armed = armed_switch(clock, "job")
    store.commit([store.save_switch(armed, None)])
    assert store.scope_holder("acme", "job") == REPORTER
    assert store.scope_holder("globex", "job") is None
    disarmed = armed.changed(state="disarmed")
    store.commit([store.save_switch(disarmed, armed.version)])
    assert store.scope_holder("acme", "job") == REPORTER
    store.commit([store.save_switch(disarmed.changed(state="fired"), disarmed.version)])
    assert store.scope_holder("acme", "job") is None
