"""The unit of work, on the fake and on DynamoDB (moto) alike: the writes of one commit and the
completion of its idempotency claim land together, or none of them does."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from tests.contract.test_lease_store_contract import lease
from tests.contract.test_store_contract import claim, principal
from vigil.clock import ManualClock
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.store import Store


class Answer(BaseModel):
    text: str


def test_writes_of_different_capabilities_commit_together(store: Store, clock: ManualClock) -> None:
    agent, held = principal(clock), lease(clock)
    store.commit([store.add_principal(agent), store.save_lease(held, None)])
    assert store.get_principal("acme", agent.id) == agent
    assert store.get_lease("acme", held.resource) == held


def test_one_failed_condition_applies_none_of_the_writes(store: Store, clock: ManualClock) -> None:
    held = lease(clock)
    store.commit([store.save_lease(held, None)])
    agent = principal(clock)
    stale = held.changed(holder_label="late")
    with pytest.raises(ConditionFailed):
        # The lease is at version 1, not 2: the principal must not be created either.
        store.commit([store.add_principal(agent), store.save_lease(stale.changed(), 2)])
    assert store.get_principal("acme", agent.id) is None
    assert store.get_lease("acme", held.resource) == held


def test_the_completion_lands_with_the_writes(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    agent = principal(clock)
    store.commit([store.add_principal(agent)], record.completed({"id": agent.id}))
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"id": agent.id})


def test_a_lost_claim_refuses_the_writes_too(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    clock.advance(61)  # the lock lapsed and another attempt took the key over
    assert store.claim_idempotency(claim(clock, token="t2"), clock.now()) is None
    agent = principal(clock)
    with pytest.raises(ConditionFailed):
        store.commit([store.add_principal(agent)], record.completed({"id": agent.id}))
    assert store.get_principal("acme", agent.id) is None


def test_a_unit_of_work_completes_its_claim_once(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    uow = UnitOfWork(store, record)
    first, second = principal(clock, name="first"), principal(clock, name="second")
    uow.commit(store.add_principal(first), result=Answer(text="first"))
    # A later commit of the same call carries no completion, and finish writes nothing more.
    uow.commit(store.add_principal(second), result=Answer(text="second"))
    uow.finish(Answer(text="finish"))
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert replay.result == {"text": "first"}
    assert store.get_principal("acme", second.id) == second


def test_a_call_that_wrote_nothing_completes_its_claim_when_it_finishes(
    store: Store, clock: ManualClock
) -> None:
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    UnitOfWork(store, record).finish(Answer(text="nothing to do"))
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"text": "nothing to do"})


def test_a_failed_commit_keeps_the_claim_for_the_next_attempt(
    store: Store, clock: ManualClock
) -> None:
    held = lease(clock)
    store.commit([store.save_lease(held, None)])
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    uow = UnitOfWork(store, record)
    with pytest.raises(ConditionFailed):
        uow.commit(store.save_lease(held.changed(), None), result=Answer(text="lost"))
    uow.commit(store.save_lease(held.changed(), held.version), result=Answer(text="won"))
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert replay.result == {"text": "won"}
