"""A notification's way to the people on its channels, after ``outbox`` wrote it down: the
notify function's attempts of each delivery, and an alert's reminders.

**Delivered at least once, claimed once.** A delivery's attempt ``n`` is claimed by a conditional
write from ``n - 1`` (``ChannelDelivery.claimed``), so two deliveries of one timer never make the
same attempt; only the run that claimed it records its outcome. A run that stops between the two
(a crash, a timeout) leaves the attempt claimed: the timer, delivered again by its queue, finds
it older than ATTEMPT_LIMIT and counts it as failed. The receiver deduplicates on the event's
id, the ``webhook-id`` of every attempt, so an attempt that reached it before the crash is not
seen twice.

**Retried, then given up on, never lost.** A failed attempt schedules the next after a growing,
jittered backoff (``records.backoff``), or after the receiver's Retry-After when it asks for
longer; its timer is armed before the outcome is recorded. After MAX_ATTEMPTS, or at once for an
answer that a retry would not change (a 4xx, a redirect, a refused address), the delivery fails
and is added to its channel's failures, which an operator lists and replays (``replay``). A 410
also disables the channel.

**Subscriptions too.** A delivery to an agent's webhook subscription is a delivery of the same
notification, keyed by the reader, the subscription and the event's place in the reader's feed
(``feeds.delivery_key``), attempted, retried and given up on the same way; it goes to the
subscription's URL as the event the extension shows, signed with the host's secret, and a
subscription lapsed or withdrawn meanwhile takes nothing. Its failures are on no channel's list.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from vigil.alarms.timers import Alarms, Timer
from vigil.audit.records import AuditEvent
from vigil.clock import Clock, to_ms
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.mailboxes.records import SYSTEM_SENDER
from vigil.notifications.events import followed_id, parse_event
from vigil.notifications.feeds import FeedEntry, position, subscription_of
from vigil.notifications.outbound import SendResult
from vigil.notifications.outbox import Outbox, attempt_timer
from vigil.notifications.records import (
    ATTEMPT_LIMIT,
    FOLLOWS,
    MAX_REPEATS,
    AttemptOutcome,
    ChannelDelivery,
    DeliveryFailure,
    Notification,
    backoff,
)
from vigil.notifications.sending import Sender
from vigil.notifications.store import DelivererPorts
from vigil.observability import get_logger, log_event, metrics

log = get_logger("vigil.notifications")

# A timer that finds no notification waits for its commit this many times, 1, 2, 4, 8 and 16 s.
COMMIT_WAITS = 5
# The notices that follow another to wherever it went, each sent to a channel only after it;
# and how long one waits, past the other's next attempt, before it looks again.
FOLLOWING = frozenset({*FOLLOWS, "alert.acknowledged"})
FOLLOW_UP_WAIT = timedelta(seconds=5)


def jitter(event_id: str, channel_id: str, attempt: int) -> float:
    """A number between -1 and 1 fixed by the attempt: the spread of a backoff, computed the
    same by every run."""
    digest = hashlib.sha256(f"{event_id}/{channel_id}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:8]) / 2**63 - 1


@dataclass
class NotificationDeliverer:
    """The notify function's handler of notifications: one attempt of one delivery per timer,
    and an alert's reminders."""

    store: DelivererPorts
    clock: Clock
    alarms: Alarms
    sender: Sender

    def on_attempt(self, uow: UnitOfWork, timer: Timer) -> None:
        """Attempt number ``timer.generation`` of a notification's delivery to a channel, made
        if it is the one the delivery waits for and is due."""
        event_id, _, channel_id = timer.key.partition("/")
        now = self.clock.now()
        notification = self.store.get_notification(timer.namespace, event_id)
        if notification is None:
            self._wait_for_commit(timer, now)
            return
        delivery = notification.deliveries.get(channel_id)
        if delivery is None:
            return
        attempt = timer.generation
        if delivery.interrupted(attempt, now):
            interrupted = SendResult(
                "retry", None, "the attempt stopped before its outcome was kept"
            )
            self._conclude(uow, notification, delivery, interrupted, "interrupted")
            return
        if delivery.state == "sending" and delivery.attempt == attempt:
            # Being made, or its run stopped: look again when it would count as stopped, so
            # that it is not left claimed if this was the timer's last delivery (a Scheduler
            # invocation's retries are few and soon).
            assert delivery.claimed_at is not None
            self.alarms.arm(
                timer.model_copy(update={"due_at": delivery.claimed_at + ATTEMPT_LIMIT}), now
            )
            return
        if not delivery.due(attempt):
            return  # made already, or replaced by a replay: this timer is a stale copy
        if delivery.next_at > now:
            self.alarms.arm(timer.model_copy(update={"due_at": delivery.next_at}), now)
            return
        behind = self._behind(notification, channel_id, now)
        if behind is not None:
            # What it follows has not reached this channel yet: a resolve must not overtake
            # its trigger, nor a recovery its death. The attempt waits, uncounted.
            self.alarms.arm(timer.model_copy(update={"due_at": behind}), now)
            return
        claimed = delivery.claimed(now)
        try:
            uow.commit(
                self.store.save_channel_delivery(timer.namespace, event_id, claimed, delivery)
            )
        except ConditionFailed:
            return  # another run of this timer claimed it
        subscription = subscription_of(channel_id)
        if subscription is not None:
            outcome = self._to_subscriber(notification, *subscription)
            self._conclude(uow, notification, claimed, outcome, outcome.kind)
            return
        channel = self.store.get_channel(timer.namespace, channel_id)
        if channel is None:
            outcome = SendResult("rejected", None, "the channel was deleted")
        elif channel.state != "enabled":
            outcome = SendResult("rejected", None, "the channel is disabled")
        else:
            recipient = None
            if channel.kind == "email":
                recipient = self.store.linked_account(timer.namespace, "email", channel.target)
            event = parse_event(json.dumps(notification.event))
            outcome = self.sender.send(channel, event, recipient)
        self._conclude(uow, notification, claimed, outcome, outcome.kind)

    def _to_subscriber(
        self, notification: Notification, reader: str, subscription_id: str, seq: int
    ) -> SendResult:
        """One attempt of the notification's delivery to ``reader``'s subscription."""
        feed = self.store.get_feed(notification.namespace, reader)
        subscription = feed.subscriptions.get(subscription_id) if feed else None
        if subscription is None or not subscription.live(self.clock.now()):
            return SendResult("rejected", None, "the subscription lapsed or was withdrawn")
        entry = FeedEntry(
            namespace=notification.namespace,
            principal=reader,
            seq=seq,
            event_type=notification.event_type,
            event=notification.event,
        )
        body = json.dumps(entry.occurrence(position(reader, seq))).encode()
        return self.sender.to_subscriber(subscription, notification.event_id, body)

    def _behind(
        self, notification: Notification, channel_id: str, now: datetime
    ) -> datetime | None:
        """When to look again, if ``notification`` follows a notice (events.followed_id) whose
        delivery to ``channel_id`` is still on its way; None if it may go now."""
        if notification.event_type not in FOLLOWING:
            return None
        followed = followed_id(parse_event(json.dumps(notification.event)))
        ahead = self.store.get_notification(notification.namespace, followed or "")
        delivery = ahead.deliveries.get(channel_id) if ahead is not None else None
        if delivery is None or delivery.state not in ("pending", "sending"):
            return None
        return max(delivery.next_at, now) + FOLLOW_UP_WAIT

    def on_reminder(self, uow: UnitOfWork, timer: Timer) -> None:
        """An alert's repeat (number ``timer.generation``) or escalation, unless a person has
        acknowledged it or what it tells of is over: the request is no longer open, the switch
        was armed again. A repeat arms the next one first; each is written once (its id is
        derived from the alert's), whichever run of the timer gets there."""
        event_id, channel_id, what = timer.key.split("/")
        now = self.clock.now()
        notification = self.store.get_notification(timer.namespace, event_id)
        if notification is None:
            self._wait_for_commit(timer, now)
            return
        if notification.acknowledged is not None or not self._still_open(notification):
            return
        channel = self.store.get_channel(timer.namespace, channel_id)
        event = parse_event(json.dumps(notification.event))
        rule = channel.follow_up(event.type, event.scope) if channel else None
        if rule is None:
            return  # the channel, or the rule that asked for reminders, is gone
        if what == "repeat":
            if rule.repeat_every is None or timer.generation > MAX_REPEATS:
                return
            reminded = event.reminded("repeat", channel_id, timer.generation, now)
            if self.store.get_notification(timer.namespace, reminded.id) is not None:
                return  # another copy of this timer did this round, and armed the next
            # Due at the alert's time plus n periods, whichever run arms it.
            following = timer.model_copy(
                update={
                    "generation": timer.generation + 1,
                    "due_at": notification.created_at + rule.repeat_every * (timer.generation + 1),
                }
            )
            self.alarms.arm(following, now)
            targets = [channel_id] if channel and channel.state == "enabled" else []
        else:
            target = self.store.get_channel(timer.namespace, rule.escalate_to or "")
            if target is None or target.state != "enabled":
                log_event(log, "escalation has no channel", key=timer.key)
                return
            targets = [target.id]
            reminded = event.reminded("escalation", channel_id, 1, now)
        writes = Outbox(self.store, self.clock, self.alarms).publish_to(reminded, targets)
        with contextlib.suppress(ConditionFailed):  # written by another run of this timer
            uow.commit(*writes)

    def _still_open(self, notification: Notification) -> bool:
        """Whether what the alert tells of still waits for a person."""
        data = notification.event.get("data") or {}
        if notification.event_type == "request.opened":
            request = self.store.get_request(notification.namespace, str(data.get("request_id")))
            return request is not None and request.state == "open"
        switch = self.store.get_switch(notification.namespace, str(data.get("scope")))
        return (
            switch is not None
            and switch.generation == data.get("generation")
            and switch.state == "fired"
        )

    def _wait_for_commit(self, timer: Timer, now: datetime) -> None:
        if timer.waits >= COMMIT_WAITS:
            # Its commit never came: what it was to tell of did not happen.
            log_event(log, "notification never written", key=timer.key)
            return
        later = now + timedelta(seconds=2**timer.waits)
        self.alarms.arm(timer.model_copy(update={"waits": timer.waits + 1, "due_at": later}), now)

    def _conclude(
        self,
        uow: UnitOfWork,
        notification: Notification,
        claimed: ChannelDelivery,
        outcome: SendResult,
        kind: AttemptOutcome,
    ) -> None:
        """Records what the claimed attempt came to; the next attempt's timer first, if there
        is to be one, and the channel's failure with a delivery that gives up."""
        namespace, event_id = notification.namespace, notification.event_id
        now = to_ms(self.clock.now())
        retry_at = None
        if outcome.kind == "retry" and not claimed.exhausted:
            wait = backoff(claimed.attempt, jitter(event_id, claimed.channel_id, claimed.attempt))
            if outcome.retry_after_seconds is not None:
                wait = max(wait, timedelta(seconds=outcome.retry_after_seconds))
            retry_at = to_ms(now + wait)
            timer = attempt_timer(
                namespace, event_id, claimed.channel_id, claimed.attempt + 1, retry_at
            )
            self.alarms.arm(timer, now)
        concluded = claimed.concluded(kind, outcome.status, outcome.reason, now, retry_at)
        writes = [self.store.save_channel_delivery(namespace, event_id, concluded, claimed)]
        if concluded.state == "failed" and subscription_of(claimed.channel_id) is None:
            failure = DeliveryFailure(
                namespace=namespace,
                channel_id=claimed.channel_id,
                event_id=event_id,
                event_type=notification.event_type,
                failed_at=now,
                attempts=concluded.attempt - concluded.replayed_after,
                status=outcome.status,
                reason=outcome.reason,
            )
            writes.append(self.store.add_failure(failure))
        try:
            uow.commit(*writes)
        except ConditionFailed:
            return  # another run recorded this attempt's end (only an interrupted one may race)
        metrics.notification_attempt(kind)
        log_event(
            log,
            "notification attempt",
            namespace=namespace,
            event_id=event_id,
            channel_id=claimed.channel_id,
            attempt=claimed.attempt,
            outcome=kind,
            status=outcome.status,
            state=concluded.state,
        )
        if outcome.kind == "gone":
            status = "410 Gone" if outcome.status == 410 else f"{outcome.status}: gone"
            self._disable(uow, namespace, claimed.channel_id, f"the receiver answered {status}")

    def _disable(self, uow: UnitOfWork, namespace: str, channel_id: str, reason: str) -> None:
        """Disables the channel, read again on a lost race; audited as Vigil's own change."""
        for _ in range(3):
            channel = self.store.get_channel(namespace, channel_id)
            if channel is None or channel.state == "disabled":
                return
            now = self.clock.now()
            disabled = channel.disabled(reason, now)
            audit = AuditEvent.of(
                namespace,
                SYSTEM_SENDER,
                "disable_channel",
                "channel",
                channel_id,
                channel.version,
                disabled.version,
                now,
            )
            try:
                uow.commit(self.store.save_channel(disabled), self.store.add_audit_event(audit))
            except ConditionFailed:
                continue
            log_event(log, "channel disabled", namespace=namespace, channel_id=channel_id)
            return
