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


def claim(clock: ManualClock, token: str = "t1") -> IdempotencyRecord:
    return pending_claim(clock, REPORTER, "report_progress", token)


def test_a_report_is_its_reporters_latest_in_its_namespace_only(
    store: Store, clock: ManualClock
) -> None:
    first = report(clock)
    store.commit([store.save_progress(first)])
    assert store.latest_progress("acme", REPORTER) == first
    assert store.latest_progress("acme", OTHER) is None
    assert store.latest_progress("globex", REPORTER) is None
    assert store.scope_progress("acme", "job") is None


def test_a_scoped_report_is_also_the_scopes_latest(store: Store, clock: ManualClock) -> None:
    mine = report(clock, scope="job#1")
    store.commit([store.save_progress(mine)])
    assert store.scope_progress("acme", "job#1") == mine
    assert store.latest_progress("acme", REPORTER) == mine
    assert store.scope_progress("acme", "job") is None
    assert store.scope_progress("globex", "job#1") is None

    clock.advance(1)
    theirs = report(clock, reported_by=OTHER, scope="job#1", progress={"step": 9})
    store.commit([store.save_progress(theirs)])
    assert store.scope_progress("acme", "job#1") == theirs
    assert store.latest_progress("acme", REPORTER) == mine

    clock.advance(1)
    unscoped = report(clock, progress={"step": 2})
    store.commit([store.save_progress(unscoped)])
    assert store.latest_progress("acme", REPORTER) == unscoped
    assert store.scope_progress("acme", "job#1") == theirs  # an unscoped report leaves it


def test_a_later_report_replaces_and_an_earlier_one_is_refused(
    store: Store, clock: ManualClock
) -> None:
    early = report(clock, scope="job")
    clock.advance(2)
    late = report(clock, scope="job", progress={"step": 2})
    store.commit([store.save_progress(late)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_progress(early)])
    assert store.latest_progress("acme", REPORTER) == late
    assert store.scope_progress("acme", "job") == late

    # Refused as a whole: a newer report of the scope keeps the reporter's own unchanged too.
    clock.advance(1)
    other = report(clock, reported_by=OTHER, scope="job", progress={"step": 3})
    store.commit([store.save_progress(other)])
    mine = report(clock, scope="job", progress={"step": 4}).model_copy(
        update={"reported_at": late.reported_at + timedelta(milliseconds=500)}
    )
    with pytest.raises(ConditionFailed):
        store.commit([store.save_progress(mine)])
    assert store.latest_progress("acme", REPORTER) == late

    same_time = report(clock, scope="job", progress={"step": 5})
    store.commit([store.save_progress(same_time)])  # a tie goes to the last writer
    assert store.scope_progress("acme", "job") == same_time


def test_the_largest_report_and_longest_scope_fit(store: Store, clock: ManualClock) -> None:
    scope = "\U0001d51a" * 200
    big = report(clock, scope=scope, progress={f"k{i:02}": "\U0001d518" * 38 for i in range(50)})
    size = PROGRESS_BOUNDS.size(big.progress)
    assert PROGRESS_BOUNDS.max_bytes - 512 < size <= PROGRESS_BOUNDS.max_bytes
    store.commit([store.save_progress(big)])
    assert store.scope_progress("acme", scope) == big


def test_the_completion_is_atomic_with_the_report(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    done = record.model_copy(update={"status": "completed", "result": {"ok": True}})
    first = report(clock, scope="job")
    store.commit([store.save_progress(first)], done)
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"ok": True})

    # A claim that is no longer ours: neither place changes.
    clock.advance(1)
    with pytest.raises(ConditionFailed):
        store.commit([store.save_progress(report(clock, scope="job", progress={"x": 1}))], done)
    assert store.latest_progress("acme", REPORTER) == first
    assert store.scope_progress("acme", "job") == first
