"""Leases: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.contract.test_switch_contract import pause_of, switch
from tests.support import pending_claim
from vigil.clock import ManualClock
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.uow import ConditionFailed
from vigil.leases.records import Lease, granted
from vigil.store import Store
from vigil.stores.backfill import backfill_indexes
from vigil.stores.dynamo import DynamoStore

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
    # 200 characters of four UTF-8 bytes each, for both the resource and the scope, in the
    # longest namespace (NAMESPACE_PATTERN): the lease's partition key is 873 bytes.
    namespace, resource, scope = "n" * 63, "\U0001d518" * 200, "\U0001d51a" * 200
    granted = lease(clock, resource=resource, scope=scope).model_copy(
        update={"namespace": namespace}
    )
    store.commit([store.save_lease(granted, None)])
    assert store.get_lease(namespace, resource) == granted
    assert store.scope_leases(namespace, scope) == [granted]
    assert store.unscoped_leases_held_by(namespace, HOLDER) == 0
    store.commit([store.save_lease(changed(granted, scope=None), granted.version)])
    assert store.unscoped_leases_held_by(namespace, HOLDER) == 1


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


def test_only_held_unscoped_leases_are_in_the_holder_index(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    """A burst of one holder's deaths releases its scoped leases by the thousand: none of
    those writes may land on the holder's partition of the index."""
    scoped = lease(clock, resource="s", scope="build")
    unscoped = lease(clock, resource="u")
    for held in (scoped, unscoped):
        dynamo_store.commit([dynamo_store.save_lease(held, None)])
    indexed = dynamo_store.client.scan(TableName=dynamo_store.table, IndexName="gsi1")["Items"]
    assert [item["gsi1sk"]["S"] for item in indexed] == ["LEASE#u"]
    # A scoped lease stored with the holder's keys, as before: left out of the count.
    store_at_old_key(dynamo_store, lease(clock, resource="old", scope="build"))
    assert dynamo_store.unscoped_leases_held_by("acme", HOLDER) == 1


# -- DynamoDB: leases stored in the namespace's partition, before each had its own -----------
def store_at_old_key(store: DynamoStore, stored: Lease) -> None:
    """Writes ``stored`` as a deployment from before the move did: in the namespace's partition,
    and its scope copy without ``own_partition``."""
    item: dict[str, Any] = {
        "pk": {"S": f"NS#{stored.namespace}"},
        "sk": {"S": f"LEASE#{stored.resource}"},
        "version": {"N": str(stored.version)},
        "doc": {"S": stored.model_dump_json()},
    }
    if stored.state == "held":
        item["gsi1pk"] = {"S": f"HOLDER#{stored.namespace}#{stored.holder}"}
        item["gsi1sk"] = {"S": f"LEASE#{stored.resource}"}
        if stored.scope is not None:
            item["scope"] = {"S": stored.scope}
            copy = {
                "pk": {"S": f"NS#{stored.namespace}#SCOPE#{stored.scope}"},
                "sk": {"S": f"LEASE#{stored.resource}"},
                "doc": {"S": stored.model_dump_json()},
            }
            store.client.put_item(TableName=store.table, Item=copy)
    store.client.put_item(TableName=store.table, Item=item)


def stored_item(store: DynamoStore, pk: str, sk: str) -> dict[str, Any] | None:
    key = {"pk": {"S": pk}, "sk": {"S": sk}}
    found: dict[str, Any] | None = store.client.get_item(
        TableName=store.table, Key=key, ConsistentRead=True
    ).get("Item")
    return found


def assert_moved(store: DynamoStore, current: Lease) -> None:
    """``current`` is stored in its own partition, and the namespace's holds no lease of it,
    only the marker a move leaves."""
    own = stored_item(store, f"NS#acme#LEASE#{current.resource}", "LEASE")
    assert own is not None
    assert Lease.model_validate_json(own["doc"]["S"]) == current
    marker = stored_item(store, "NS#acme", f"LEASE#{current.resource}")
    assert marker is not None
    assert set(marker) == {"pk", "sk", "ttl"}


def other_process(store: DynamoStore) -> DynamoStore:
    """The same table through an adapter that has read nothing yet."""
    return DynamoStore(store.client, store.table)


def test_a_lease_stored_at_the_old_key_is_found_and_continues_its_generation(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    old = lease(clock, generation=7, version=3)
    store_at_old_key(dynamo_store, old)
    assert dynamo_store.get_lease("acme", "repo") == old
    assert dynamo_store.unscoped_leases_held_by("acme", HOLDER) == 1

    renewed = old.renewed(HOLDER, 7, 120, clock.now())
    dynamo_store.commit([dynamo_store.save_lease(renewed, old.version)])
    assert_moved(dynamo_store, renewed)
    assert dynamo_store.get_lease("acme", "repo") == renewed
    assert dynamo_store.unscoped_leases_held_by("acme", HOLDER) == 1

    clock.advance(10)
    gone = renewed.released("holder", clock.now())
    dynamo_store.commit([dynamo_store.save_lease(gone, renewed.version)])
    assert dynamo_store.get_lease("acme", "repo") == gone
    assert dynamo_store.unscoped_leases_held_by("acme", HOLDER) == 0

    again = granted(
        dynamo_store.get_lease("acme", "repo"), "acme", "repo", None, OTHER, None, 60, clock.now()
    )
    assert again.generation == 8
    dynamo_store.commit([dynamo_store.save_lease(again, gone.version)])
    assert_moved(dynamo_store, again)


def test_a_lease_at_the_old_key_read_through_its_scope_is_released_and_moved(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    """As a dead-man switch releases it: read through the scope's copy, by a process that did
    not read the lease itself, and by one that read nothing at all."""
    first = lease(clock, resource="a", scope="build", generation=4, version=6)
    second = lease(clock, resource="b", scope="build", generation=2, version=2)
    for stored in (first, second):
        store_at_old_key(dynamo_store, stored)
    assert dynamo_store.scope_leases("acme", "build") == [first, second]

    clock.advance(5)
    dynamo_store.commit([dynamo_store.save_lease(first.released("expiry:build", clock.now()), 6)])
    elsewhere = other_process(dynamo_store)
    elsewhere.commit([elsewhere.save_lease(second.released("expiry:build", clock.now()), 2)])
    assert dynamo_store.scope_leases("acme", "build") == []
    for stored in (first, second):
        current = dynamo_store.get_lease("acme", stored.resource)
        assert current is not None
        assert (current.state, current.generation) == ("released", stored.generation)
        assert_moved(dynamo_store, current)


def test_the_copy_of_a_moved_lease_says_where_the_lease_is(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    old = lease(clock, scope="build", generation=3, version=5)
    store_at_old_key(dynamo_store, old)
    renewed = old.renewed(HOLDER, 3, 60, clock.now())
    dynamo_store.commit([dynamo_store.save_lease(renewed, old.version)])
    # Read through the copy, as a death would, and released: a write at its own key.
    (listed,) = other_process(dynamo_store).scope_leases("acme", "build")
    dynamo_store.commit([dynamo_store.save_lease(listed.released("holder", clock.now()), 6)])
    current = dynamo_store.get_lease("acme", "repo")
    assert current is not None
    assert (current.state, current.version) == ("released", 7)


def test_two_moves_from_one_read_of_the_old_key_have_one_winner(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    old = lease(clock, scope="build", generation=5, version=2, expires_at=clock.now())
    store_at_old_key(dynamo_store, old)
    one, two = dynamo_store, other_process(dynamo_store)
    read_one, read_two = one.get_lease("acme", "repo"), two.get_lease("acme", "repo")
    assert read_one == read_two == old

    clock.advance(1)
    now = clock.now()
    mine = granted(read_one, "acme", "repo", "build", OTHER, "worker-2", 60, now)
    theirs = granted(read_two, "acme", "repo", "deploy", "agt_cccccccccccccccc", None, 60, now)
    assert mine.generation == theirs.generation == 6
    one.commit([one.save_lease(mine, old.version)])
    with pytest.raises(ConditionFailed):
        two.commit([two.save_lease(theirs, old.version)])
    assert dynamo_store.get_lease("acme", "repo") == mine
    assert_moved(dynamo_store, mine)
    assert dynamo_store.scope_leases("acme", "build") == [mine]
    assert dynamo_store.scope_leases("acme", "deploy") == []


def test_a_first_grant_never_shadows_a_lease_at_the_old_key(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    old = lease(clock, generation=9, version=4)
    # A read that saw nothing (before the lease was stored), then a grant of generation 1.
    stale = other_process(dynamo_store)
    assert stale.get_lease("acme", "repo") is None
    store_at_old_key(dynamo_store, old)
    with pytest.raises(ConditionFailed):
        stale.commit([stale.save_lease(lease(clock, holder=OTHER), None)])
    assert dynamo_store.get_lease("acme", "repo") == old
    assert stored_item(dynamo_store, "NS#acme#LEASE#repo", "LEASE") is None


def test_the_backfill_moves_every_lease_at_the_old_key_once(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    held = lease(clock, resource="a", scope="build", generation=2, version=3)
    done = released(lease(clock, resource="b", generation=6, version=8), clock)
    unscoped = lease(clock, resource="c", generation=1, version=1)
    for stored in (held, done, unscoped):
        store_at_old_key(dynamo_store, stored)
    # Already in its own partition, and never overwritten by a lease at the old key (as code
    # from before the move, still running during the deploy, could leave one); and rows
    # elsewhere whose sort keys read like a lease's.
    own = lease(clock, resource="d")
    dynamo_store.commit([dynamo_store.save_lease(own, None)])
    store_at_old_key(dynamo_store, lease(clock, resource="d", holder=OTHER))
    dynamo_store.commit([dynamo_store.save_switch(switch(clock, scope="LEASE#a"), None)])
    dynamo_store.commit([dynamo_store.save_pause(pause_of(clock, "LEASE#"), None)])
    # One changed since the scan (by a process still running the code from before the move)
    # is left to the next write or run.
    scanned = stored_item(dynamo_store, "NS#acme", "LEASE#c")
    assert scanned is not None
    renewed = unscoped.renewed(HOLDER, 1, 300, clock.now())
    store_at_old_key(dynamo_store, renewed)
    assert not dynamo_store.move_lease(scanned)
    assert dynamo_store.get_lease("acme", "c") == renewed

    client, table = dynamo_store.client, dynamo_store.table
    assert backfill_indexes(client, table) == (0, 0, 0, 3, 0, 0)
    for current in (held, done, renewed):
        assert dynamo_store.get_lease("acme", current.resource) == current
        assert_moved(dynamo_store, current)
    copy = stored_item(dynamo_store, "NS#acme#SCOPE#build", "LEASE#a")
    assert copy is not None
    assert copy["own_partition"] == {"BOOL": True}
    assert dynamo_store.scope_leases("acme", "build") == [held]
    assert dynamo_store.get_lease("acme", "d") == own
    assert dynamo_store.unscoped_leases_held_by("acme", HOLDER) == 2  # c and d
    assert backfill_indexes(client, table) == (0, 0, 0, 0, 0, 0)


class MovedBetweenReads(DynamoStore):
    """Sees another process move the lease between its read of the lease's key, which finds
    nothing, and its read of the old key."""

    def _get(self, pk: str, sk: str, *, consistent: bool = True) -> dict[str, Any] | None:
        found = super()._get(pk, sk, consistent=consistent)
        if pk == "NS#acme#LEASE#repo" and found is None and not getattr(self, "moved", False):
            self.moved = True
            mover = other_process(self)
            current = mover.get_lease("acme", "repo")
            assert current is not None
            renewed = current.renewed(HOLDER, current.generation, 60, current.acquired_at)
            mover.commit([mover.save_lease(renewed, current.version)])
        return found


def test_a_read_that_meets_a_move_finds_the_lease_at_its_key(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    old = lease(clock, generation=4, version=2)
    store_at_old_key(dynamo_store, old)
    reader = MovedBetweenReads(dynamo_store.client, dynamo_store.table)
    found = reader.get_lease("acme", "repo")
    assert found is not None
    assert (found.generation, found.version) == (4, 3)
    reader.commit([reader.save_lease(found.released("holder", clock.now()), found.version)])
    assert dynamo_store.get_lease("acme", "repo") == found.released("holder", clock.now())
