"""Channel tools, for operators: ``create_channel``, ``list_channels``,
``rotate_channel_secret``, ``set_channel_state``, ``delete_channel``, ``test_channel``, and a
channel's failed deliveries, ``list_delivery_failures`` and ``replay_delivery``. The use cases
are in vigil.notifications.service and vigil.notifications.delivery."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, model_validator

from vigil.audit.records import AuditEvent
from vigil.errors import invalid, not_found
from vigil.kit.events import EVENT_ID_PATTERN
from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.principals import new_id
from vigil.kit.tooling import OPERATORS, IdempotencyKey, Output, StrictInput, Tool
from vigil.notifications import service
from vigil.notifications.events import ChannelTest, make_event
from vigil.notifications.records import (
    EVENT_TYPES,
    MAX_ATTEMPTS,
    MAX_CHANNELS,
    MAX_REPEATS,
    MAX_RULES,
    ROTATION_OVERLAP,
    Channel,
    ChannelKind,
    ChannelState,
    DeliveryFailure,
    EventType,
    NoticeType,
    Rule,
)
from vigil.notifications.replay import replay
from vigil.switches.tools import ScopePrefix

MAX_URL = 2000
MAX_EMAIL = 254  # RFC 5321's limit on a path, so on an address
MAX_LOCAL_PART = 64
SLACK_PREFIX = "https://hooks.slack.com/"

# A host name: dot-separated labels of letters, digits and inner hyphens (an international
# name in its xn-- form).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
URL_PATTERN = rf"^https?://{_LABEL}(?:\.{_LABEL})*(?::[0-9]{{1,5}})?(?:[/?#][!-~]*)?$"
EMAIL_PATTERN = (
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    rf"@(?:{_LABEL}\.)+[A-Za-z]{{2,63}}$"
)

if TYPE_CHECKING:
    from vigil.app import Context


def _port_in_range(url: str) -> str:
    try:
        port = urlsplit(url).port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("the url's port must be 1-65535")
    return url


def _local_part_fits(address: str) -> str:
    if len(address.rsplit("@", 1)[0]) > MAX_LOCAL_PART:
        raise ValueError(f"the part before @ is at most {MAX_LOCAL_PART} characters")
    return address


def _each_once(events: list[EventType]) -> list[EventType]:
    if len(set(events)) != len(events):
        raise ValueError("name each event type once")
    return events


Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=PRINTABLE,
        description="What operators call the channel, 1-100 printable characters.",
    ),
    normalised(100),
]
ChannelId = Annotated[
    str,
    Field(
        pattern=r"^chn_[a-z2-7]{16}$",
        description="A channel's id (chn_…), as create_channel or list_channels returned it.",
    ),
]
Version = Annotated[
    int,
    Field(ge=1, description="The channel's current version, as listed; a stale one conflicts."),
]
Url = Annotated[
    str,
    Field(
        min_length=len("https://x"),
        max_length=MAX_URL,
        pattern=URL_PATTERN,
        description=(
            f"For a webhook or Slack channel: where events are POSTed, an https:// URL of at "
            f"most {MAX_URL} characters (printable ASCII; http:// on the local runtime only). "
            f"A Slack channel's is the incoming webhook's URL, {SLACK_PREFIX}…; it is kept "
            "sealed and only its host is ever shown."
        ),
    ),
    AfterValidator(_port_in_range),
]
EmailAddress = Annotated[
    str,
    Field(
        min_length=len("a@b.cc"),
        max_length=MAX_EMAIL,
        pattern=EMAIL_PATTERN,
        description=(
            f"For an email channel: the address events are mailed to, at most {MAX_EMAIL} "
            f"characters, {MAX_LOCAL_PART} of them before the @."
        ),
    ),
    AfterValidator(_local_part_fits),
]
Events = Annotated[
    list[EventType],
    Field(
        min_length=1,
        max_length=len(EVENT_TYPES),
        json_schema_extra={"uniqueItems": True},
        description="The event types this rule takes, each once.",
    ),
    AfterValidator(_each_once),
]


class RuleInput(StrictInput):
    events: Events
    scope_prefix: ScopePrefix | None = Field(
        default=None,
        description=(
            "Only events whose scope (a switch's, a session's) begins with this text. Omitted: "
            "every event of these types, those that have no scope included."
        ),
    )
    repeat_every_minutes: int | None = Field(
        default=None,
        ge=5,
        le=1440,
        description=(
            "For the alerts this rule takes (switch.fired, request.opened): send the alert "
            "again every so many minutes until a person acknowledges it (acknowledge_alert), "
            f"the request is no longer open or the switch is armed again; at most {MAX_REPEATS} "
            "times. Each repeat has an id of its own and says which alert it repeats."
        ),
    )
    escalate_after_minutes: int | None = Field(
        default=None,
        ge=5,
        le=10080,
        description=(
            "For the same alerts: if nobody has acknowledged one after so many minutes, send "
            "it once to the channel escalate_to. Needs escalate_to."
        ),
    )
    escalate_to: ChannelId | None = Field(
        default=None,
        description="The channel (of this namespace) an unacknowledged alert escalates to.",
    )

    @model_validator(mode="after")
    def _escalation_whole(self) -> RuleInput:
        if (self.escalate_after_minutes is None) != (self.escalate_to is None):
            raise ValueError("escalate_after_minutes and escalate_to go together")
        return self

    def rule(self) -> Rule:
        return Rule(
            events=self.events,
            scope_prefix=self.scope_prefix or "",
            repeat_every=_minutes(self.repeat_every_minutes),
            escalate_after=_minutes(self.escalate_after_minutes),
            escalate_to=self.escalate_to,
        )


def _minutes(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(minutes=value)


# -- results --------------------------------------------------------------------------------
class RuleView(Output):
    events: list[EventType]
    scope_prefix: str | None = Field(description="Null: events of any scope, or none.")
    repeat_every_minutes: int | None
    escalate_after_minutes: int | None
    escalate_to: str | None

    @classmethod
    def of(cls, rule: Rule) -> RuleView:
        def minutes(value: timedelta | None) -> int | None:
            return None if value is None else int(value.total_seconds() // 60)

        return cls(
            events=rule.events,
            scope_prefix=rule.scope_prefix or None,
            repeat_every_minutes=minutes(rule.repeat_every),
            escalate_after_minutes=minutes(rule.escalate_after),
            escalate_to=rule.escalate_to,
        )


class SigningSecretView(Output):
    created_at: datetime
    until: datetime | None = Field(
        description="When a secret that a rotation replaced stops signing; null for the newest."
    )


class ChannelView(Output):
    id: str
    name: str
    kind: ChannelKind
    target: str = Field(
        description=(
            "Where events go: a webhook's URL, an email address, or for Slack only the "
            "webhook's host (the rest of its URL is a credential and never shown)."
        )
    )
    rules: list[RuleView]
    state: ChannelState
    disabled_reason: str | None = Field(
        description="Why a disabled channel is: an operator, or its receiver (410 Gone)."
    )
    signing_secrets: list[SigningSecretView] = Field(
        description=(
            "A webhook's secrets that sign its deliveries now, newest first (never the secrets "
            "themselves); empty for Slack and email."
        )
    )
    created_by: str
    created_at: datetime
    updated_at: datetime
    version: int

    @classmethod
    def of(cls, channel: Channel, now: datetime) -> ChannelView:
        return cls(
            id=channel.id,
            name=channel.name,
            kind=channel.kind,
            target=channel.target,
            rules=[RuleView.of(r) for r in channel.rules],
            state=channel.state,
            disabled_reason=channel.disabled_reason,
            signing_secrets=[
                SigningSecretView(created_at=s.created_at, until=s.until)
                for s in channel.signing(now)
            ],
            created_by=channel.created_by,
            created_at=channel.created_at,
            updated_at=channel.updated_at,
            version=channel.version,
        )


class ChannelIssued(Output):
    channel: ChannelView
    signing_secret: str | None = Field(
        description=(
            "A webhook's new signing secret (whsec_…), for verifying its deliveries as the "
            "Standard Webhooks specification says; shown in this response only and kept "
            "sealed. Null for Slack and email, and when this result replays an earlier call "
            "with the same idempotency key: rotate the secret again if the answer was lost."
        )
    )


class ChannelResult(Output):
    channel: ChannelView


class ChannelList(Output):
    channels: list[ChannelView]


class ChannelDeleted(Output):
    id: str
    deleted_at: datetime


def _issued(now: datetime) -> Callable[[Channel, str | None], ChannelIssued]:
    def present(channel: Channel, secret: str | None) -> ChannelIssued:
        return ChannelIssued(channel=ChannelView.of(channel, now), signing_secret=secret)

    return present


def _result(now: datetime) -> Callable[[Channel], ChannelResult]:
    return lambda channel: ChannelResult(channel=ChannelView.of(channel, now))


# -- create_channel -------------------------------------------------------------------------
class CreateChannelInput(StrictInput):
    name: Name
    kind: ChannelKind = Field(
        description=(
            "webhook: a signed JSON POST to your URL; slack: a message through a Slack incoming "
            "webhook; email: a mail to an address."
        )
    )
    email: EmailAddress | None = None
    url: Url | None = None
    rules: list[RuleInput] = Field(
        min_length=1,
        max_length=MAX_RULES,
        description=(
            f"Which events the channel receives, 1-{MAX_RULES} rules: an event goes to the "
            "channel once if any rule takes it."
        ),
    )
    idempotency_key: IdempotencyKey | None = None

    @model_validator(mode="after")
    def _target(self) -> CreateChannelInput:
        if self.kind == "email":
            if self.email is None or self.url is not None:
                raise ValueError("an email channel takes email, and no url")
        elif self.url is None or self.email is not None:
            raise ValueError(f"a {self.kind} channel takes url, and no email")
        elif self.kind == "slack" and (
            not self.url.startswith(SLACK_PREFIX) or self.url == SLACK_PREFIX
        ):
            raise ValueError(f"a Slack channel's url is an incoming webhook's, {SLACK_PREFIX}…")
        return self

    @property
    def target(self) -> str:
        target = self.email if self.kind == "email" else self.url
        assert target is not None  # the validator above
        return target


def create_channel(ctx: Context, args: CreateChannelInput) -> ChannelIssued:
    now = ctx.clock.now()
    if args.url is not None and args.url.startswith("http://") and not ctx.sender.allow_private:
        problem = "must be https:// (http:// is for the local runtime only)"
        raise invalid(
            "the arguments do not match the tool's input schema",
            problems=[{"field": "url", "problem": problem}],
        )
    rules = [r.rule() for r in args.rules]
    return service.create(
        ctx.store,
        ctx.uow,
        ctx.caller,
        ctx.keys,
        args.name,
        args.kind,
        args.target,
        rules,
        now,
        present=_issued(now),
    )


# -- list_channels --------------------------------------------------------------------------
class ListChannelsInput(StrictInput):
    pass


def list_channels(ctx: Context, args: ListChannelsInput) -> ChannelList:
    now = ctx.clock.now()
    found = service.channels(ctx.store, ctx.caller)
    return ChannelList(channels=[ChannelView.of(channel, now) for channel in found])


# -- rotate_channel_secret ------------------------------------------------------------------
class RotateChannelSecretInput(StrictInput):
    id: ChannelId
    version: Version
    idempotency_key: IdempotencyKey | None = None


def rotate_channel_secret(ctx: Context, args: RotateChannelSecretInput) -> ChannelIssued:
    now = ctx.clock.now()
    return service.rotate_secret(
        ctx.store, ctx.uow, ctx.caller, ctx.keys, args.id, args.version, now, present=_issued(now)
    )


# -- set_channel_state ----------------------------------------------------------------------
class SetChannelStateInput(StrictInput):
    id: ChannelId
    version: Version
    state: ChannelState = Field(
        description="enabled: the channel receives its events; disabled: it receives none."
    )
    idempotency_key: IdempotencyKey | None = None


def set_channel_state(ctx: Context, args: SetChannelStateInput) -> ChannelResult:
    now = ctx.clock.now()
    return service.set_state(
        ctx.store, ctx.uow, ctx.caller, args.id, args.version, args.state, now, _result(now)
    )


# -- delete_channel -------------------------------------------------------------------------
class DeleteChannelInput(StrictInput):
    id: ChannelId
    version: Version
    idempotency_key: IdempotencyKey | None = None


def delete_channel(ctx: Context, args: DeleteChannelInput) -> ChannelDeleted:
    now = ctx.clock.now()
    return service.delete(
        ctx.store,
        ctx.uow,
        ctx.caller,
        args.id,
        args.version,
        now,
        present=lambda channel: ChannelDeleted(id=channel.id, deleted_at=now),
    )


# -- test_channel ---------------------------------------------------------------------------
class TestChannelInput(StrictInput):
    id: ChannelId


class ChannelTested(Output):
    channel_id: str
    event_id: str = Field(description="The test event's id: its webhook-id, for a webhook.")
    delivered: bool
    outcome: Literal["delivered", "retry", "gone", "rejected"] = Field(
        description=(
            "delivered; retry (the receiver failed or timed out: a real event would be tried "
            "again); gone (it answered 410: a real event would disable the channel); rejected "
            "(any other answer, or a target refused before connecting)."
        )
    )
    status: int | None = Field(description="The receiver's HTTP status; null if none came.")
    reason: str = Field(description="What the attempt came to, in a line (never a secret).")
    tested_at: datetime


def test_channel(ctx: Context, args: TestChannelInput) -> ChannelTested:
    channel = service.channel(ctx.store, ctx.caller, args.id)
    now = ctx.clock.now()
    data = ChannelTest(
        test_id=new_id("tst"),
        channel_id=channel.id,
        requested_by=ctx.caller.principal_id,
        requested_at=now,
    )
    event = make_event(
        "channel.test", data, namespace=channel.namespace, occurred_at=now, console_base=None
    )
    outcome = ctx.sender.send(channel, event)
    return ChannelTested(
        channel_id=channel.id,
        event_id=event.id,
        delivered=outcome.kind == "delivered",
        outcome=outcome.kind,
        status=outcome.status,
        reason=outcome.reason,
        tested_at=now,
    )


# -- list_delivery_failures -----------------------------------------------------------------
MAX_FAILURES_PAGE = 50


class ListDeliveryFailuresInput(StrictInput):
    channel_id: ChannelId
    before: str | None = Field(
        default=None,
        max_length=200,
        description="next_before of the previous page, for older failures.",
    )
    limit: int = Field(default=20, ge=1, le=MAX_FAILURES_PAGE)


class DeliveryFailureView(Output):
    event_id: str
    event_type: NoticeType
    failed_at: datetime
    attempts: int = Field(description="Attempts made before it gave up (since a replay).")
    status: int | None = Field(description="The last attempt's HTTP status; null if none came.")
    reason: str


class DeliveryFailures(Output):
    channel_id: str
    failures: list[DeliveryFailureView] = Field(description="Newest first.")
    next_before: str | None = Field(description="Pass as before for older ones; null at the end.")


def list_delivery_failures(ctx: Context, args: ListDeliveryFailuresInput) -> DeliveryFailures:
    channel = service.channel(ctx.store, ctx.caller, args.channel_id)
    found = ctx.store.list_failures(channel.namespace, channel.id, args.before, args.limit + 1)
    page = found[: args.limit]
    return DeliveryFailures(
        channel_id=channel.id,
        failures=[_failure_view(f) for f in page],
        next_before=page[-1].position if len(found) > args.limit else None,
    )


def _failure_view(failure: DeliveryFailure) -> DeliveryFailureView:
    return DeliveryFailureView(
        event_id=failure.event_id,
        event_type=failure.event_type,
        failed_at=failure.failed_at,
        attempts=failure.attempts,
        status=failure.status,
        reason=failure.reason,
    )


# -- replay_delivery ------------------------------------------------------------------------
class ReplayDeliveryInput(StrictInput):
    channel_id: ChannelId
    event_id: str = Field(pattern=EVENT_ID_PATTERN, description="The failed event's id, as listed.")
    idempotency_key: IdempotencyKey | None = None


class DeliveryReplayed(Output):
    channel_id: str
    event_id: str
    next_attempt: int = Field(description="The number of the attempt made now.")
    replayed_at: datetime


def replay_delivery(ctx: Context, args: ReplayDeliveryInput) -> DeliveryReplayed:
    channel = service.channel(ctx.store, ctx.caller, args.channel_id)
    now = ctx.clock.now()

    def audited(attempt: int) -> tuple[DeliveryReplayed, AuditEvent]:
        result = DeliveryReplayed(
            channel_id=channel.id, event_id=args.event_id, next_attempt=attempt, replayed_at=now
        )
        event = AuditEvent.of(
            channel.namespace,
            ctx.caller.principal_id,
            "replay_delivery",
            "channel",
            channel.id,
            channel.version,
            channel.version,
            now,
        )
        return result, event

    replayed = replay(
        ctx.store,
        ctx.uow,
        ctx.clock,
        ctx.alarms,
        channel.namespace,
        channel.id,
        args.event_id,
        audited,
    )
    if replayed is None:
        raise not_found("failed delivery")
    return replayed


# -- acknowledge_alert ----------------------------------------------------------------------
class AcknowledgeAlertInput(StrictInput):
    event_id: str = Field(
        pattern=EVENT_ID_PATTERN,
        description="The alert's id (its webhook-id), or the id of one of its repeats.",
    )


class AlertAcknowledged(Output):
    event_id: str = Field(description="The first alert's id: its repeats stop with it.")
    acknowledged_by: str
    acknowledged_at: datetime


def acknowledge_alert(ctx: Context, args: AcknowledgeAlertInput) -> AlertAcknowledged:
    acknowledgement = service.acknowledge(ctx.store, ctx.caller, args.event_id, ctx.clock.now())
    notification, ack = acknowledgement
    return AlertAcknowledged(
        event_id=notification.event_id, acknowledged_by=ack.by, acknowledged_at=ack.at
    )


_OVERLAP_HOURS = int(ROTATION_OVERLAP.total_seconds() // 3600)

TOOLS: tuple[Tool[Context], ...] = (
    Tool(
        name="create_channel",
        title="Create a notification channel",
        description=(
            "Send the namespace's events (a switch fired, a request opened, expiring, answered "
            "or expired, a session gone stale, a delivery dead-lettered) to people outside "
            "Vigil: a webhook (signed JSON POSTs to an https URL), a Slack incoming webhook, or "
            "an email address, each event picked by the rules (event types, and optionally a "
            "scope prefix). A webhook's signing secret (whsec_…) appears in this response only; "
            f"keep it to verify deliveries. At most {MAX_CHANNELS} channels a namespace. "
            "Operators only."
        ),
        input_model=CreateChannelInput,
        output_model=ChannelIssued,
        run=create_channel,
        roles=OPERATORS,
    ),
    Tool(
        name="list_channels",
        title="List notification channels",
        description=(
            "Every channel of the caller's namespace with its rules, state (and why it is "
            "disabled) and version. Never shows a secret: a webhook's signing secrets only by "
            "when they were made and stop signing, a Slack webhook only by its host. Operators "
            "only."
        ),
        input_model=ListChannelsInput,
        output_model=ChannelList,
        run=list_channels,
        roles=OPERATORS,
        read_only=True,
    ),
    Tool(
        name="rotate_channel_secret",
        title="Rotate a webhook's signing secret",
        description=(
            "Issue a new signing secret for a webhook channel, shown in this response only. "
            f"The replaced secret goes on signing for {_OVERLAP_HOURS} hours (each delivery "
            "then carries both signatures), so receivers can switch without refusing one. "
            "Operators only."
        ),
        input_model=RotateChannelSecretInput,
        output_model=ChannelIssued,
        run=rotate_channel_secret,
        roles=OPERATORS,
    ),
    Tool(
        name="set_channel_state",
        title="Enable or disable a channel",
        description=(
            "Disable a channel (it receives no events until enabled again) or enable it, "
            "including one Vigil disabled because its receiver answered 410 Gone. Operators "
            "only."
        ),
        input_model=SetChannelStateInput,
        output_model=ChannelResult,
        run=set_channel_state,
        roles=OPERATORS,
    ),
    Tool(
        name="delete_channel",
        title="Delete a channel",
        description=(
            "Delete a channel at the version given: it receives nothing more and its place in "
            "the namespace's quota is freed. Operators only."
        ),
        input_model=DeleteChannelInput,
        output_model=ChannelDeleted,
        run=delete_channel,
        roles=OPERATORS,
        destructive=True,
    ),
    Tool(
        name="test_channel",
        title="Send a test notification",
        description=(
            "Send a channel.test event to a channel now, once, exactly as a real event goes "
            "(signed for a webhook, Block Kit for Slack, SES for email), and say what the "
            "receiver answered. Nothing is retried or recorded. Works on a disabled channel too, "
            "to check it before enabling it. Operators only."
        ),
        input_model=TestChannelInput,
        output_model=ChannelTested,
        run=test_channel,
        roles=OPERATORS,
    ),
    Tool(
        name="acknowledge_alert",
        title="Acknowledge an alert",
        description=(
            "Say that a person has seen an alert (a switch fired, a request opened): its "
            "repeats stop, and it does not escalate. Takes the alert's id or a repeat's, as "
            "notifications carry them (the webhook-id). Acknowledging again changes nothing "
            "and tells who did first. People and operators."
        ),
        input_model=AcknowledgeAlertInput,
        output_model=AlertAcknowledged,
        run=acknowledge_alert,
    ),
    Tool(
        name="list_delivery_failures",
        title="List a channel's failed deliveries",
        description=(
            "The events a channel did not receive, newest first: each gave up after "
            f"{MAX_ATTEMPTS} attempts over some 11 hours, or at once on an answer a retry would "
            "not change (a 4xx, a redirect, 410 Gone). Kept 30 days. Operators only."
        ),
        input_model=ListDeliveryFailuresInput,
        output_model=DeliveryFailures,
        run=list_delivery_failures,
        roles=OPERATORS,
        read_only=True,
    ),
    Tool(
        name="replay_delivery",
        title="Deliver a failed event again",
        description=(
            "Start a failed delivery again: an attempt now and, if it fails, the same retries "
            "as the first time. The event keeps its id (a webhook's webhook-id), so a receiver "
            "that did get it deduplicates it. Audited. Operators only."
        ),
        input_model=ReplayDeliveryInput,
        output_model=DeliveryReplayed,
        run=replay_delivery,
        roles=OPERATORS,
    ),
)
