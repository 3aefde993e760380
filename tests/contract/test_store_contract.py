"""The in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vigil.clock import ManualClock
from vigil.identity.dynamo import DynamoIdentity
from vigil.identity.records import Namespace, Principal, hash_secret
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.principals import new_principal_id
from vigil.kit.uow import ConditionFailed
from vigil.store import Store
from vigil.stores.backfill import backfill_indexes
from vigil.stores.dynamo import DynamoStore


def principal(
    clock: ManualClock, kind: str = "agent", name: str = "a", ns: str = "acme"
) -> Principal:
    now = clock.now()
    return Principal(
        namespace=ns,
        id=new_principal_id(kind),  # type: ignore[arg-type]
        kind=kind,  # type: ignore[arg-type]
        name=name,
        role="worker",
        status="active",
        secret_hash=hash_secret("x"),
        created_at=now,
        updated_at=now,
        created_by=None,
        version=1,
    )


def claim(
    clock: ManualClock, key: str = "k", token: str = "t1", fp: str = "f"
) -> IdempotencyRecord:
    now = clock.now()
    return IdempotencyRecord(
        namespace="acme",
        principal_id="agt_aaaaaaaaaaaaaaaa",
        tool="register",
        key=key,
        fingerprint=fp,
        status="pending",
        token=token,
        locked_until=now + timedelta(seconds=60),
        expires_at=now + timedelta(hours=24),
    )


def test_namespace_is_created_once(store: Store, clock: ManualClock) -> None:
    store.commit([store.add_namespace(Namespace(name="acme", created_at=clock.now()))])
    with pytest.raises(ConditionFailed):
        store.commit([store.add_namespace(Namespace(name="acme", created_at=clock.now()))])
    found = store.get_namespace("acme")
    assert found is not None
    assert found.name == "acme"
    assert store.get_namespace("other") is None


def test_principal_create_get_and_conditional_update(store: Store, clock: ManualClock) -> None:
    p = principal(clock)
    store.commit([store.add_principal(p)])
    with pytest.raises(ConditionFailed):
        store.commit([store.add_principal(p)])
    assert store.get_principal("acme", p.id) == p
    assert store.get_principal("globex", p.id) is None

    changed = p.model_copy(update={"name": "b", "version": 2})
    store.commit([store.save_principal(changed)])
    assert store.get_principal("acme", p.id) == changed
    stale = p.model_copy(update={"name": "c", "version": 2})
    with pytest.raises(ConditionFailed):
        store.commit([store.save_principal(stale)])
    assert store.get_principal("acme", p.id) == changed


def test_list_principals_filters_kind_and_namespace_and_pages(
    store: Store, clock: ManualClock
) -> None:
    agents = sorted((principal(clock) for _ in range(5)), key=lambda p: p.id)
    for p in agents:
        store.commit([store.add_principal(p)])
    store.commit([store.add_principal(principal(clock, kind="person"))])
    store.commit([store.add_principal(principal(clock, ns="globex"))])

    first = store.list_principals("acme", "agent", None, 3)
    rest = store.list_principals("acme", "agent", first[-1].id, 3)
    assert [p.id for p in first + rest] == [p.id for p in agents]
    assert len(store.list_principals("acme", "person", None, 10)) == 1


def test_idempotency_claim_replay_and_takeover(store: Store, clock: ManualClock) -> None:
    first = claim(clock)
    assert store.claim_idempotency(first, clock.now()) is None
    # A second claim while the first is pending and locked sees the pending record.
    seen = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert seen is not None
    assert (seen.status, seen.token) == ("pending", "t1")

    # After the lock lapses, the crashed attempt's claim is taken over by a new token.
    clock.advance(61)
    assert store.claim_idempotency(claim(clock, token="t3"), clock.now()) is None
    # The crashed attempt can no longer complete: its token lost.
    done = first.model_copy(update={"status": "completed", "result": {"x": 1}})
    with pytest.raises(ConditionFailed):
        store.commit([], done)


def test_completion_is_atomic_with_the_domain_write(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    done = record.model_copy(update={"status": "completed", "result": {"ok": True}})
    p = principal(clock)
    store.commit([store.add_principal(p)], done)
    replay = store.claim_idempotency(claim(clock, token="t9"), clock.now())
    assert replay is not None
    assert (replay.status, replay.result) == ("completed", {"ok": True})

    # A write whose claim was lost writes nothing at all.
    lost = claim(clock, key="other", token="mine")
    q = principal(clock)
    with pytest.raises(ConditionFailed):
        store.commit([store.add_principal(q)], lost.model_copy(update={"status": "completed"}))
    assert store.get_principal("acme", q.id) is None


def test_expired_completed_record_is_claimable_again(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    store.commit([], record.model_copy(update={"status": "completed", "result": {}}))
    clock.advance(24 * 3600 + 1)
    assert store.claim_idempotency(claim(clock, token="new"), clock.now()) is None


def test_release_only_drops_our_pending_claim(store: Store, clock: ManualClock) -> None:
    record = claim(clock)
    store.claim_idempotency(record, clock.now())
    store.release_idempotency(record.model_copy(update={"token": "someone-else"}))
    assert store.claim_idempotency(claim(clock, token="t2"), clock.now()) is not None
    store.release_idempotency(record)
    assert store.claim_idempotency(claim(clock, token="t3"), clock.now()) is None


def test_a_handover_is_kept_with_its_completion_and_read_back(
    store: Store, clock: ManualClock
) -> None:
    record = claim(clock)
    assert store.read_idempotency("acme", record.principal_id, "register", "k") is None
    store.claim_idempotency(record, clock.now())
    until = clock.now() + timedelta(minutes=10)
    handover = record.handing_over("old-secret", {"secret": "new-secret"}, "successor", until)
    store.commit([], record.completed({"secret": None}, handover))
    found = store.read_idempotency("acme", record.principal_id, "register", "k")
    assert found is not None
    assert (found.status, found.result, found.handover) == ("completed", {"secret": None}, handover)
    assert found.handed_over("old-secret", "successor", clock.now()) == {"secret": "new-secret"}
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert replay.handover == handover
    assert store.read_idempotency("globex", record.principal_id, "register", "k") is None
    assert store.read_idempotency("acme", record.principal_id, "register", "other") is None


def test_a_principal_is_read_by_id_from_a_partition_of_its_own(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    """Each call authenticates by reading its caller by id: spread over the principals'
    own partitions, not all on their namespace's. The listing keeps the namespace's copy, and
    a stale write changes neither copy."""
    client, table = dynamo_store.client, dynamo_store.table
    p = principal(clock)
    dynamo_store.commit([dynamo_store.add_principal(p)])
    own = {"pk": {"S": f"PRINCIPAL#acme#{p.id}"}, "sk": {"S": "PRINCIPAL"}}
    listed = {"pk": {"S": "NS#acme"}, "sk": {"S": f"PRINCIPAL#{p.id}"}}
    assert client.get_item(TableName=table, Key=own)["Item"]["version"] == {"N": "1"}
    changed = p.model_copy(update={"name": "b", "version": 2})
    dynamo_store.commit([dynamo_store.save_principal(changed)])
    stale = p.model_copy(update={"name": "c", "version": 2})
    with pytest.raises(ConditionFailed):
        dynamo_store.commit([dynamo_store.save_principal(stale)])
    for key in (own, listed):
        item = client.get_item(TableName=table, Key=key)["Item"]
        assert Principal.model_validate_json(item["doc"]["S"]) == changed
    # Reads by id use the principal's own partition: with the listed copy gone, still found.
    client.delete_item(TableName=table, Key=listed)
    assert dynamo_store.get_principal("acme", p.id, consistent=False) == changed
    assert dynamo_store.get_principals("acme", [p.id]) == [changed]


def test_a_principal_stored_before_it_had_its_own_copy_is_read_and_backfilled(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    client, table = dynamo_store.client, dynamo_store.table
    older, newer = principal(clock), principal(clock)
    dynamo_store.commit([dynamo_store.add_principal(newer)])
    # As a principal was stored before: only its namespace's item.
    item = {
        "pk": {"S": "NS#acme"},
        "sk": {"S": f"PRINCIPAL#{older.id}"},
        "version": {"N": "1"},
        "doc": {"S": older.model_dump_json()},
    }
    client.put_item(TableName=table, Item=item)
    assert dynamo_store.get_principal("acme", older.id) == older
    assert sorted(p.id for p in dynamo_store.get_principals("acme", [older.id, newer.id])) == (
        sorted([older.id, newer.id])
    )
    assert backfill_indexes(client, table).principals_spread == 1
    own = {"pk": {"S": f"PRINCIPAL#acme#{older.id}"}, "sk": {"S": "PRINCIPAL"}}
    assert client.get_item(TableName=table, Key=own)["Item"]["doc"] == item["doc"]
    assert backfill_indexes(client, table).principals_spread == 0  # once
    # A write since the backfill read keeps its own, newer copy.
    changed = older.model_copy(update={"name": "renamed", "version": 2})
    dynamo_store.commit([dynamo_store.save_principal(changed)])
    assert DynamoIdentity(client, table).spread_principal(item) is False
    assert dynamo_store.get_principal("acme", older.id) == changed
    # A version that writes no copy (a rollback) revokes it: the copy is older than the listed
    # item, and the revoked secret would still authenticate, until the backfill repairs it.
    revoked = changed.model_copy(update={"status": "revoked", "version": 3})
    client.put_item(
        TableName=table,
        Item={**item, "version": {"N": "3"}, "doc": {"S": revoked.model_dump_json()}},
    )
    assert dynamo_store.get_principal("acme", older.id) == changed
    assert backfill_indexes(client, table).principals_spread == 1
    assert dynamo_store.get_principal("acme", older.id) == revoked
