"""A notification's way to the people on its channels, after ``outbox`` wrote it down.

**Delivered at least once, claimed once.** A delivery's attempt ``n`` is claimed by a conditional
write from ``n - 1`` (``Delivery.claimed``), so two deliveries of one timer never make the same
attempt; only the run that claimed it records its outcome. A run that stops between the two
(a crash, a timeout) leaves the attempt claimed: the timer, delivered again by its queue, finds
it older than ATTEMPT_LIMIT and counts it as failed. The receiver deduplicates on the event's
id, the ``webhook-id`` of every attempt, so an attempt that reached it before the crash is not
seen twice.

**Retried, then given up on, never lost.** A failed attempt schedules the next after a growing,
jittered backoff (``records.backoff``), or after the receiver's Retry-After when it asks for
longer; its timer is armed before the outcome is recorded. After MAX_ATTEMPTS, or at once for an
answer that a retry would not change (a 4xx, a redirect, a refused address), the delivery fails
and is added to its channel's failures, which an operator lists and replays. A 410 also disables
the channel.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel

from vigil.alarms.timers import Alarms, Timer
from vigil.audit.records import AuditEvent
from vigil.clock import Clock, to_ms
from vigil.errors import contended
from vigil.kit.events import EventData
from vigil.kit.keys import Keys
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.mailboxes.events import DeliveryDeadLettered
from vigil.mailboxes.records import SYSTEM_SENDER
from vigil.notifications.channel_secrets import open_secrets, open_target
from vigil.notifications.email import send_email
from vigil.notifications.events import Event, console_link, make_event, parse_event
from vigil.notifications.outbound import Outcome, post
from vigil.notifications.outbox import Outbox, attempt_timer
from vigil.notifications.records import (
    ATTEMPT_LIMIT,
    MAX_REPEATS,
    AttemptOutcome,
    Channel,
    Delivery,
    DeliveryFailure,
    NoticeType,
    Notification,
    backoff,
)
from vigil.notifications.slack import slack_message
from vigil.notifications.webhooks import webhook_request
from vigil.observability import get_logger, log_event, metrics
from vigil.sessions.events import SessionStale
from vigil.store import Store

log = get_logger("vigil.notifications")

R = TypeVar("R", bound=BaseModel)

# A timer that finds no notification waits for its commit this many times, 1, 2, 4, 8 and 16 s.
COMMIT_WAITS = 5
# How often a session is looked at while no channel of its namespace wants session.stale.
UNWATCHED = timedelta(hours=1)
# Each attempt's limit: connect, TLS, send and answer together.
ATTEMPT_TIMEOUT_SECONDS = 10
# SES errors a later attempt may get past; any other is the message's or the account's.
_SES_TRANSIENT = frozenset(
    {"TooManyRequestsException", "Throttling", "ThrottlingException", "ServiceUnavailable"}
)


def jitter(event_id: str, channel_id: str, attempt: int) -> float:
    """A number between -1 and 1 fixed by the attempt: the spread of a backoff, computed the
    same by every run."""
    digest = hashlib.sha256(f"{event_id}/{channel_id}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:8]) / 2**63 - 1


Post = Callable[..., Outcome]


@dataclass
class Sender:
    """How one message leaves for a channel: a signed webhook, a Slack message, an email."""

    keys: Keys
    clock: Clock
    # Where the console's pages hang from, for the links in messages; None for no links.
    console_base: str | None = None
    # The local runtime's receivers are on the same machine; deployed, such targets are refused.
    allow_private: bool = False
    email_sender: str | None = None
    ses: Any = None
    post: Post = field(default=post)
    timeout_seconds: float = ATTEMPT_TIMEOUT_SECONDS

    def send(self, channel: Channel, event: Event) -> Outcome:
        """One attempt to deliver ``event`` to ``channel``."""
        now = self.clock.now()
        event = event.model_copy(
            update={"console_url": console_link(self.console_base, event.data)}
        )
        if channel.kind == "email":
            return self._email(channel, event)
        if channel.kind == "webhook":
            body, headers = webhook_request(event, open_secrets(channel, self.keys, now), now)
        else:
            body = json.dumps(slack_message(event, self.console_base)).encode()
            headers = {"content-type": "application/json"}
        return self.post(
            open_target(channel, self.keys),
            body,
            headers,
            timeout_seconds=self.timeout_seconds,
            allow_private=self.allow_private,
            clock=self.clock,
        )

    def _email(self, channel: Channel, event: Event) -> Outcome:
        from vigil.kit.aws import error_code

        if not self.email_sender or self.ses is None:
            return Outcome(
                "rejected", None, "no sender address is set for email (NotificationEmailSender)"
            )
        try:
            message_id = send_email(
                self.ses, self.email_sender, channel.target, event, self.console_base
            )
        except Exception as error:
            code = error_code(error)
            if code is None:
                raise
            if code in _SES_TRANSIENT:
                return Outcome("retry", None, f"SES refused it for now: {code}")
            return Outcome("rejected", None, f"SES refused it: {code}")
        return Outcome("delivered", None, f"sent by SES as {message_id}")


@dataclass
class Notifier:
    """The notify function's handler: one attempt of one delivery per timer."""

    store: Store
    clock: Clock
    alarms: Alarms
    sender: Sender

    def on_timer(self, timer: Timer) -> None:
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
            interrupted = Outcome("retry", None, "the attempt stopped before its outcome was kept")
            self._conclude(notification, delivery, interrupted, "interrupted")
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
        claimed = delivery.claimed(now)
        try:
            self.store.commit(
                [self.store.save_delivery(timer.namespace, event_id, claimed, delivery)]
            )
        except ConditionFailed:
            return  # another run of this timer claimed it
        channel = self.store.get_channel(timer.namespace, channel_id)
        if channel is None:
            outcome = Outcome("rejected", None, "the channel was deleted")
        elif channel.state != "enabled":
            outcome = Outcome("rejected", None, "the channel is disabled")
        else:
            outcome = self.sender.send(channel, parse_event(json.dumps(notification.event)))
        self._conclude(notification, claimed, outcome, outcome.kind)

    def on_reminder(self, timer: Timer) -> None:
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
            self.store.commit(writes)

    def on_dead_letter(self, timer: Timer) -> None:
        """The end of an envelope's last hand-out: unless it was acknowledged or handed out
        again since, it is a dead letter, and the channels that want it are told, once."""
        envelope_id, _, kind = timer.key.partition("/")
        delivery = self.store.get_delivery(timer.namespace, envelope_id)
        if (
            delivery is None
            or delivery.state == "acknowledged"
            or delivery.generation != timer.generation
            or delivery.leased(self.clock.now())
        ):
            return
        data = DeliveryDeadLettered(
            mailbox_owner=delivery.owner,
            envelope_id=envelope_id,
            kind=kind,
            attempts=delivery.generation,
            dead_lettered_at=delivery.leased_until,
        )
        self._publish_alone(timer.namespace, "delivery.dead_lettered", data, delivery.leased_until)

    def on_stale(self, timer: Timer) -> None:
        """A session's watch: the timer of the session's ``watch_due``, any other is a stale
        copy. Beaten since, the watch moves to when the session would go stale (an hour on,
        while no channel wants session.stale): armed first, then recorded. Stale, its channels
        are told, once per silence, and the watch stops until the session's next beat."""
        for _ in range(3):
            now = self.clock.now()
            session = self.store.get_session(timer.namespace, timer.key)
            if session is None or session.watch_due != timer.due_at:
                return
            if session.stale(now):
                self._publish_alone(
                    timer.namespace, "session.stale", SessionStale.of(session), session.stale_at
                )
                moved = session.changed(watch_due=None)
            else:
                wanted = any(
                    c.wants("session.stale", None)
                    for c in self.store.list_channels(timer.namespace)
                )
                due = session.stale_at if wanted else max(session.stale_at, now + UNWATCHED)
                self.alarms.arm(timer.model_copy(update={"due_at": due}), now)
                moved = session.changed(watch_due=due)
            try:
                self.store.commit([self.store.save_beat(moved, [], [])])
            except ConditionFailed:
                continue  # beaten meanwhile: look again
            return
        # Lost to beats every time: failing hands the timer back to its queue, to try again.
        raise contended("the session's watch lost to its beats; retry later")

    def _publish_alone(
        self, namespace: str, event_type: NoticeType, data: EventData, at: datetime
    ) -> None:
        """An event that is not part of another change, written once: a second run of its
        timer finds it written."""
        event = make_event(event_type, data, namespace=namespace, occurred_at=at, console_base=None)
        writes = Outbox(self.store, self.clock, self.alarms).publish(event)
        with contextlib.suppress(ConditionFailed):
            self.store.commit(writes)

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
        notification: Notification,
        claimed: Delivery,
        outcome: Outcome,
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
        writes = [self.store.save_delivery(namespace, event_id, concluded, claimed)]
        if concluded.state == "failed":
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
            self.store.commit(writes)
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
            self._disable(namespace, claimed.channel_id, "the receiver answered 410 Gone")

    def _disable(self, namespace: str, channel_id: str, reason: str) -> None:
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
                self.store.commit(
                    [self.store.save_channel(disabled), self.store.add_audit_event(audit)]
                )
            except ConditionFailed:
                continue
            log_event(log, "channel disabled", namespace=namespace, channel_id=channel_id)
            return


def replay(
    store: Store,
    uow: UnitOfWork,
    clock: Clock,
    alarms: Alarms,
    namespace: str,
    channel_id: str,
    event_id: str,
    audited: Callable[[int], tuple[R, AuditEvent]],
) -> R | None:
    """Starts a failed delivery again, MAX_ATTEMPTS more, the first at once (its timer armed
    first), and takes it off its channel's failures, with the audit event and result that
    ``audited`` makes of the attempt's number; None if there is no such failed delivery."""
    notification = store.get_notification(namespace, event_id)
    delivery = notification.deliveries.get(channel_id) if notification else None
    if notification is None or delivery is None or delivery.state != "failed":
        return None
    assert delivery.finished_at is not None
    now = to_ms(clock.now())
    replayed = delivery.replayed(now)
    failure = DeliveryFailure(
        namespace=namespace,
        channel_id=channel_id,
        event_id=event_id,
        event_type=notification.event_type,
        failed_at=delivery.finished_at,
        attempts=0,
        status=None,
        reason="",
    )
    attempt = delivery.attempt + 1
    result, audit = audited(attempt)
    alarms.arm(attempt_timer(namespace, event_id, channel_id, attempt, now), now)
    try:
        uow.commit(
            store.save_delivery(namespace, event_id, replayed, delivery),
            store.remove_failure(failure),
            store.add_audit_event(audit),
            result=result,
        )
    except ConditionFailed:
        raise contended(
            "the delivery changed concurrently; list the failures again and retry"
        ) from None
    return result
