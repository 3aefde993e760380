"""Events written down first, in the commit of what they tell of.

``Outbox.publish`` routes an event to the channels whose rules want it and returns the write of
its notification, which the caller commits with what the event tells of (the death's step, the
request's change): there is no event without its notification, nor a notification without its
event. Before that commit, it arms each delivery's first attempt on the notify queue, arming
first as every alarm here does: a crash between the two leaves timers that find no notification
and stop; a timer that comes before the commit is visible waits for it, a few times, a little
longer each time (``deliverer.COMMIT_WAITS``). The sending is ``deliverer``'s, in the notify
function; this module is what the functions that publish load.

An event that is an agent's own news (a delivery waiting in its mailbox, a request it asked
decided, an instruction posted to its session, a switch it is alerted of fired) is also
appended, in the same commit, to that agent's feed if anybody listens to it (``feeds``), and
routed to its live webhook subscriptions as deliveries of the same notification: one
pipeline, whoever the reader.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from vigil.alarms import kinds
from vigil.alarms.timers import Alarms, Timer
from vigil.clock import Clock, to_ms
from vigil.kit.batch import in_a_batch, read_once
from vigil.kit.events import EventData, event_id
from vigil.kit.publish import Published
from vigil.kit.uow import Write
from vigil.notifications.events import Event, NoticeType, followed_id, make_event
from vigil.notifications.feeds import AGENT_EVENTS, delivery_key
from vigil.notifications.records import (
    ALERTS,
    EVENT_TYPES,
    FOLLOWS,
    Channel,
    ChannelDelivery,
    Notification,
)
from vigil.notifications.store import ChannelStore, OutboxPorts


def timer_key(event_id: str, channel_id: str) -> str:
    return f"{event_id}/{channel_id}"


def attempt_timer(
    namespace: str, event_id: str, channel_id: str, attempt: int, due: datetime
) -> Timer:
    """The timer of attempt number ``attempt`` of the event's delivery to the channel."""
    return Timer(
        kind=kinds.NOTIFY,
        namespace=namespace,
        key=timer_key(event_id, channel_id),
        generation=attempt,
        due_at=due,
    )


@dataclass
class Outbox:
    """Routes events to channels and writes them down, in the caller's commit: the
    ``Publish`` port that the capabilities with news are given."""

    store: OutboxPorts
    clock: Clock
    alarms: Alarms

    def __call__(
        self,
        event_type: str,
        data: EventData,
        *,
        namespace: str,
        occurred_at: datetime,
        escalated_to: str | None = None,
    ) -> Published:
        """The notifications' side of ``Publish``: the event, routed and written down; or its
        escalation to the channel ``escalated_to``."""
        # The type is checked as the event is built: an unknown one is refused there.
        event = make_event(
            cast(NoticeType, event_type),
            data,
            namespace=namespace,
            occurred_at=occurred_at,
            console_base=None,
        )
        if escalated_to is not None:
            return Published(event.id, self.escalate(event, escalated_to))
        return Published(event.id, self.publish(event))

    def escalate(self, event: Event, channel_id: str) -> list[Write]:
        """The write of ``event``'s escalation to the channel ``channel_id``, as a rule's
        escalation is written (``deliverer.on_reminder``): nothing if a person acknowledged the
        alert, or the channel is gone or disabled."""
        alert = self.store.get_notification(event.namespace, event.id)
        if alert is not None and alert.acknowledged is not None:
            return []
        channel = self.store.get_channel(event.namespace, channel_id)
        if channel is None or channel.state != "enabled":
            return []
        reminded = event.reminded("escalation", channel_id, 1, self.clock.now())
        return self.publish_to(reminded, [channel_id])

    def wanted(self, namespace: str, event_type: str) -> bool:
        """Whether a channel of ``namespace`` takes its events of ``event_type`` that have no
        scope: the audience of a session's watch."""
        return any(c.wants(event_type, None) for c in self.store.list_channels(namespace))

    def publish(self, event: Event) -> list[Write]:
        """The write of ``event``'s notification, to commit with what it tells of; nothing if
        no channel's rules nor listening reader want it, unless it is an alert: a person may
        still see that one (a death on the console) and acknowledge it, so it is written with
        no delivery. The first attempts are armed before it is returned, and the reminders of
        an alert whose rules repeat or escalate it; with it, the appends to its readers'
        feeds."""
        # An agent's own news is for no channel: reading the channels would be wasted.
        # Read once for a batch of timers (vigil.kit.batch): a burst of deaths reads them once
        # per batch, not once a death.
        namespace = event.namespace
        channels = (
            read_once(("channels", namespace), lambda: self.store.list_channels(namespace))
            if event.type in EVENT_TYPES or event.type in FOLLOWS
            else []
        )
        followed = followed_id(event) if event.type in FOLLOWS else None
        if followed is not None:
            wanting = self._where_it_went(namespace, followed, channels)
        else:
            wanting = [c for c in channels if c.wants(event.type, event.scope)]
        now = to_ms(self.clock.now())
        appends, subscribed = self._to_readers(event, now)
        for channel in wanting:
            rule = channel.follow_up(event.type, event.scope)
            if rule is None:
                continue
            for what, after in (("repeat", rule.repeat_every), ("escalation", rule.escalate_after)):
                if after is not None:
                    key = f"{event.id}/{channel.id}/{what}"
                    timer = Timer(
                        kind=kinds.REMIND,
                        namespace=event.namespace,
                        key=key,
                        generation=1,
                        due_at=now + after,
                    )
                    self.alarms.arm(timer, now)
        routed = [c.id for c in wanting] + subscribed
        if not routed and event.type in ALERTS:
            return [self.store.add_notification(_notification(event, [], now)), *appends]
        return [*self.publish_to(event, routed), *appends]

    def _where_it_went(
        self, namespace: str, followed: str, channels: list[Channel]
    ) -> list[Channel]:
        """The enabled channels the notice ``followed`` was sent to, and those its escalation
        was: where what follows it goes (records.FOLLOWS). None if it was never written."""
        notification = self.store.get_notification(namespace, followed)
        if notification is None:
            return []
        by_id = {c.id: c for c in channels}
        reached = [cid for cid in notification.deliveries if cid in by_id]
        for cid in list(reached):
            escalation = self.store.get_notification(
                namespace, event_id(followed, "escalation", cid, "1")
            )
            reached += list(escalation.deliveries) if escalation is not None else []
        return [
            by_id[cid]
            for cid in dict.fromkeys(reached)
            if cid in by_id and by_id[cid].state == "enabled"
        ]

    def _to_readers(self, event: Event, now: datetime) -> tuple[list[Write], list[str]]:
        """The appends of ``event`` to the feeds of its readers that somebody listens to, and
        the deliveries it owes their live webhook subscriptions. An event a feed already holds
        (told again after a crash) is appended and delivered once."""
        if event.type not in AGENT_EVENTS:
            return [], []
        appends: list[Write] = []
        subscribed: list[str] = []
        namespace = event.namespace
        for reader in event.data.readers():
            # A reader nobody listens to, as a batch of timers first found it, stays so for
            # the batch (vigil.kit.batch): a burst of alerts to one mailbox reads its owner's
            # feed once a batch. One that is listened to is read afresh for each event, as
            # each appends to it.
            if in_a_batch():
                read = functools.partial(self.store.get_feed, namespace, reader)
                shared = read_once(("feed", namespace, reader), read)
                if shared is None or not shared.listening(now):
                    continue
            feed = self.store.get_feed(namespace, reader)
            if feed is None or not feed.listening(now) or event.id in feed.recent:
                continue
            appended, entry = feed.appended(event.model_dump(mode="json"), event.type)
            appends += [self.store.save_feed(appended), self.store.put_feed_entry(feed, entry)]
            subscribed += [
                delivery_key(reader, s.id, entry.seq) for s in feed.wanting(event.type, now)
            ]
        return appends, subscribed

    def publish_to(self, event: Event, routed: list[str]) -> list[Write]:
        """The write of ``event``'s notification to the channels (or subscriptions) ``routed``,
        their first attempts armed; nothing for none."""
        return sent_to(self.store, self.alarms, event, routed, to_ms(self.clock.now()))


def sent_to(
    store: ChannelStore, alarms: Alarms, event: Event, routed: list[str], now: datetime
) -> list[Write]:
    """The write of ``event``'s notification to the channels (or subscriptions) ``routed``, due
    ``now``, their first attempts armed first; nothing for none."""
    if not routed:
        return []
    for cid in routed:
        alarms.arm(attempt_timer(event.namespace, event.id, cid, 1, now), now)
    return [store.add_notification(_notification(event, routed, now))]


def _notification(event: Event, routed: list[str], now: datetime) -> Notification:
    """``event`` written down, with a delivery due ``now`` to each channel ``routed``."""
    return Notification(
        namespace=event.namespace,
        event_id=event.id,
        event_type=event.type,
        event=event.model_dump(mode="json"),
        deliveries={cid: ChannelDelivery(channel_id=cid, next_at=now) for cid in routed},
        created_at=now,
    )
