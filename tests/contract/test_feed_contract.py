"""An agent's feed of events: the in-memory fake and the DynamoDB adapter (on moto) honour one
contract: the record changes only at the version read, and the ring keeps its last entries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vigil.clock import ManualClock
from vigil.kit.sealing import seal
from vigil.kit.uow import ConditionFailed
from vigil.notifications.feeds import Feed, FeedEntry, Subscription
from vigil.store import Store

AGENT = "agt_aaaaaaaaaaaaaaaa"


def event(number: int, clock: ManualClock) -> dict[str, object]:
    return {
        "id": f"evt_{number:026d}",
        "type": "delivery.waiting",
        "occurred_at": clock.now().isoformat(),
        "data": {"envelope_id": f"env_{number}"},
    }


def appended(store: Store, feed: Feed, clock: ManualClock, number: int) -> Feed:
    after, entry = feed.appended(event(number, clock), "delivery.waiting")
    store.commit([store.save_feed(after), store.put_feed_entry(feed, entry)])
    return after


def test_a_feed_changes_only_at_the_version_read(store: Store, clock: ManualClock) -> None:
    assert store.get_feed("acme", AGENT) is None
    new = Feed(namespace="acme", principal=AGENT, kept=3, version=0)
    first = new.changed(polled_until=clock.now() + timedelta(minutes=15))
    store.commit([store.save_feed(first)])
    assert store.get_feed("acme", AGENT) == first
    assert store.get_feed("globex", AGENT) is None
    with pytest.raises(ConditionFailed):
        store.commit([store.save_feed(first)])  # made again: it exists
    later = appended(store, first, clock, 1)
    with pytest.raises(ConditionFailed):
        appended(store, first, clock, 2)  # from the version before: lost
    assert store.get_feed("acme", AGENT) == later


def test_the_ring_keeps_the_last_entries_in_order(store: Store, clock: ManualClock) -> None:
    feed = Feed(namespace="acme", principal=AGENT, kept=3, version=0).changed()
    store.commit([store.save_feed(feed)])
    for number in range(1, 6):
        feed = appended(store, feed, clock, number)
    entries = store.get_feed_entries(feed, [3, 4, 5])
    assert [e.seq for e in entries] == [3, 4, 5]
    assert [e.event["id"] for e in entries] == [event(n, clock)["id"] for n in (3, 4, 5)]
    # Slot 1 % 3 now holds event 4: reading number 1 finds another number there.
    assert [e.seq for e in store.get_feed_entries(feed, [1])] == [4]
    assert isinstance(entries[0], FeedEntry)


def test_subscriptions_are_kept_with_the_feed(store: Store, clock: ManualClock) -> None:
    subscription = Subscription(
        id="sub_" + "a" * 26,
        namespace="acme",
        principal=AGENT,
        name="delivery.waiting",
        url="https://host.example.com/events",
        sealed_secret=seal("k" * 64, "whsec_c2VjcmV0", "context"),
        expires_at=clock.now() + timedelta(hours=1),
        created_at=clock.now(),
    )
    feed = Feed(
        namespace="acme",
        principal=AGENT,
        kept=10,
        version=0,
        subscriptions={subscription.id: subscription},
    ).changed()
    store.commit([store.save_feed(feed)])
    stored = store.get_feed("acme", AGENT)
    assert stored is not None
    assert stored.subscriptions == {subscription.id: subscription}
    assert stored.listening(clock.now())
