"""Channels: the in-memory fake and the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

from typing import Any

import pytest

from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.limits import MAX_ITEM_BYTES
from vigil.kit.sealing import seal
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.notifications.records import (
    AccountLink,
    Acknowledgement,
    Channel,
    ChannelDelivery,
    DeliveryFailure,
    Notification,
    Rule,
    SlackResponse,
)
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


# -- notifications ------------------------------------------------------------------------------
def notification(clock: ManualClock, namespace: str = "acme", *channels: str) -> Notification:
    now = clock.now()
    return Notification(
        namespace=namespace,
        event_id="evt_" + "a" * 26,
        event_type="switch.fired",
        event={"id": "evt_" + "a" * 26, "data": {"scope": "billing-nightly ✓"}},
        deliveries={c: ChannelDelivery(channel_id=c, next_at=now) for c in channels or ("chn_1",)},
        created_at=now,
    )


def test_a_notification_is_written_once_and_read_back_in_its_namespace(
    store: Store, clock: ManualClock
) -> None:
    made = notification(clock, "acme", "chn_1", "chn_2")
    store.commit([store.add_notification(made)])
    assert store.get_notification("acme", made.event_id) == made
    assert store.get_notification("globex", made.event_id) is None
    with pytest.raises(ConditionFailed):
        store.commit([store.add_notification(made)])


def test_an_attempt_is_claimed_once_and_its_outcome_recorded_by_its_claimer_only(
    store: Store, clock: ManualClock
) -> None:
    made = notification(clock, "acme", "chn_1", "chn_2")
    store.commit([store.add_notification(made)])
    pending = made.deliveries["chn_1"]
    claimed = pending.claimed(clock.now())
    store.commit([store.save_channel_delivery("acme", made.event_id, claimed, pending)])
    with pytest.raises(ConditionFailed):  # a second claim from the same state loses
        store.commit([store.save_channel_delivery("acme", made.event_id, claimed, pending)])
    done = claimed.concluded("delivered", 204, "HTTP 204", clock.now(), None)
    store.commit([store.save_channel_delivery("acme", made.event_id, done, claimed)])
    with pytest.raises(ConditionFailed):  # the outcome is recorded once
        store.commit([store.save_channel_delivery("acme", made.event_id, done, claimed)])
    other = ChannelDelivery(channel_id="chn_9", next_at=clock.now())
    unrouted = store.save_channel_delivery("acme", made.event_id, other.claimed(clock.now()), other)
    with pytest.raises(ConditionFailed):  # no delivery to a channel it was not routed to
        store.commit([unrouted])
    stored = store.get_notification("acme", made.event_id)
    assert stored is not None
    assert stored.deliveries == {"chn_1": done, "chn_2": made.deliveries["chn_2"]}


def test_a_channels_failures_list_newest_first_a_page_at_a_time_and_are_removed_once(
    store: Store, clock: ManualClock
) -> None:
    failures = []
    for n in range(5):
        failures.append(
            DeliveryFailure(
                namespace="acme",
                channel_id="chn_1",
                event_id=f"evt_{n:026d}",
                event_type="request.opened",
                failed_at=clock.now(),
                attempts=8,
                status=500,
                reason="HTTP 500",
            )
        )
        clock.advance(1)
    other = failures[0].model_copy(update={"channel_id": "chn_2"})
    store.commit([*(store.add_failure(f) for f in failures), store.add_failure(other)])
    first = store.list_failures("acme", "chn_1", None, 2)
    assert first == [failures[4], failures[3]]
    assert store.list_failures("acme", "chn_1", first[-1].position, 10) == failures[2::-1]
    assert store.list_failures("globex", "chn_1", None, 10) == []
    store.commit([store.remove_failure(failures[4])])
    with pytest.raises(ConditionFailed):
        store.commit([store.remove_failure(failures[4])])
    assert store.list_failures("acme", "chn_1", None, 10) == failures[3::-1]
    assert store.list_failures("acme", "chn_2", None, 10) == [other]


def test_an_alert_is_acknowledged_once_and_only_if_it_exists(
    store: Store, clock: ManualClock
) -> None:
    made = notification(clock)
    first = Acknowledgement(by="per_aaaaaaaaaaaaaaaa", at=clock.now())
    with pytest.raises(ConditionFailed):  # nothing to acknowledge yet
        store.commit([store.acknowledge("acme", made.event_id, first)])
    store.commit([store.add_notification(made)])
    store.commit([store.acknowledge("acme", made.event_id, first)])
    later = Acknowledgement(by="per_bbbbbbbbbbbbbbbb", at=clock.advance(5))
    with pytest.raises(ConditionFailed):  # the first one stands
        store.commit([store.acknowledge("acme", made.event_id, later)])
    stored = store.get_notification("acme", made.event_id)
    assert stored is not None
    assert stored.acknowledged == first
    assert stored.deliveries == made.deliveries
    with pytest.raises(ConditionFailed):
        store.commit([store.acknowledge("globex", made.event_id, first)])


# -- accounts and Slack's responses -------------------------------------------------------------
def account_link(clock: ManualClock, principal_id: str, namespace: str = "acme") -> AccountLink:
    return AccountLink(
        namespace=namespace,
        surface="slack",
        account="T0ACME/U0PAT",
        principal_id=principal_id,
        linked_at=clock.now(),
    )


def test_an_account_is_linked_to_whoever_linked_it_first(store: Store, clock: ManualClock) -> None:
    assert store.linked_account("acme", "slack", "T0ACME/U0PAT") is None
    UnitOfWork(store).commit(store.link_account(account_link(clock, OPERATOR)))
    with pytest.raises(ConditionFailed):
        UnitOfWork(store).commit(store.link_account(account_link(clock, "per_bbbbbbbbbbbbbbbb")))
    assert store.linked_account("acme", "slack", "T0ACME/U0PAT") == OPERATOR
    assert store.linked_account("acme", "email", "T0ACME/U0PAT") is None
    assert store.linked_account("globex", "slack", "T0ACME/U0PAT") is None


def test_an_account_is_unlinked_only_from_whom_it_is_linked_to(
    store: Store, clock: ManualClock
) -> None:
    UnitOfWork(store).commit(store.link_account(account_link(clock, OPERATOR)))
    other = "per_bbbbbbbbbbbbbbbb"
    with pytest.raises(ConditionFailed):
        UnitOfWork(store).commit(store.unlink_account("acme", "slack", "T0ACME/U0PAT", other))
    with pytest.raises(ConditionFailed):
        UnitOfWork(store).commit(store.unlink_account("globex", "slack", "T0ACME/U0PAT", OPERATOR))
    assert store.linked_account("acme", "slack", "T0ACME/U0PAT") == OPERATOR
    UnitOfWork(store).commit(store.unlink_account("acme", "slack", "T0ACME/U0PAT", OPERATOR))
    assert store.linked_account("acme", "slack", "T0ACME/U0PAT") is None
    with pytest.raises(ConditionFailed):
        UnitOfWork(store).commit(store.unlink_account("acme", "slack", "T0ACME/U0PAT", OPERATOR))
    # Free again: the next person to link it keeps it.
    UnitOfWork(store).commit(store.link_account(account_link(clock, other)))
    assert store.linked_account("acme", "slack", "T0ACME/U0PAT") == other


def test_a_slack_response_is_kept_once(store: Store, clock: ManualClock) -> None:
    owed = SlackResponse(
        namespace="acme",
        id="a" * 32,
        request_id="req_aaaaaaaaaaaaaaaa",
        response_url=seal("k" * 64, "https://hooks.slack.com/actions/x", "context"),
        update=True,
        note="Already approved.",
        created_at=clock.now(),
    )
    assert store.get_slack_response("acme", owed.id) is None
    assert store.add_slack_response(owed)
    assert not store.add_slack_response(owed.model_copy(update={"note": "again"}))
    assert store.get_slack_response("acme", owed.id) == owed
    assert store.get_slack_response("globex", owed.id) is None
