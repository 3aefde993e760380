"""Leases: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.support import pending_claim
from vigil.clock import ManualClock
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.uow import ConditionFailed
from vigil.leases.records import Lease
from vigil.store import Store

HOLDER = "agt_aaaaaaaaaaaaaaaa"
OTHER = "agt_bbbbbbbbbbbbbbbb"


def lease(clock: ManualClock, resource: str = "repo", **changes: Any) -> Lease:
    now = clock.now()
    fields: dict[str, Any] = {
        "namespace": "acme",
        "resource": resource,
        "scope": None,
        "holder": HOLDER,
        "holder_label": "worker-1",
        "generation": 1,
        "state": "held",
        "acquired_at": now,
        "expires_at": now + timedelta(seconds=60),
        "version": 1,
    }
    return Lease(**{**fields, **changes})


def changed(current: Lease, **changes: Any) -> Lease:
    return current.model_copy(update={**changes, "version": current.version + 1})


def released(current: Lease, clock: ManualClock) -> Lease:
    return changed(current, state="released", released_at=clock.now(), released_by="holder")


def claim(clock: ManualClock, token: str = "t1") -> IdempotencyRecord:
    return pending_claim(clock, HOLDER, "acquire_lease", token)


def resources(leases: list[Lease]) -> list[str]:
    return [found.resource for found in leases]


def test_put_and_get_are_keyed_by_namespace_and_resource(store: Store, clock: ManualClock) -> None:
    first = lease(clock)
    store.commit([store.save_lease(first, None)])
    assert store.get_lease("acme", "repo") == first
    assert store.get_lease("globex", "repo") is None
    assert store.get_lease("acme", "repo2") is None


def test_writes_are_conditional_on_the_version(store: Store, clock: ManualClock) -> None:
    first = lease(clock)
    with pytest.raises(ConditionFailed):
        store.commit([store.save_lease(first, 1)])  # nothing stored yet
    store.commit([store.save_lease(first, None)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_lease(first, None)])  # exists already

    renewed = changed(first, expires_at=first.expires_at + timedelta(seconds=30))
    store.commit([store.save_lease(renewed, 1)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_lease(changed(first, holder=OTHER), 1)])  # read before the renewal
    assert store.get_lease("acme", "repo") == renewed


def test_the_scope_index_follows_grant_renewal_scope_change_and_release(
    store: Store, clock: ManualClock
) -> None:
    granted = lease(clock, scope="build")
    store.commit([store.save_lease(granted, None)])
    assert store.scope_leases("acme", "build") == [granted]

    renewed = changed(granted, expires_at=granted.expires_at + timedelta(seconds=60))
    store.commit([store.save_lease(renewed, granted.version)])
    assert store.scope_leases("acme", "build") == [renewed]

    moved = changed(renewed, scope="deploy")
    store.commit([store.save_lease(moved, renewed.version)])
    assert store.scope_leases("acme", "build") == []
    assert store.scope_leases("acme", "deploy") == [moved]

    unscoped = changed(moved, scope=None)
    store.commit([store.save_lease(unscoped, moved.version)])
    assert store.scope_leases("acme", "deploy") == []

    rescoped = changed(unscoped, scope="deploy")
    store.commit([store.save_lease(rescoped, unscoped.version)])
    assert store.scope_leases("acme", "deploy") == [rescoped]

    gone = released(rescoped, clock)
    store.commit([store.save_lease(gone, rescoped.version)])
    assert store.scope_leases("acme", "deploy") == []

    regranted = changed(gone, holder=OTHER, generation=2, state="held", scope="build")
    store.commit([store.save_lease(regranted, gone.version)])
    assert store.scope_leases("acme", "build") == [regranted]
    assert store.scope_leases("acme", "deploy") == []


def test_a_lost_write_leaves_the_scope_index_alone(store: Store, clock: ManualClock) -> None:
    granted = lease(clock, scope="build")
    store.commit([store.save_lease(granted, None)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_lease(changed(granted, scope="deploy"), 4)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_lease(released(granted, clock), granted.version)], claim(clock))
    assert store.scope_leases("acme", "build") == [granted]
    assert store.scope_leases("acme", "deploy") == []


def test_a_write_not_preceded_by_its_read_still_moves_the_scope_copy(
    store: Store, clock: ManualClock
) -> None:
    granted = lease(clock, scope="build")
    store.commit([store.save_lease(granted, None)])
    store.commit([store.save_lease(lease(clock, resource="other", scope="lint"), None)])
    assert store.get_lease("acme", "other") is not None
    store.commit([store.save_lease(changed(granted, scope="deploy"), granted.version)])
    assert store.scope_leases("acme", "build") == []
    assert resources(store.scope_leases("acme", "lint")) == ["other"]
    assert resources(store.scope_leases("acme", "deploy")) == ["repo"]


def test_scope_leases_lists_only_that_scope_of_that_namespace(
    store: Store, clock: ManualClock
) -> None:
    for resource, scope in [("b", "s"), ("a", "s"), ("c", "s#LEASE#x"), ("d", "s2")]:
        store.commit([store.save_lease(lease(clock, resource=resource, scope=scope), None)])
    store.commit(
        [store.save_lease(lease(clock, scope="s").model_copy(update={"namespace": "globex"}), None)]
    )
    assert resources(store.scope_leases("acme", "s")) == ["a", "b"]
    assert resources(store.scope_leases("acme", "s#LEASE#x")) == ["c"]
    assert store.scope_leases("acme", "nothing") == []


def test_the_longest_names_fit_the_keys(store: Store, clock: ManualClock) -> None:
    # 200 characters of four UTF-8 bytes each, for both the resource and the scope.
    resource, scope = "\U0001d518" * 200, "\U0001d51a" * 200
    granted = lease(clock, resource=resource, scope=scope)
    store.commit([store.save_lease(granted, None)])
    assert store.get_lease("acme", resource) == granted
    assert store.scope_leases("acme", scope) == [granted]
    assert store.unscoped_leases_held_by("acme", HOLDER) == 0
    store.commit([store.save_lease(changed(granted, scope=None), granted.version)])
    assert store.unscoped_leases_held_by("acme", HOLDER) == 1


def test_the_completion_is_atomic_with_the_lease_write(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    done = record.model_copy(update={"status": "completed", "result": {"ok": True}})
    granted = lease(clock, scope="build")
    store.commit([store.save_lease(granted, None)], done)
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"ok": True})

    # A claim that is no longer ours: neither the lease nor its scope copy changes.
    with pytest.raises(ConditionFailed):
        store.commit([store.save_lease(released(granted, clock), granted.version)], done)
    assert store.get_lease("acme", "repo") == granted
    assert store.scope_leases("acme", "build") == [granted]


def test_unscoped_leases_held_by_counts_only_held_unscoped_leases_of_that_holder(
    store: Store, clock: ManualClock
) -> None:
    store.commit([store.save_lease(lease(clock, resource="a"), None)])
    store.commit(
        [store.save_lease(lease(clock, resource="b", expires_at=clock.now()), None)]
    )  # lapsed: held
    store.commit([store.save_lease(lease(clock, resource="c", scope="build"), None)])
    done = lease(clock, resource="d")
    store.commit([store.save_lease(done, None)])
    store.commit([store.save_lease(released(done, clock), done.version)])
    store.commit([store.save_lease(lease(clock, resource="e", holder=OTHER), None)])
    store.commit(
        [
            store.save_lease(
                lease(clock, resource="f").model_copy(update={"namespace": "globex"}), None
            )
        ]
    )
    assert store.unscoped_leases_held_by("acme", HOLDER) == 2
    assert store.unscoped_leases_held_by("acme", OTHER) == 1
    assert store.unscoped_leases_held_by("globex", OTHER) == 0
