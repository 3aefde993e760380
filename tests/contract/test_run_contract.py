"""Runs: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.support import pending_claim
from vigil.clock import ManualClock
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.uow import ConditionFailed
from vigil.runs.records import Run
from vigil.store import Store

RUN_ID = "00000000-0000-4000-8000-000000000001"
HOLDER = "agt_aaaaaaaaaaaaaaaa"
OTHER = "agt_bbbbbbbbbbbbbbbb"


def run(clock: ManualClock, **changes: Any) -> Run:
    now = clock.now()
    fields: dict[str, Any] = {
        "namespace": "acme",
        "run_id": RUN_ID,
        "holder": HOLDER,
        "generation": 1,
        "expires_at": now + timedelta(seconds=60),
        "started_at": now,
        "version": 1,
    }
    return Run(**{**fields, **changes})


def changed(current: Run, **changes: Any) -> Run:
    return current.model_copy(update={**changes, "version": current.version + 1})


def claim(clock: ManualClock, token: str = "t1") -> IdempotencyRecord:
    return pending_claim(clock, HOLDER, "finish_run", token)


def test_put_and_get_are_keyed_by_namespace_and_run_id(store: Store, clock: ManualClock) -> None:
    first = run(clock)
    store.commit([store.save_run(first, None)])
    assert store.get_run("acme", RUN_ID) == first
    assert store.get_run("globex", RUN_ID) is None
    assert store.get_run("acme", "00000000-0000-4000-8000-000000000002") is None


def test_writes_are_conditional_on_the_version(store: Store, clock: ManualClock) -> None:
    first = run(clock)
    with pytest.raises(ConditionFailed):
        store.commit([store.save_run(first, 1)])  # nothing stored yet
    store.commit([store.save_run(first, None)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_run(first, None)])  # exists already

    renewed = changed(first, expires_at=first.expires_at + timedelta(seconds=30))
    store.commit([store.save_run(renewed, 1)])
    with pytest.raises(ConditionFailed):
        store.commit(
            [store.save_run(changed(first, holder=OTHER, generation=2), 1)]
        )  # read before the renewal
    assert store.get_run("acme", RUN_ID) == renewed


def test_another_namespace_may_use_the_same_run_id(store: Store, clock: ManualClock) -> None:
    mine = run(clock)
    theirs = run(clock, namespace="globex", holder=OTHER)
    store.commit([store.save_run(mine, None)])
    store.commit([store.save_run(theirs, None)])
    assert store.get_run("acme", RUN_ID) == mine
    assert store.get_run("globex", RUN_ID) == theirs


def test_a_finished_run_keeps_its_outcome_and_result(store: Store, clock: ManualClock) -> None:
    first = run(clock)
    store.commit([store.save_run(first, None)])
    result = {"files": ["a.py", "ü.md"], "stats": {"passed": 12, "ratio": 0.5, "flaky": None}}
    done = changed(
        first, finished_at=clock.now(), expires_at=clock.now(), outcome="failed", result=result
    )
    store.commit([store.save_run(done, first.version)])
    stored = store.get_run("acme", RUN_ID)
    assert stored == done
    assert stored is not None
    assert stored.state(clock.now()) == "finished"


def test_the_completion_is_atomic_with_the_run_write(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    done = record.model_copy(update={"status": "completed", "result": {"ok": True}})
    first = run(clock)
    store.commit([store.save_run(first, None)], done)
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"ok": True})

    # A claim that is no longer ours: the run does not change.
    with pytest.raises(ConditionFailed):
        store.commit([store.save_run(changed(first, outcome="succeeded"), first.version)], done)
    assert store.get_run("acme", RUN_ID) == first
