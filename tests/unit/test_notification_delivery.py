"""Notifications delivered, on a moved clock, to a real HTTP receiver on this machine that
verifies each request with the Standard Webhooks reference library: written with what they tell
of, retried with backoff (and Retry-After), claimed once per attempt, given up on into the
channel's failure log and replayed from it, the channel disabled on 410; and the crashes between
the steps injected."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest.mock import patch

import pytest
import standardwebhooks.webhooks
from standardwebhooks import Webhook

from tests.liveness_support import World
from tests.support import TEST_KEYS
from vigil.alarms import kinds
from vigil.alarms.timers import Timer
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.uow import UnitOfWork
from vigil.notifications.events import parse_event
from vigil.notifications.outbound import SendResult
from vigil.notifications.records import (
    ATTEMPT_LIMIT,
    BACKOFF_FACTOR,
    FIRST_BACKOFF,
    JITTER,
    MAX_ATTEMPTS,
    MAX_BACKOFF,
    Notification,
    backoff,
)
from vigil.notifications.sending import Sender

SCOPE = "job-nightly"


# -- a receiver ---------------------------------------------------------------------------------
@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: bytes = b"ok"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: datetime  # on the test's clock


def _frozen_at(moment: datetime) -> type[datetime]:
    class At(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> At:  # type: ignore[override]
            return cls.fromtimestamp(moment.timestamp(), tz)

    return At


class Receiver:
    """An HTTP server that answers each POST with the next scripted answer (then 200), and keeps
    what it was sent."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.script: list[Answer] = []
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                with receiver._lock:
                    headers = dict(self.headers.items())
                    receiver.received.append(Received(headers, body, receiver.clock.now()))
                    answer = receiver.script.pop(0) if receiver.script else Answer()
                if answer.delay:
                    time.sleep(answer.delay)
                reply = answer.body
                head = f"HTTP/1.1 {answer.status} X\r\ncontent-length: {len(reply)}\r\n"
                head += "".join(f"{k}: {v}\r\n" for k, v in answer.headers.items())
                with contextlib.suppress(OSError):  # the sender stopped waiting
                    self.wfile.write(head.encode() + b"\r\n" + reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/vigil"

    def verified(self, secret: str) -> list[dict[str, Any]]:
        """Every body received, each verified as Standard Webhooks says (raises if one fails),
        its timestamp judged against the test's clock when it arrived."""
        webhook = Webhook(secret)
        found = []
        for received in self.received:
            with patch.object(standardwebhooks.webhooks, "datetime", _frozen_at(received.at)):
                found.append(webhook.verify(received.body, received.headers))
        return found

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(clock: ManualClock) -> Iterator[Receiver]:
    found = Receiver(clock)
    yield found
    found.close()


# -- the world, with the notify function --------------------------------------------------------
class Notifying(World):
    def __init__(self, clock: ManualClock, timeout: float = 2.0) -> None:
        super().__init__(clock)
        self.use_sender(
            Sender(keys=TEST_KEYS, clock=clock, allow_private=True, timeout_seconds=timeout)
        )

    def channel(self, url: str, events: list[str], **more: Any) -> tuple[str, str]:
        created = self.call(
            "create_channel",
            name="pager",
            kind="webhook",
            url=url,
            rules=[{"events": events, **more}],
        )
        return created["channel"]["id"], created["signing_secret"]

    def notification(self, event_id: str) -> Notification:
        found = self.store.get_notification("acme", event_id)
        assert found is not None
        return found

    def notify_timers(self) -> list[Timer]:
        return [t for t in self.alarms.armed if t.kind == kinds.NOTIFY]


@pytest.fixture
def world(clock: ManualClock) -> Notifying:
    return Notifying(clock)


def arm_and_die(world: Notifying) -> str:
    """An agent arms a 10 s switch holding a lease and stops beating; returns its secret."""
    _, secret = world.tenant.register(name="worker")
    world.call("acquire_lease", secret, resource="repo:main", scope=SCOPE, ttl_seconds=600)
    world.call(
        "heartbeat",
        secret,
        scope=SCOPE,
        expect_within_seconds=10,
        on_expiry=["release_leases"],
    )
    return secret


def fired_event_id(world: Notifying) -> str:
    death = world.store.latest_death("acme", SCOPE)
    assert death is not None
    return str(death.done["notify"]["event_id"])


# -- delivered ----------------------------------------------------------------------------------
def test_a_fired_switch_is_delivered_once_signed_with_what_its_death_released(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, secret = world.channel(receiver.url, ["switch.fired"])
    arm_and_die(world)
    world.advance(11)

    [body] = receiver.verified(secret)
    event = parse_event(json.dumps(body))
    assert event.type == "switch.fired"
    assert receiver.ids() == [event.id] == [fired_event_id(world)]
    assert event.data.scope == SCOPE  # type: ignore[union-attr]
    assert event.data.released_count == 1  # type: ignore[union-attr]
    assert [r.resource for r in event.data.released] == ["repo:main"]  # type: ignore[union-attr]
    delivery = world.notification(event.id).deliveries[channel_id]
    assert (delivery.state, delivery.attempt) == ("delivered", 1)
    world.advance(3600)
    assert len(receiver.received) == 1  # nothing more, however long


def test_no_channel_wants_it_and_nothing_is_sent_or_armed(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["switch.fired"], scope_prefix="billing-")
    world.channel(receiver.url, ["request.opened"])
    arm_and_die(world)
    world.advance(11)
    death = world.store.latest_death("acme", SCOPE)
    assert death is not None
    assert death.pending() == []
    # The alert is written down, to be acknowledged, with no delivery.
    assert world.notification(fired_event_id(world)).deliveries == {}
    assert [t for t in world.alarms.armed if t.kind != "switch"] == []
    assert receiver.received == []


# -- retried ------------------------------------------------------------------------------------
def test_a_failing_receiver_is_retried_after_the_backoff_with_the_same_id(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, secret = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(500), Answer(503)]
    arm_and_die(world)
    world.advance(11)
    event_id = fired_event_id(world)
    first = world.notification(event_id).deliveries[channel_id]
    assert (first.state, first.attempt) == ("pending", 1)
    assert first.attempts[-1].status == 500
    wait = (first.next_at - first.attempts[-1].at).total_seconds()
    assert FIRST_BACKOFF.total_seconds() * (1 - JITTER) <= wait
    assert wait <= FIRST_BACKOFF.total_seconds() * (1 + JITTER)
    [timer] = world.notify_timers()
    assert (timer.generation, timer.due_at) == (2, first.next_at)

    world.advance(wait - 1)
    assert len(receiver.received) == 1  # not before its time
    world.advance(1)
    assert len(receiver.received) == 2
    second = world.notification(event_id).deliveries[channel_id]
    assert (second.state, second.attempt) == ("pending", 2)
    world.advance(backoff(2, 1).total_seconds() + 1)
    assert len(receiver.received) == 3
    assert receiver.ids() == [event_id] * 3  # one message to the receiver, three attempts
    assert len({json.dumps(b) for b in receiver.verified(secret)}) == 1
    done = world.notification(event_id).deliveries[channel_id]
    assert (done.state, done.attempt) == ("delivered", 3)
    assert [a.outcome for a in done.attempts] == ["retry", "retry", "delivered"]


def test_a_longer_retry_after_is_honoured_and_a_shorter_one_does_not_hurry_it(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, _ = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(429, {"Retry-After": "600"}), Answer(503, {"Retry-After": "1"})]
    arm_and_die(world)
    world.advance(11)
    event_id = fired_event_id(world)
    first = world.notification(event_id).deliveries[channel_id]
    assert (first.next_at - first.attempts[-1].at).total_seconds() == 600
    world.advance(599)
    assert len(receiver.received) == 1
    world.advance(1)
    second = world.notification(event_id).deliveries[channel_id]
    assert len(receiver.received) == 2
    # Asked for 1 s, the backoff of the second attempt (about 2 min) stands.
    wait = (second.next_at - second.attempts[-1].at).total_seconds()
    assert wait >= backoff(2, -1).total_seconds()


def test_a_receiver_that_does_not_answer_in_time_is_a_failed_attempt(
    clock: ManualClock, receiver: Receiver
) -> None:
    world = Notifying(clock, timeout=0.3)
    channel_id, _ = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(200, delay=1.0)]
    arm_and_die(world)
    world.advance(11)
    delivery = world.notification(fired_event_id(world)).deliveries[channel_id]
    assert (delivery.state, delivery.attempt) == ("pending", 1)
    assert delivery.attempts[-1].reason == "no answer within 0.3 s"


def test_after_every_attempt_failed_it_is_in_the_channels_failures_and_a_replay_delivers_it(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, secret = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(500)] * MAX_ATTEMPTS
    arm_and_die(world)
    world.advance(11)
    event_id = fired_event_id(world)
    started = world.clock.now()
    # The whole schedule, at its longest: every backoff stretched by the jitter.
    longest = sum((backoff(n, 1) for n in range(1, MAX_ATTEMPTS)), timedelta()).total_seconds()
    assert longest < 14 * 3600
    world.advance(60)
    while len(receiver.received) < MAX_ATTEMPTS and world.clock.now() - started < timedelta(
        seconds=longest + 60
    ):
        world.clock.advance(60)
        world.run_alarms()
    assert len(receiver.received) == MAX_ATTEMPTS
    failed = world.notification(event_id).deliveries[channel_id]
    assert (failed.state, failed.attempt) == ("failed", MAX_ATTEMPTS)
    shortest = sum((backoff(n, -1) for n in range(1, MAX_ATTEMPTS)), timedelta())
    assert failed.finished_at is not None
    assert failed.finished_at - started >= shortest - timedelta(seconds=60)
    assert min(backoff(n, 0) for n in range(1, 20)) == FIRST_BACKOFF
    assert max(backoff(n, 0) for n in range(1, 20)) == MAX_BACKOFF
    assert backoff(2, 0) == FIRST_BACKOFF * BACKOFF_FACTOR

    listed = world.call("list_delivery_failures", channel_id=channel_id)
    [failure] = listed["failures"]
    assert (failure["event_id"], failure["attempts"], failure["status"]) == (
        event_id,
        MAX_ATTEMPTS,
        500,
    )
    world.advance(3600)
    assert len(receiver.received) == MAX_ATTEMPTS  # given up on: nothing more by itself

    replayed = world.call("replay_delivery", channel_id=channel_id, event_id=event_id)
    assert replayed["next_attempt"] == MAX_ATTEMPTS + 1
    world.advance(1)
    assert len(receiver.received) == MAX_ATTEMPTS + 1
    assert set(receiver.ids()) == {event_id}
    receiver.verified(secret)
    done = world.notification(event_id).deliveries[channel_id]
    assert (done.state, done.attempt) == ("delivered", MAX_ATTEMPTS + 1)
    assert world.call("list_delivery_failures", channel_id=channel_id)["failures"] == []
    actions = [e["action"] for e in world.call("list_audit_events")["events"]]
    assert "replay_delivery" in actions
    with pytest.raises(VigilError) as again:
        world.call("replay_delivery", channel_id=channel_id, event_id=event_id)
    assert again.value.code is ErrorCode.NOT_FOUND  # delivered: nothing to replay


# -- given up on at once ------------------------------------------------------------------------
def test_410_fails_the_delivery_at_once_and_disables_the_channel(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, _ = world.channel(receiver.url, ["switch.fired", "request.opened"])
    receiver.script = [Answer(410)]
    arm_and_die(world)
    world.advance(11)
    event_id = fired_event_id(world)
    delivery = world.notification(event_id).deliveries[channel_id]
    assert (delivery.state, delivery.attempt) == ("failed", 1)
    [listed] = world.call("list_channels")["channels"]
    assert listed["state"] == "disabled"
    assert listed["disabled_reason"] == "the receiver answered 410 Gone"
    audit = world.call("list_audit_events")["events"]
    assert ("disable_channel", "vigil") in [(e["action"], e["actor"]) for e in audit]
    [failure] = world.call("list_delivery_failures", channel_id=channel_id)["failures"]
    assert failure["status"] == 410
    world.advance(3600)
    assert len(receiver.received) == 1


@pytest.mark.parametrize("status", [400, 301, 404])
def test_an_answer_a_retry_would_not_change_fails_at_once(
    world: Notifying, receiver: Receiver, status: int
) -> None:
    channel_id, _ = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(status, {"Location": "http://127.0.0.1:1/elsewhere"})]
    arm_and_die(world)
    world.advance(11)
    delivery = world.notification(fired_event_id(world)).deliveries[channel_id]
    assert (delivery.state, delivery.attempt) == ("failed", 1)
    [listed] = world.call("list_channels")["channels"]
    assert listed["state"] == "enabled"  # only a 410 disables
    world.advance(3600)
    assert len(receiver.received) == 1  # a redirect is never followed


def test_deployed_a_private_address_is_refused_before_connecting(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, _ = world.channel(receiver.url, ["switch.fired"])
    world.use_sender(Sender(keys=TEST_KEYS, clock=world.clock))  # as deployed
    arm_and_die(world)
    world.advance(11)
    delivery = world.notification(fired_event_id(world)).deliveries[channel_id]
    assert delivery.state == "failed"
    assert "private or reserved address" in delivery.attempts[-1].reason
    assert receiver.received == []


# -- crashes and duplicates ---------------------------------------------------------------------
def test_a_timer_delivered_twice_makes_its_attempt_once(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["switch.fired"])
    arm_and_die(world)
    world.clock.advance(11)
    world.run_alarms()  # the switch's alarm: it fires, the notification's timer is armed
    timers = world.alarms.take_due(world.clock.now())
    [timer] = [t for t in timers if t.kind == kinds.NOTIFY]
    real_commit = world.store.commit
    raced: list[bool] = []

    def commit(writes: Any, completion: Any = None) -> None:
        if not raced:
            # Both runs have read the attempt as due: the other claims it first.
            raced.append(True)
            world.deliverer.on_attempt(UnitOfWork(world.store), timer)
        real_commit(writes, completion)

    world.store.commit = commit  # type: ignore[method-assign]
    world.deliverer.on_attempt(UnitOfWork(world.store), timer)
    assert raced
    assert len(receiver.received) == 1


def test_a_crash_after_the_post_is_an_interrupted_attempt_retried_with_the_same_id(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, secret = world.channel(receiver.url, ["switch.fired"])
    real_post = world.sender.post

    def post_then_crash(*args: Any, **kwargs: Any) -> SendResult:
        real_post(*args, **kwargs)
        raise RuntimeError("the function stopped after its POST")

    world.sender.post = post_then_crash
    arm_and_die(world)
    world.clock.advance(11)
    world.run_alarms()
    [timer] = [t for t in world.alarms.take_due(world.clock.now()) if t.kind == kinds.NOTIFY]
    with pytest.raises(RuntimeError):
        world.deliver(timer)
    world.sender.post = real_post
    event_id = fired_event_id(world)
    claimed = world.notification(event_id).deliveries[channel_id]
    assert (claimed.state, claimed.attempt) == ("sending", 1)

    world.deliver(timer)  # redelivered at once: the attempt may still be running
    assert len(receiver.received) == 1
    # Not dropped: it comes back when the attempt would count as stopped, in case this was
    # its last delivery.
    [again] = [t for t in world.alarms.armed if t.kind == kinds.NOTIFY]
    assert again.due_at == claimed.claimed_at + ATTEMPT_LIMIT  # type: ignore[operator]
    world.alarms.armed.remove(again)
    world.clock.advance(ATTEMPT_LIMIT.total_seconds())
    world.deliver(timer)  # redelivered after the queue's visibility timeout
    interrupted = world.notification(event_id).deliveries[channel_id]
    assert (interrupted.state, interrupted.attempt) == ("pending", 2 - 1)
    assert interrupted.attempts[-1].outcome == "interrupted"
    world.advance(FIRST_BACKOFF.total_seconds() * (1 + JITTER) + 1)
    assert receiver.ids() == [event_id, event_id]  # the receiver deduplicates them
    receiver.verified(secret)
    done = world.notification(event_id).deliveries[channel_id]
    assert (done.state, done.attempt) == ("delivered", 2)


def test_a_timer_that_comes_before_the_notification_is_visible_waits_for_it(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["switch.fired"])
    early: list[Timer] = []
    real_arm = world.alarms.arm

    def arm(timer: Timer, now: Any) -> None:
        real_arm(timer, now)
        if timer.kind == kinds.NOTIFY and timer.waits == 0 and not early:
            # The queue hands the timer out at once, before the death's step has committed.
            early.append(timer)
            world.deliverer.on_attempt(UnitOfWork(world.store), timer)

    world.alarms.arm = arm  # type: ignore[method-assign]
    arm_and_die(world)
    world.clock.advance(11)
    world.run_alarms()
    assert early, "the first attempt's timer was not armed before the commit"
    # The queue handed that timer out already: only the copy that waits is left to deliver.
    world.alarms.armed = [t for t in world.alarms.armed if t != early[0]]
    world.advance(5)
    waiting = [t for t in world.delivered if t.kind == kinds.NOTIFY and t.waits == 1]
    assert waiting, "the early timer did not come back to wait"
    assert len(receiver.received) == 1


def test_a_crash_between_arming_and_the_commit_delivers_once_when_the_death_runs_again(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["switch.fired"])
    real_add, real_commit = world.store.add_notification, world.store.commit
    staged: list[bool] = []

    def add_notification(notification: Notification) -> Any:
        staged.append(True)
        return real_add(notification)

    def commit(writes: Any, completion: Any = None) -> None:
        if staged == [True]:
            staged.append(False)
            raise RuntimeError("the alarm function stopped before its commit")
        real_commit(writes, completion)

    world.store.add_notification = add_notification  # type: ignore[method-assign]
    world.store.commit = commit  # type: ignore[method-assign]
    arm_and_die(world)
    world.clock.advance(11)
    [alarm] = world.alarms.take_due(world.clock.now())
    with pytest.raises(RuntimeError):
        world.deliver(alarm)
    [armed_first] = world.notify_timers()  # armed, and its notification never written
    death = world.store.latest_death("acme", SCOPE)
    assert death is not None
    assert death.pending() == ["notify"]

    world.deliver(alarm)  # the alarm, handed out again, runs the step again
    assert world.notify_timers().count(armed_first) == 2
    world.advance(40)
    assert len(receiver.received) == 1
    assert receiver.ids() == [fired_event_id(world)]


# -- requests -----------------------------------------------------------------------------------
def test_a_requests_life_reaches_its_channel_opened_expiring_and_expired(
    world: Notifying, receiver: Receiver
) -> None:
    events = ["request.opened", "request.expiring", "request.answered", "request.expired"]
    _, secret = world.channel(receiver.url, events)
    _, asker = world.tenant.register(name="asker")
    person, _ = world.tenant.register(kind="person", name="pat")
    action = {"tool": "deploy", "arguments": {"service": "billing", "version": "2.4.1"}}
    asked = world.call(
        "ask",
        asker,
        target={"kind": "person", "id": person},
        body="Deploy billing 2.4.1?",
        kind="approval",
        action=action,
        expires_in_seconds=3600,
    )
    world.advance(1)
    [opened] = receiver.verified(secret)
    assert (opened["type"], opened["data"]["request_id"]) == ("request.opened", asked["id"])
    assert opened["data"]["action"] == action  # verbatim, as it will be redeemed

    world.advance(3600 - 600 - 2)  # just before ten minutes before it expires
    assert [e["type"] for e in receiver.verified(secret)] == ["request.opened"]
    world.advance(2)
    assert [e["type"] for e in receiver.verified(secret)] == ["request.opened", "request.expiring"]
    world.advance(600 + 1)
    types = [e["type"] for e in receiver.verified(secret)]
    assert types == ["request.opened", "request.expiring", "request.expired"]
    assert len(set(receiver.ids())) == 3  # each event its own id


def test_an_answered_request_is_told_with_who_answered(
    world: Notifying, receiver: Receiver
) -> None:
    _, secret = world.channel(receiver.url, ["request.answered"])
    _, asker = world.tenant.register(name="asker")
    person, person_secret = world.tenant.register(kind="person", name="pat")
    asked = world.call("ask", asker, target={"kind": "person", "id": person}, body="Which region?")
    world.call("reply", person_secret, id=asked["id"], version=1, outcome="answered", answer="eu")
    world.advance(1)
    [answered] = receiver.verified(secret)
    assert answered["type"] == "request.answered"
    assert (answered["data"]["outcome"], answered["data"]["answered_by"]) == ("answered", person)


def test_whoever_was_told_a_request_opened_is_told_it_was_withdrawn(
    world: Notifying, receiver: Receiver
) -> None:
    """The Slack message or email that asks a person to decide is followed by one that says
    nobody needs to: to every channel that took its opening, and to no other."""
    _, secret = world.channel(receiver.url, ["request.opened"])
    world.channel(receiver.url, ["switch.fired", "request.answered"])
    _, asker = world.tenant.register(name="asker")
    person, _ = world.tenant.register(kind="person", name="pat")
    asked = world.call(
        "ask", asker, target={"kind": "person", "id": person}, body="Deploy?", kind="approval"
    )
    world.call("withdraw_request", asker, id=asked["id"])
    world.call("withdraw_request", asker, id=asked["id"])  # again: told once
    world.advance(1)
    # Two posts in all, both signed by the channel that took the opening.
    opened, withdrawn = receiver.verified(secret)
    assert (opened["type"], withdrawn["type"]) == ("request.opened", "request.withdrawn")
    assert withdrawn["data"]["request_id"] == asked["id"]
    assert withdrawn["data"]["state"] == "withdrawn"


# -- test_channel -------------------------------------------------------------------------------
def test_test_channel_sends_one_signed_test_event_and_never_retries_it(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, secret = world.channel(receiver.url, ["switch.fired"])
    tested = world.call("test_channel", id=channel_id)
    assert (tested["delivered"], tested["outcome"], tested["status"]) == (True, "delivered", 200)
    [event] = receiver.verified(secret)
    assert event["type"] == "channel.test"
    assert event["id"] == tested["event_id"]
    assert event["data"]["requested_by"] == world.tenant.operator.id

    receiver.script = [Answer(503)]
    failed = world.call("test_channel", id=channel_id)
    assert (failed["delivered"], failed["outcome"], failed["status"]) == (False, "retry", 503)
    assert failed["event_id"] != tested["event_id"]  # each test is an event of its own
    world.advance(3600)
    assert len(receiver.received) == 2  # a test is never retried
    assert world.call("list_delivery_failures", channel_id=channel_id)["failures"] == []
    _, worker = world.tenant.register(name="worker")
    with pytest.raises(VigilError) as refused:
        world.call("test_channel", worker, id=channel_id)
    assert refused.value.code is ErrorCode.FORBIDDEN


def test_each_test_of_a_channel_is_audited_whatever_the_receiver_answered(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, _ = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(200), Answer(503)]
    world.call("test_channel", id=channel_id)
    world.call("test_channel", id=channel_id)
    _, worker = world.tenant.register(name="worker")
    with pytest.raises(VigilError):
        world.call("test_channel", worker, id=channel_id)
    tests = [
        (e["actor"], e["target_kind"], e["target"], e["before_version"], e["after_version"])
        for e in world.call("list_audit_events")["events"]
        if e["action"] == "test_channel"
    ]
    operator = world.tenant.operator.id
    assert tests == [(operator, "channel", channel_id, 1, 1)] * 2


def test_a_disabled_channel_gets_no_new_events_and_its_pending_ones_fail(
    world: Notifying, receiver: Receiver
) -> None:
    channel_id, _ = world.channel(receiver.url, ["switch.fired"])
    receiver.script = [Answer(500)]
    arm_and_die(world)
    world.advance(11)  # the first attempt fails; the second is due in about 30 s
    world.call("set_channel_state", id=channel_id, version=1, state="disabled")
    world.advance(60)
    delivery = world.notification(fired_event_id(world)).deliveries[channel_id]
    assert delivery.state == "failed"
    assert delivery.attempts[-1].reason == "the channel is disabled"
    assert len(receiver.received) == 1


# -- Slack and email ----------------------------------------------------------------------------
def test_slack_gets_block_kit_with_a_console_link_and_no_action(
    world: Notifying, receiver: Receiver
) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    def slack(url: str, body: bytes, headers: Any, **options: Any) -> SendResult:
        sent.append((url, json.loads(body)))
        return SendResult("delivered", 200, "HTTP 200: ok")

    slack_url = "https://hooks.slack.com/services/T0001/B0001/slacktokenslacktoken"
    world.call(
        "create_channel",
        name="ops",
        kind="slack",
        url=slack_url,
        rules=[{"events": ["switch.fired"]}],
    )
    world.use_sender(
        Sender(
            keys=TEST_KEYS, clock=world.clock, console_base="https://vigil.example.com", post=slack
        )
    )
    arm_and_die(world)
    world.advance(11)
    [(url, message)] = sent
    assert url == slack_url  # opened from its seal at send time only
    assert message["text"] == f"Switch fired: {SCOPE}"
    kinds = [block["type"] for block in message["blocks"]]
    assert kinds[0] == "header"
    assert kinds[-1] == "actions"
    [button] = message["blocks"][-1]["elements"]
    assert button["url"] == f"https://vigil.example.com/console/switch?scope={SCOPE}"
    assert "value" not in button  # a link to the console, never an action of its own


def test_email_goes_through_ses_and_moto_keeps_it(
    aws: None, world: Notifying, receiver: Receiver
) -> None:
    import boto3
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    ses = boto3.client("sesv2", region_name="us-east-1")
    ses.create_email_identity(EmailIdentity="vigil@example.com")
    world.call(
        "create_channel",
        name="on-call",
        kind="email",
        email="oncall@example.com",
        rules=[{"events": ["switch.fired"]}],
    )
    world.use_sender(
        Sender(keys=TEST_KEYS, clock=world.clock, email_sender="vigil@example.com", ses=ses)
    )
    arm_and_die(world)
    world.advance(11)
    [mail] = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    assert mail.source == "vigil@example.com"
    assert mail.destinations == {"ToAddresses": ["oncall@example.com"]}
    assert mail.subject == f"[Vigil] Switch fired: {SCOPE}"
    [notification] = world.store.notifications.values()  # type: ignore[attr-defined]
    [delivery] = notification.deliveries.values()
    assert delivery.state == "delivered"
    assert delivery.attempts[-1].reason == f"sent by SES as {mail.id}"


def test_email_without_a_sender_fails_with_a_reason_an_operator_can_act_on(
    world: Notifying, receiver: Receiver
) -> None:
    channel = world.call(
        "create_channel",
        name="on-call",
        kind="email",
        email="oncall@example.com",
        rules=[{"events": ["switch.fired"]}],
    )
    arm_and_die(world)
    world.advance(11)
    [failure] = world.call("list_delivery_failures", channel_id=channel["channel"]["id"])[
        "failures"
    ]
    assert "NotificationEmailSender" in failure["reason"]


# -- repeats, escalation and acknowledgement ----------------------------------------------------
def test_an_unacknowledged_alert_repeats_and_escalates_until_a_person_acknowledges_it(
    world: Notifying, receiver: Receiver
) -> None:
    second = Receiver(world.clock)
    try:
        backup, backup_secret = world.channel(second.url, ["request.expired"])
        _, secret = world.channel(
            receiver.url,
            ["switch.fired"],
            repeat_every_minutes=10,
            escalate_after_minutes=25,
            escalate_to=backup,
        )
        arm_and_die(world)
        world.advance(11)
        alert = fired_event_id(world)
        world.advance(10 * 60 - 1)
        assert len(receiver.received) == 1  # not before ten minutes
        world.advance(2)
        first, repeat = receiver.verified(secret)
        assert repeat["reminder"] == {"of": alert, "kind": "repeat", "number": 1}
        assert repeat["id"] != alert  # its own id: a receiver deduplicating by id shows it
        assert repeat["data"] == first["data"]
        world.advance(10 * 60)
        assert [e["reminder"]["number"] for e in receiver.verified(secret)[1:]] == [1, 2]
        assert second.received == []
        world.advance(5 * 60)  # 25 minutes: the backup channel is told, once
        [escalated] = second.verified(backup_secret)
        assert escalated["reminder"] == {"of": alert, "kind": "escalation", "number": 1}
        assert escalated["type"] == "switch.fired"

        person, person_secret = world.tenant.register(kind="person", name="pat")
        _, worker_secret = world.tenant.register(name="bot")
        with pytest.raises(VigilError) as refused:
            world.call("acknowledge_alert", worker_secret, event_id=alert)
        assert refused.value.code is ErrorCode.FORBIDDEN  # an agent is not a person
        # Acknowledged by a repeat's id: the alert it repeats is the one acknowledged.
        acked = world.call("acknowledge_alert", person_secret, event_id=repeat["id"])
        assert (acked["event_id"], acked["acknowledged_by"]) == (alert, person)
        again = world.call("acknowledge_alert", event_id=alert)  # the operator, later
        assert again == acked  # the first acknowledgement stands
        world.advance(24 * 3600)
        assert len(receiver.received) == 3
        assert len(second.received) == 1
    finally:
        second.close()


def test_the_alert_of_a_switch_that_fired_before_any_channel_can_be_acknowledged(
    world: Notifying, receiver: Receiver
) -> None:
    arm_and_die(world)
    world.advance(11)  # fired, and no channel exists to tell
    alert = fired_event_id(world)
    [death] = world.call("list_deaths")["deaths"]
    assert death["alert_id"] == alert
    person, person_secret = world.tenant.register(kind="person", name="pat")
    acked = world.call("acknowledge_alert", person_secret, event_id=alert)
    assert (acked["event_id"], acked["acknowledged_by"]) == (alert, person)
    # A channel made afterwards is not sent the old alert, nor reminded of it.
    world.channel(receiver.url, ["switch.fired"], repeat_every_minutes=10)
    world.advance(3600)
    assert receiver.received == []


def test_an_answered_request_stops_its_repeats(world: Notifying, receiver: Receiver) -> None:
    world.channel(receiver.url, ["request.opened"], repeat_every_minutes=5)
    _, asker = world.tenant.register(name="asker")
    person, person_secret = world.tenant.register(kind="person", name="pat")
    asked = world.call("ask", asker, target={"kind": "person", "id": person}, body="Which region?")
    world.advance(5 * 60 + 1)
    assert len(receiver.received) == 2
    world.call("reply", person_secret, id=asked["id"], version=1, outcome="answered", answer="eu")
    world.advance(3600)
    assert len(receiver.received) == 2


def test_a_switch_armed_again_stops_the_repeats_of_its_death(
    world: Notifying, receiver: Receiver
) -> None:
    _, signing = world.channel(receiver.url, ["switch.fired"], repeat_every_minutes=5)
    secret = arm_and_die(world)
    world.advance(11)
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=86400)
    world.advance(3600)
    # Told of the death, then of its end (the channel's rule takes switch.fired), no repeat.
    fired, recovered = receiver.verified(signing)
    assert [fired["type"], recovered["type"]] == ["switch.fired", "switch.recovered"]
    assert recovered["data"]["fired_event_id"] == fired["id"]
    assert recovered["data"]["downtime_seconds"] == 1  # down since its deadline, 10 s in


def test_a_request_escalates_to_the_channel_it_names_after_its_time_unless_decided(
    world: Notifying, receiver: Receiver
) -> None:
    second = Receiver(world.clock)
    try:
        _, secret = world.channel(receiver.url, ["request.opened"])
        backup, backup_secret = world.channel(second.url, ["request.expired"])
        _, asker = world.tenant.register(name="asker")
        person, person_secret = world.tenant.register(kind="person", name="pat")
        policy = {"escalate_after_seconds": 600, "escalate_to": backup}
        target = {"kind": "person", "id": person}
        asked = world.call("ask", asker, target=target, body="Which region?", policy=policy)
        decided = world.call("ask", asker, target=target, body="Which zone?", policy=policy)
        world.call("reply", person_secret, id=decided["id"], version=1, outcome="answered")
        seen = world.call("ask", asker, target=target, body="Which rack?", policy=policy)
        world.advance(1)
        alerts = {e["data"]["request_id"]: e["id"] for e in receiver.verified(secret)}
        world.call("acknowledge_alert", person_secret, event_id=alerts[seen["id"]])
        world.advance(598)
        assert second.received == []
        world.advance(2)
        # Only the request still open and unacknowledged escalates.
        [escalated] = second.verified(backup_secret)
        opened = [e for e in receiver.verified(secret) if e["data"]["request_id"] == asked["id"]]
        assert escalated["type"] == "request.opened"
        assert escalated["data"]["request_id"] == asked["id"]
        assert escalated["reminder"] == {"of": opened[0]["id"], "kind": "escalation", "number": 1}
        world.advance(3600)
        assert len(second.received) == 1
    finally:
        second.close()


def test_a_request_names_an_escalation_whole_and_before_its_deadline(world: Notifying) -> None:
    backup, _ = world.channel("http://127.0.0.1:9/x", ["request.expired"])
    _, asker = world.tenant.register(name="asker")
    person, _ = world.tenant.register(kind="person", name="pat")
    target = {"kind": "person", "id": person}
    for policy in (
        {"escalate_after_seconds": 600},
        {"escalate_to": backup},
        {"escalate_after_seconds": 600, "escalate_to": "chn_doesnotexist00"},
        {"escalate_after_seconds": 3600, "escalate_to": backup},
    ):
        with pytest.raises(VigilError) as refused:
            world.call(
                "ask", asker, target=target, body="?", expires_in_seconds=1800, policy=policy
            )
        assert refused.value.code is ErrorCode.INVALID_ARGUMENT, policy
    assert world.call("request_status", asker)["requests"] == []
    whole = {"escalate_after_seconds": 600, "escalate_to": backup}
    asked = world.call("ask", asker, target=target, body="?", policy=whole)
    assert world.call("get_request", asker, id=asked["id"])["policy"]["escalate_to"] == backup


def test_escalation_needs_an_existing_channel_of_the_namespace(world: Notifying) -> None:
    with pytest.raises(VigilError) as refused:
        world.channel(
            "http://127.0.0.1:9/x",
            ["switch.fired"],
            escalate_after_minutes=10,
            escalate_to="chn_doesnotexist00",
        )
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert refused.value.details["problems"][0]["field"] == "rules.0.escalate_to"
    with pytest.raises(VigilError) as half:
        world.channel("http://127.0.0.1:9/x", ["switch.fired"], escalate_after_minutes=10)
    assert half.value.code is ErrorCode.INVALID_ARGUMENT
    assert world.store.list_channels("acme") == []


# -- sessions gone stale and dead letters -------------------------------------------------------
def test_a_session_that_stops_beating_is_told_once_per_silence(
    world: Notifying, receiver: Receiver
) -> None:
    _, secret = world.channel(receiver.url, ["session.stale"])
    _, agent = world.tenant.register(name="worker")

    def beat() -> None:
        world.call(
            "session_heartbeat",
            agent,
            sessionId="build-42",
            status="active",
            idempotencyKey=str(world.clock.now().timestamp()),
        )

    for _ in range(6):  # beaten every 60 s: never stale, and the watch only moves
        beat()
        world.advance(60)
    assert receiver.received == []
    world.advance(62)  # 122 s since the last beat
    [stale] = receiver.verified(secret)
    assert stale["type"] == "session.stale"
    assert (stale["data"]["session_id"], stale["data"]["stale_after_seconds"]) == ("build-42", 120)
    world.advance(3600)
    assert len(receiver.received) == 1  # once per silence, and the watch stopped

    beat()
    world.advance(122)
    first, second = receiver.verified(secret)
    assert second["type"] == "session.stale"
    assert second["id"] != first["id"]  # a new silence, a new event
    assert [t for t in world.alarms.armed if t.kind == kinds.STALE] == []


def test_an_ended_session_is_never_told_as_stale_and_its_watch_stops(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["session.stale"])
    _, agent = world.tenant.register(name="worker")
    world.call(
        "session_heartbeat",
        agent,
        sessionId="build-5",
        progressPercent=100,
        stepIndex=5,
        stepCount=5,
        idempotencyKey="last-beat",
    )
    [watch] = [t for t in world.alarms.armed if t.kind == kinds.STALE]
    world.advance(60)
    world.call("end_session", agent, sessionId="build-5", outcome="completed")
    world.advance(3600)  # far past the stale threshold, and past the watch's due time
    assert watch.due_at < world.clock.now()
    assert receiver.received == []  # no session.stale
    assert [t for t in world.alarms.armed if t.kind == kinds.STALE] == []


def test_an_envelope_never_acknowledged_is_told_as_a_dead_letter_once(
    world: Notifying, receiver: Receiver
) -> None:
    _, secret = world.channel(receiver.url, ["delivery.dead_lettered"])
    agent_id, agent = world.tenant.register(name="forgetful")
    _, sender = world.tenant.register(name="sender")
    world.call("send", sender, target={"kind": "agent", "id": agent_id}, body="please do X")
    handed = []
    for _ in range(5):
        handed += world.call("receive", agent, lease_seconds=30)["deliveries"]
        world.advance(31)  # the lease lapses unacknowledged
    assert len(handed) == 5
    [dead] = receiver.verified(secret)
    assert dead["type"] == "delivery.dead_lettered"
    assert dead["data"]["envelope_id"] == handed[0]["id"]
    assert (dead["data"]["mailbox_owner"], dead["data"]["attempts"]) == (agent_id, 5)
    world.advance(3600)
    assert len(receiver.received) == 1


def test_an_envelope_acknowledged_on_its_last_hand_out_is_no_dead_letter(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["delivery.dead_lettered"])
    agent_id, agent = world.tenant.register(name="late")
    _, sender = world.tenant.register(name="sender")
    world.call("send", sender, target={"kind": "agent", "id": agent_id}, body="please do X")
    for _ in range(4):
        world.call("receive", agent, lease_seconds=30)
        world.advance(31)
    [last] = world.call("receive", agent, lease_seconds=30)["deliveries"]
    world.call("acknowledge", agent, id=last["id"], generation=last["generation"])
    world.advance(3600)
    assert receiver.received == []


def test_every_channel_that_repeats_an_alert_gets_its_own_repeats(
    world: Notifying, receiver: Receiver
) -> None:
    second = Receiver(world.clock)
    try:
        _, first_secret = world.channel(receiver.url, ["switch.fired"], repeat_every_minutes=10)
        _, second_secret = world.channel(second.url, ["switch.fired"], repeat_every_minutes=10)
        arm_and_die(world)
        world.advance(11 + 20 * 60 + 1)
        firsts = receiver.verified(first_secret)
        seconds = second.verified(second_secret)
        assert [e.get("reminder", {}) and e["reminder"]["number"] for e in firsts] == [None, 1, 2]
        assert [e.get("reminder", {}) and e["reminder"]["number"] for e in seconds] == [None, 1, 2]
        assert firsts[0]["id"] == seconds[0]["id"]  # one alert
        assert {e["id"] for e in firsts[1:]}.isdisjoint(e["id"] for e in seconds[1:])
    finally:
        second.close()


def test_a_reminder_timer_delivered_twice_leaves_one_chain(
    world: Notifying, receiver: Receiver
) -> None:
    world.channel(receiver.url, ["switch.fired"], repeat_every_minutes=10)
    arm_and_die(world)
    world.advance(11)
    [reminder] = [t for t in world.alarms.armed if t.kind == kinds.REMIND]
    world.alarms.armed.append(reminder)  # the queue hands it out twice
    world.advance(10 * 60 + 1)
    assert len(receiver.received) == 2  # one repeat
    assert len([t for t in world.alarms.armed if t.kind == kinds.REMIND]) == 1
    world.advance(10 * 60)
    assert len(receiver.received) == 3


def test_a_replaced_request_is_announced_and_reminded_of(
    world: Notifying, receiver: Receiver
) -> None:
    _, secret = world.channel(receiver.url, ["request.opened"], repeat_every_minutes=10)
    _, asker = world.tenant.register(name="asker")
    person, _ = world.tenant.register(kind="person", name="pat")
    asked = world.call("ask", asker, target={"kind": "person", "id": person}, body="v1?")
    replaced = world.call(
        "replace_request", asker, id=asked["id"], version=1, body="v2?", idempotency_key="r1"
    )
    world.advance(10 * 60 + 2)
    events = receiver.verified(secret)
    opened = [(e["data"]["request_id"], e.get("reminder")) for e in events]
    new_id = replaced["replacement"]["id"]
    assert (asked["id"], None) in opened
    assert (new_id, None) in opened
    # The superseded request is not open any more: only the replacement is reminded of.
    reminded = [request for request, reminder in opened if reminder]
    assert reminded == [new_id]


def test_a_lost_session_watch_is_armed_again_by_a_beat(
    world: Notifying, receiver: Receiver
) -> None:
    _, secret = world.channel(receiver.url, ["session.stale"])
    _, agent = world.tenant.register(name="worker")

    def beat() -> None:
        world.call(
            "session_heartbeat",
            agent,
            sessionId="build-7",
            idempotencyKey=str(world.clock.now().timestamp()),
        )

    beat()
    world.alarms.armed = [t for t in world.alarms.armed if t.kind != kinds.STALE]  # lost
    for _ in range(8):  # beaten every minute for eight minutes: the watch is long overdue
        world.advance(60)
        beat()
    assert [t.kind for t in world.alarms.armed].count(kinds.STALE) == 1
    world.advance(125)
    assert [e["type"] for e in receiver.verified(secret)] == ["session.stale"]
