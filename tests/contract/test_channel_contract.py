"""Channels: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from typing import Any

import pytest

from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.limits import MAX_ITEM_BYTES
from vigil.kit.sealing import seal
from vigil.kit.uow import ConditionFailed
from vigil.notifications.records import Channel, Rule
from vigil.store import Store

OPERATOR = "per_aaaaaaaaaaaaaaaa"


def channel(clock: ManualClock, namespace: str = "acme", **changes: Any) -> Channel:
    fields: dict[str, Any] = {
        "namespace": namespace,
        "name": "on-call",
        "kind": "webhook",
        "target": "https://hooks.example.com/vigil",
        "rules": [Rule(events=["switch.fired"], scope_prefix="billing-")],
        "by": OPERATOR,
        "now": clock.now(),
        "secret": seal("k" * 64, "whsec_c2VjcmV0", "context"),
    }
    return Channel.created(**{**fields, **changes})


def test_a_channel_is_created_once_and_read_back(store: Store, clock: ManualClock) -> None:
    made = channel(clock)
    store.commit([store.add_channel(made)])
    assert store.get_channel("acme", made.id) == made
    with pytest.raises(ConditionFailed):
        store.commit([store.add_channel(made.model_copy(update={"name": "again"}))])
    assert store.get_channel("acme", made.id) == made


def test_each_namespace_reads_its_own_channels(store: Store, clock: ManualClock) -> None:
    mine = channel(clock)
    theirs = channel(clock, namespace="globex", channel_id=mine.id)
    store.commit([store.add_channel(mine), store.add_channel(theirs)])
    assert store.get_channel("acme", mine.id) == mine
    assert store.get_channel("globex", mine.id) == theirs
    assert store.get_channel("initech", mine.id) is None
    assert store.list_channels("acme") == [mine]
    assert store.list_channels("initech") == []


def test_a_namespace_lists_every_channel_in_id_order(store: Store, clock: ManualClock) -> None:
    made = [
        channel(clock, name=f"channel {n} ✓", kind="email", target=f"{n}@example.com", secret=None)
        for n in range(12)
    ]
    store.commit([store.add_channel(c) for c in made])
    assert store.list_channels("acme") == sorted(made, key=lambda c: c.id)


def test_a_save_lands_only_on_the_version_it_was_read_at(store: Store, clock: ManualClock) -> None:
    made = channel(clock)
    store.commit([store.add_channel(made)])
    disabled = made.disabled("the receiver answered 410 Gone", clock.now())
    store.commit([store.save_channel(disabled)])
    assert store.get_channel("acme", made.id) == disabled
    # Another change decided on version 1 is refused: the stored one is at 2.
    stale = made.enabled(clock.now()).model_copy(update={"name": "stale"})
    with pytest.raises(ConditionFailed):
        store.commit([store.save_channel(stale)])
    # A save of a channel that is not there is refused too.
    with pytest.raises(ConditionFailed):
        store.commit([store.save_channel(channel(clock).enabled(clock.now()))])
    assert store.get_channel("acme", made.id) == disabled


def test_a_delete_lands_only_on_the_version_it_was_decided_on(
    store: Store, clock: ManualClock
) -> None:
    made = channel(clock)
    store.commit([store.add_channel(made)])
    changed = made.disabled("paused", clock.now())
    store.commit([store.save_channel(changed)])
    with pytest.raises(ConditionFailed):
        store.commit([store.delete_channel(made)])
    assert store.get_channel("acme", made.id) == changed
    store.commit([store.delete_channel(changed)])
    assert store.get_channel("acme", made.id) is None
    assert store.list_channels("acme") == []
    with pytest.raises(ConditionFailed):  # gone: nothing left to delete
        store.commit([store.delete_channel(changed)])


def test_a_channel_lands_with_the_rest_of_its_commit_or_not_at_all(
    store: Store, clock: ManualClock
) -> None:
    first = channel(clock)
    store.commit([store.add_channel(first)])
    second = channel(clock)
    with pytest.raises(ConditionFailed):
        store.commit([store.add_channel(second), store.add_channel(first)])
    assert store.get_channel("acme", second.id) is None


def test_an_item_over_dynamodbs_limit_is_refused_by_both(store: Store, clock: ManualClock) -> None:
    huge = channel(clock, name="x" * MAX_ITEM_BYTES)
    with pytest.raises(VigilError) as refused:
        store.commit([store.add_channel(huge)])
    assert refused.value.code is ErrorCode.UNAVAILABLE
    assert store.get_channel("acme", huge.id) is None
