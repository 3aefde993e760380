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

from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlencode

from pydantic import AwareDatetime, Field, TypeAdapter

from vigil.kit.events import EVENT_ID_PATTERN, EventData, EventModel, event_id
from vigil.mailboxes.events import DeliveryDeadLettered, DeliveryWaiting
from vigil.notifications.records import EVENT_TYPES as EVENT_TYPES
from vigil.notifications.records import EventType as EventType
from vigil.notifications.records import NoticeType as NoticeType
from vigil.requests.events import RequestData
from vigil.sessions.events import InstructionPosted, SessionStale
from vigil.switches.events import (
    SwitchFired,
    SwitchFlapping,
    SwitchRanShort,
    SwitchRecovered,
    SwitchSettled,
)

# -- data of each type --------------------------------------------------------------------------


class ChannelTest(EventData):
    """Sent by test_channel: nothing happened; the channel is shown to work, or why not."""

    test_id: str = Field(description="New for every test, so no two tests share an event id.")
    channel_id: str
    requested_by: str = Field(description="Principal id of the operator who asked for it.")
    requested_at: AwareDatetime

    def identity(self) -> tuple[str, ...]:
        # Every test is an event of its own: receivers must not deduplicate one against another.
        return (self.channel_id, self.test_id)


class AlertAcknowledged(EventData):
    """A person acknowledged an alert: sent to the on-call services the alert went to, so that
    the incident they opened for it is acknowledged there too."""

    alert_id: str = Field(pattern=EVENT_ID_PATTERN, description="The id of the alert.")
    alert_type: Literal["switch.fired", "switch.flapping", "request.opened"]
    scope: str | None = Field(description="The switch's scope, for a switch's alert.")
    acknowledged_by: str = Field(description="Principal id of who acknowledged it.")
    acknowledged_at: AwareDatetime

    def identity(self) -> tuple[str, ...]:
        return (self.alert_id,)


# -- the envelope -------------------------------------------------------------------------------


class Reminder(EventModel):
    """What a repeated or escalated alert says of the alert it follows."""

    of: str = Field(pattern=EVENT_ID_PATTERN, description="The id of the first alert.")
    kind: Literal["repeat", "escalation"]
    number: int = Field(ge=1, description="1 for the first repeat, 2 for the next, ...")


class EventEnvelope(EventModel):
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


class SwitchRecoveredEvent(EventEnvelope):
    type: Literal["switch.recovered"]
    data: SwitchRecovered


class SwitchFlappingEvent(EventEnvelope):
    type: Literal["switch.flapping"]
    data: SwitchFlapping


class SwitchSettledEvent(EventEnvelope):
    type: Literal["switch.settled"]
    data: SwitchSettled


class SwitchRanShortEvent(EventEnvelope):
    type: Literal["switch.ran_short"]
    data: SwitchRanShort


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


class RequestWithdrawnEvent(EventEnvelope):
    type: Literal["request.withdrawn"]
    data: RequestData


class SessionStaleEvent(EventEnvelope):
    type: Literal["session.stale"]
    data: SessionStale


class DeliveryDeadLetteredEvent(EventEnvelope):
    type: Literal["delivery.dead_lettered"]
    data: DeliveryDeadLettered


class DeliveryWaitingEvent(EventEnvelope):
    type: Literal["delivery.waiting"]
    data: DeliveryWaiting


class InstructionPostedEvent(EventEnvelope):
    type: Literal["instruction.posted"]
    data: InstructionPosted


class ChannelTestEvent(EventEnvelope):
    type: Literal["channel.test"]
    data: ChannelTest


class AlertAcknowledgedEvent(EventEnvelope):
    type: Literal["alert.acknowledged"]
    data: AlertAcknowledged


Event = Annotated[
    SwitchFiredEvent
    | SwitchRecoveredEvent
    | SwitchFlappingEvent
    | SwitchSettledEvent
    | SwitchRanShortEvent
    | RequestOpenedEvent
    | RequestExpiringEvent
    | RequestAnsweredEvent
    | RequestExpiredEvent
    | RequestWithdrawnEvent
    | SessionStaleEvent
    | DeliveryDeadLetteredEvent
    | DeliveryWaitingEvent
    | InstructionPostedEvent
    | ChannelTestEvent
    | AlertAcknowledgedEvent,
    Field(discriminator="type"),
]
EVENT_MODELS: dict[NoticeType, type[EventEnvelope]] = {
    "switch.fired": SwitchFiredEvent,
    "switch.recovered": SwitchRecoveredEvent,
    "switch.flapping": SwitchFlappingEvent,
    "switch.settled": SwitchSettledEvent,
    "switch.ran_short": SwitchRanShortEvent,
    "request.opened": RequestOpenedEvent,
    "request.expiring": RequestExpiringEvent,
    "request.answered": RequestAnsweredEvent,
    "request.expired": RequestExpiredEvent,
    "request.withdrawn": RequestWithdrawnEvent,
    "session.stale": SessionStaleEvent,
    "delivery.dead_lettered": DeliveryDeadLetteredEvent,
    "delivery.waiting": DeliveryWaitingEvent,
    "instruction.posted": InstructionPostedEvent,
    "channel.test": ChannelTestEvent,
    "alert.acknowledged": AlertAcknowledgedEvent,
}


# The events about a switch: their scope is what a rule's scope_prefix matches.
SWITCH_EVENTS = (SwitchFired, SwitchRecovered, SwitchFlapping, SwitchSettled, SwitchRanShort)


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
        case (
            SwitchFired()
            | SwitchRecovered()
            | SwitchFlapping()
            | SwitchSettled()
            | SwitchRanShort()
        ):
            path, query = "/console/switch", {"scope": data.scope}
        case RequestData():
            path, query = "/console/request", {"id": data.request_id}
        case SessionStale():
            path, query = "/console/session", {"id": data.session_id}
        case _:
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
        "scope": data.scope if isinstance(data, SWITCH_EVENTS) else None,
        "console_url": console_link(console_base, data),
        "data": data,
    }
    return _events().validate_python(envelope)


def followed_id(event: Event) -> str | None:
    """The id of the notice ``event`` follows to wherever it went (records.FOLLOWS), if it is
    one that follows: a recovery its death's alert (or, for a death told in another's alert,
    that one), a settling its flapping's, a withdrawal its request's opening, an
    acknowledgement its alert. None for the others."""
    data = event.data
    match data:
        case SwitchRecovered():
            return data.told_in or data.fired_event_id
        case SwitchSettled():
            return data.flapping_event_id
        case AlertAcknowledged():
            return data.alert_id
        case RequestData() if event.type == "request.withdrawn":
            return event_id(event.namespace, "request.opened", *data.identity())
    return None


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
