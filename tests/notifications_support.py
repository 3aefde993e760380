"""One event of each type, built from the records the way the delivery pipeline builds them,
with values that markup would misread (``&``, ``<``, ``>``, quotes, a Slack mention)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from vigil.mailboxes.events import DeliveryDeadLettered
from vigil.notifications.events import (
    EVENT_TYPES,
    AlertAcknowledged,
    Event,
    NoticeType,
    event_id,
    make_event,
)
from vigil.notifications.records import FOLLOWS
from vigil.requests.events import RequestData
from vigil.requests.records import Request
from vigil.sessions.events import SessionStale
from vigil.sessions.records import Session
from vigil.switches.events import (
    SwitchFired,
    SwitchFlapping,
    SwitchRanShort,
    SwitchRecovered,
    SwitchSettled,
)
from vigil.switches.records import Death, HeldLease, Release

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NAMESPACE = "acme"
CONSOLE = "https://vigil.example.com"
HOSTILE = "<!channel> & <https://evil.example|click> \"quoted\" 'single' <b>bold</b>"
REQUESTER = "agt_aaaaaaaaaaaaaaaa"
PERSON = "per_bbbbbbbbbbbbbbbb"
ACTION = {"tool": "deploy", "args": {"target": "<prod>", "note": "a & b"}}
# Two "op" keys on screen (one ends in a zero-width space), and a file that reads as ".png".
DISGUISED = {"op": "deploy", "op\u200b": "drop-database", "file": "\u202egnp.hs"}


def death(scope: str = "deploy <prod> & co", released: int = 7) -> Death:
    first = [HeldLease(resource=f"db/{n}", generation=n) for n in range(1, 6)]
    return Death(
        namespace=NAMESPACE,
        scope=scope,
        generation=3,
        holder=REQUESTER,
        agent_id="worker-3",
        deadline=T0,
        fired_at=T0 + timedelta(seconds=1.25),
        actions=["release_leases", "mark_failed", "queue_alert"],
        notify_address=None,
        release=Release(after="db/7", released=released, pages=1, first=first),
        done={},
        version=2,
    )


def approval(body: str = HOSTILE, action: dict[str, Any] = ACTION) -> Request:
    return Request.asked(
        namespace=NAMESPACE,
        request_id="req_cccccccccccccccc",
        kind="approval",
        requester=REQUESTER,
        audience=[PERSON],
        conversation_id="cnv_dddddddddddddddd",
        message_id="msg_eeeeeeeeeeeeeeee",
        body=body,
        choices=None,
        action=action,
        now=T0,
        lifetime_seconds=3600,
    )


def session() -> Session:
    return Session(
        namespace=NAMESPACE,
        session_id="ses <1> & more",
        owner=REQUESTER,
        status="active",
        progress_percent=None,
        current_step=None,
        step_index=None,
        step_count=None,
        created_at=T0,
        last_beat_at=T0,
        beats=4,
        acked_through=0,
        last_seq=0,
        version=4,
    )


def dead_letter() -> DeliveryDeadLettered:
    return DeliveryDeadLettered(
        mailbox_owner=REQUESTER,
        envelope_id="env_ffffffffffffffffffffffffff",
        kind="message",
        attempts=5,
        dead_lettered_at=T0,
    )


def sample(event_type: NoticeType, console_base: str | None = CONSOLE) -> Event:
    request = approval()
    data: (
        SwitchFired
        | SwitchRecovered
        | SwitchFlapping
        | SwitchSettled
        | SwitchRanShort
        | RequestData
        | SessionStale
        | DeliveryDeadLettered
        | AlertAcknowledged
    )
    match event_type:
        case "switch.fired":
            data = SwitchFired.of(death())
        case "switch.recovered":
            ended = death().recovery(T0 + timedelta(minutes=42, seconds=7), PERSON)
            data = SwitchRecovered.of(ended, fired_id(ended.scope, ended.generation))
        case "switch.flapping":
            data = SwitchFlapping.of(death(), 3, 3600)
        case "switch.settled":
            flapping = SwitchFlapping.of(death(), 3, 3600)
            data = SwitchSettled(
                scope=flapping.scope,
                flapping_since=flapping.fired_at,
                settled_at=T0 + timedelta(hours=2),
                flapping_event_id=event_id(NAMESPACE, "switch.flapping", *flapping.identity()),
            )
        case "switch.ran_short":
            data = SwitchRanShort(
                scope=death().scope,
                generation=3,
                holder=REQUESTER,
                agent_id="worker-3",
                started_at=T0,
                finished_at=T0 + timedelta(seconds=4),
                run_seconds=4,
                min_run_seconds=300,
            )
        case "alert.acknowledged":
            data = AlertAcknowledged(
                alert_id=fired_id(death().scope, death().generation),
                alert_type="switch.fired",
                scope=death().scope,
                acknowledged_by=PERSON,
                acknowledged_at=T0 + timedelta(minutes=3),
            )
        case "request.opened" | "request.expiring":
            data = RequestData.of(request)
        case "request.answered":
            data = RequestData.of(request.replied(PERSON, "approved", None, 1, T0))
        case "request.expired":
            data = RequestData.of(request.expired(request.expires_at))
        case "request.withdrawn":
            data = RequestData.of(request.withdrawn(request.requester, T0))
        case "session.stale":
            data = SessionStale.of(session())
        case "delivery.dead_lettered":
            data = dead_letter()
    return make_event(
        event_type,
        data,
        namespace=NAMESPACE,
        occurred_at=T0 + timedelta(minutes=5),
        console_base=console_base,
    )


def fired_id(scope: str, generation: int) -> str:
    """The id of the switch.fired event of ``scope``'s death of ``generation``."""
    return event_id(NAMESPACE, "switch.fired", scope, str(generation))


def opened(request: Request) -> Event:
    """The request.opened event of ``request``."""
    return make_event(
        "request.opened",
        RequestData.of(request),
        namespace=NAMESPACE,
        occurred_at=T0 + timedelta(minutes=5),
        console_base=CONSOLE,
    )


def samples(console_base: str | None = CONSOLE) -> list[Event]:
    """One of each event a channel may receive: those its rules choose, those that follow, and
    an alert's acknowledgement (for on-call services)."""
    kinds: list[NoticeType] = [*EVENT_TYPES, *FOLLOWS, "alert.acknowledged"]  # type: ignore[list-item]
    return [sample(event_type, console_base) for event_type in kinds]
