"""The events Vigil notifies people of, as the envelope every channel's format starts from.

An event is ``{"type", "id", "namespace", "occurred_at", "scope", "console_url", "data"}``, with
``data`` typed by ``type``. Its id is derived from what it is about (``event_id``), so an event
built again after a crash is the same event: the id is also the webhook's ``webhook-id``, which
receivers deduplicate on. The JSON Schema of each type (``event_schemas``) is committed under
docs/events/ and is the contract with receivers.

These models are frozen and reject unknown fields. They know the records they are built from,
but nothing of storage, tools or transports.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlencode

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter

from vigil.mailboxes.records import EnvelopeKind
from vigil.notifications.records import EVENT_TYPES as EVENT_TYPES
from vigil.notifications.records import EventType as EventType
from vigil.notifications.records import NoticeType as NoticeType
from vigil.requests.records import Outcome, Request, RequestKind, RequestState
from vigil.sessions.records import STALE_AFTER_SECONDS, Session, SessionStatus
from vigil.switches.records import Action, Death

# A request's body as an event carries it: enough to decide from a phone, small enough for
# every channel's limits.
MAX_BODY = 2000
ELLIPSIS = "…"
# "evt_" and 26 base32 characters: 130 bits of a SHA-256 digest.
EVENT_ID_PATTERN = r"^evt_[a-z2-7]{26}$"


def cut(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def event_id(*parts: str) -> str:
    """The id of the event that ``parts`` identify (its namespace, its type, what it is about):
    the same parts always give the same id."""
    # As a JSON list, so that no two different lists of parts give the same text.
    digest = hashlib.sha256(json.dumps(list(parts)).encode()).digest()
    return "evt_" + base64.b32encode(digest).decode().lower()[:26]


class _Model(BaseModel):
    # Built on first use, as the records are: a function that never notifies pays nothing.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# -- data of each type --------------------------------------------------------------------------


class ReleasedLease(_Model):
    resource: str
    generation: int


class SwitchFired(_Model):
    """A dead-man switch missed its deadline and fired: what it was, and what its actions did."""

    scope: str
    generation: int = Field(description="The generation of the switch that died.")
    holder: str = Field(description="Principal id of who had armed it and stopped beating.")
    agent_id: str | None = Field(description="The label its last beat gave the instance.")
    deadline: AwareDatetime = Field(description="The deadline that was missed.")
    fired_at: AwareDatetime = Field(description="When the missed deadline was seen and acted on.")
    lateness_seconds: float = Field(description="fired_at minus deadline, in seconds.")
    actions: list[Action] = Field(description="The on_expiry actions chosen, in run order.")
    released_count: int | None = Field(
        description="How many leases release_leases released; null if it was not chosen."
    )
    released: list[ReleasedLease] = Field(
        description="The first few leases released (all of them are in resume_packet)."
    )
    released_pages: int | None = Field(
        description="How many pages of released leases resume_packet returns; null as above."
    )

    @classmethod
    def of(cls, death: Death) -> SwitchFired:
        chosen = "release_leases" in death.actions
        return cls(
            scope=death.scope,
            generation=death.generation,
            holder=death.holder,
            agent_id=death.agent_id,
            deadline=death.deadline,
            fired_at=death.fired_at,
            lateness_seconds=death.lateness_seconds,
            actions=death.actions,
            released_count=death.release.released if chosen else None,
            released=[
                ReleasedLease(resource=held.resource, generation=held.generation)
                for held in (death.release.first if chosen else [])
            ],
            released_pages=death.release.pages if chosen else None,
        )

    def identity(self) -> tuple[str, ...]:
        return (self.scope, str(self.generation))


Body = Annotated[
    str,
    BeforeValidator(lambda text: cut(text, MAX_BODY) if isinstance(text, str) else text),
    Field(max_length=MAX_BODY, description=f"The request's text, cut to {MAX_BODY} with '…'."),
]


class RequestData(_Model):
    """A question, an approval or a task put to people and agents: every request event's data."""

    request_id: str
    kind: RequestKind
    state: RequestState
    requester: str = Field(description="Principal id of who asked.")
    audience: list[str] = Field(description="Principal ids of who may decide it.")
    body: Body
    choices: list[str] | None
    action: dict[str, Any] | None = Field(
        description="The exact action an approval binds, as it will be redeemed; else null."
    )
    expires_at: AwareDatetime
    outcome: Outcome | None = Field(description="How it was decided; null unless answered.")
    answered_by: str | None = Field(description="Principal id of who decided; null unless so.")

    @classmethod
    def of(cls, request: Request) -> RequestData:
        outcome: Outcome | None = None
        answered_by: str | None = None
        if request.response is not None and request.response.outcome != "expired":
            outcome, answered_by = request.response.outcome, request.response.by
        return cls(
            request_id=request.id,
            kind=request.kind,
            state=request.state,
            requester=request.requester,
            audience=request.audience,
            body=request.body,
            choices=request.choices,
            action=request.action,
            expires_at=request.expires_at,
            outcome=outcome,
            answered_by=answered_by,
        )

    def identity(self) -> tuple[str, ...]:
        return (self.request_id,)


class SessionStale(_Model):
    """A working agent's session has not beaten for longer than stale_after_seconds."""

    session_id: str
    owner: str = Field(description="Principal id of the agent whose session it is.")
    status: SessionStatus = Field(description="The status its last beat reported.")
    last_beat_at: AwareDatetime
    stale_after_seconds: int

    @classmethod
    def of(cls, session: Session) -> SessionStale:
        return cls(
            session_id=session.session_id,
            owner=session.owner,
            status=session.status,
            last_beat_at=session.last_beat_at,
            stale_after_seconds=STALE_AFTER_SECONDS,
        )

    def identity(self) -> tuple[str, ...]:
        # A session goes stale once per silence: a beat and a new silence is a new event.
        return (self.session_id, self.last_beat_at.isoformat())


class DeliveryDeadLettered(_Model):
    """A mailbox delivery was handed out its last time without being acknowledged."""

    mailbox_owner: str = Field(description="Principal id of the mailbox's owner.")
    envelope_id: str
    kind: EnvelopeKind
    attempts: int = Field(description="How many times it was handed out.")
    dead_lettered_at: AwareDatetime

    def identity(self) -> tuple[str, ...]:
        return (self.envelope_id,)


class ChannelTest(_Model):
    """Sent by test_channel: nothing happened; the channel is shown to work, or why not."""

    test_id: str = Field(description="New for every test, so no two tests share an event id.")
    channel_id: str
    requested_by: str = Field(description="Principal id of the operator who asked for it.")
    requested_at: AwareDatetime

    def identity(self) -> tuple[str, ...]:
        # Every test is an event of its own: receivers must not deduplicate one against another.
        return (self.channel_id, self.test_id)


EventData = SwitchFired | RequestData | SessionStale | DeliveryDeadLettered | ChannelTest


# -- the envelope -------------------------------------------------------------------------------


class Reminder(_Model):
    """What a repeated or escalated alert says of the alert it follows."""

    of: str = Field(pattern=EVENT_ID_PATTERN, description="The id of the first alert.")
    kind: Literal["repeat", "escalation"]
    number: int = Field(ge=1, description="1 for the first repeat, 2 for the next, ...")


class EventEnvelope(_Model):
    """What every event has; each type's model fixes ``type`` and types ``data``."""

    type: NoticeType
    id: str = Field(
        pattern=EVENT_ID_PATTERN,
        description="Stable: the same event sent again has the same id (the webhook-id).",
    )
    namespace: str
    occurred_at: AwareDatetime
    scope: str | None = Field(
        description="What a rule's scope_prefix matches: a switch's scope; null if none."
    )
    console_url: str | None = Field(description="The console's page about it; null if none.")
    reminder: Reminder | None = Field(
        default=None,
        description=(
            "Set when this is an alert repeated or escalated because nobody acknowledged the "
            "first one (acknowledge_alert); its id is then its own, so receivers that "
            "deduplicate by id still show it."
        ),
    )

    def reminded(
        self, kind: Literal["repeat", "escalation"], channel_id: str, number: int, now: datetime
    ) -> Self:
        """This alert again, as repeat or escalation ``number`` of the rule of channel
        ``channel_id``, with an id of its own (one per channel whose rule reminds)."""
        return self.model_copy(
            update={
                "id": event_id(self.id, kind, channel_id, str(number)),
                "occurred_at": now,
                "reminder": Reminder(of=self.id, kind=kind, number=number),
            }
        )


class SwitchFiredEvent(EventEnvelope):
    type: Literal["switch.fired"]
    data: SwitchFired


class RequestOpenedEvent(EventEnvelope):
    type: Literal["request.opened"]
    data: RequestData


class RequestExpiringEvent(EventEnvelope):
    type: Literal["request.expiring"]
    data: RequestData


class RequestAnsweredEvent(EventEnvelope):
    type: Literal["request.answered"]
    data: RequestData


class RequestExpiredEvent(EventEnvelope):
    type: Literal["request.expired"]
    data: RequestData


class SessionStaleEvent(EventEnvelope):
    type: Literal["session.stale"]
    data: SessionStale


class DeliveryDeadLetteredEvent(EventEnvelope):
    type: Literal["delivery.dead_lettered"]
    data: DeliveryDeadLettered


class ChannelTestEvent(EventEnvelope):
    type: Literal["channel.test"]
    data: ChannelTest


Event = Annotated[
    SwitchFiredEvent
    | RequestOpenedEvent
    | RequestExpiringEvent
    | RequestAnsweredEvent
    | RequestExpiredEvent
    | SessionStaleEvent
    | DeliveryDeadLetteredEvent
    | ChannelTestEvent,
    Field(discriminator="type"),
]
EVENT_MODELS: dict[NoticeType, type[EventEnvelope]] = {
    "switch.fired": SwitchFiredEvent,
    "request.opened": RequestOpenedEvent,
    "request.expiring": RequestExpiringEvent,
    "request.answered": RequestAnsweredEvent,
    "request.expired": RequestExpiredEvent,
    "session.stale": SessionStaleEvent,
    "delivery.dead_lettered": DeliveryDeadLetteredEvent,
    "channel.test": ChannelTestEvent,
}


@cache
def _events() -> TypeAdapter[Event]:
    return TypeAdapter(Event)


def console_link(console_base: str | None, data: EventData) -> str | None:
    """The console page about ``data``, under ``console_base`` (the URL the console's
    /console/... paths hang from, e.g. https://api.example.com); None without a base, or for
    what has no page of its own (a dead letter)."""
    if console_base is None:
        return None
    match data:
        case SwitchFired():
            path, query = "/console/switch", {"scope": data.scope}
        case RequestData():
            path, query = "/console/request", {"id": data.request_id}
        case SessionStale():
            path, query = "/console/session", {"id": data.session_id}
        case DeliveryDeadLettered() | ChannelTest():
            return None
    return f"{console_base.rstrip('/')}{path}?{urlencode(query)}"


def make_event(
    event_type: NoticeType,
    data: EventData,
    *,
    namespace: str,
    occurred_at: datetime,
    console_base: str | None,
) -> Event:
    """The event of ``event_type`` about ``data``: its id derived from what it is about, its scope
    (a switch's), and its console link. A ``data`` of another type's kind is refused."""
    envelope = {
        "type": event_type,
        "id": event_id(namespace, event_type, *data.identity()),
        "namespace": namespace,
        "occurred_at": occurred_at,
        "scope": data.scope if isinstance(data, SwitchFired) else None,
        "console_url": console_link(console_base, data),
        "data": data,
    }
    return _events().validate_python(envelope)


def parse_event(raw: str | bytes) -> Event:
    """An event from its JSON, as a webhook carries it (pydantic's ValidationError if not)."""
    return _events().validate_json(raw)


def event_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema (draft 2020-12) of each event type's envelope, by type: what receivers
    validate a body against, as it is sent."""
    return {
        name: {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **model.model_json_schema(mode="serialization"),
        }
        for name, model in EVENT_MODELS.items()
    }
