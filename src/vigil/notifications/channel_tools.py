"""Channel administration, for operators: ``create_channel``, ``list_channels``,
``rotate_channel_secret``, ``set_channel_state`` and ``delete_channel``. The use cases are in
vigil.notifications.service."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from vigil.errors import invalid
from vigil.kit.tooling import OPERATORS, IdempotencyKey, Output, StrictInput, Tool
from vigil.notifications import service
from vigil.notifications.channel_arguments import (
    ChannelId,
    EmailAddress,
    Name,
    RoutingKey,
    RuleInput,
    SlackSigningSecret,
    Url,
    Version,
    receiver_problem,
)
from vigil.notifications.context import NotificationContext
from vigil.notifications.records import (
    MAX_RULES,
    ROTATION_OVERLAP,
    Channel,
    ChannelKind,
    ChannelState,
    EventType,
    Rule,
)


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
        description="A webhook's URL or an email address; Slack's, Teams', Discord's, "
        "PagerDuty's host only."
    )
    rules: list[RuleView]
    state: ChannelState
    disabled_reason: str | None = Field(
        description="Why a disabled channel is: an operator, or its receiver (410 Gone)."
    )
    signing_secrets: list[SigningSecretView] = Field(
        description="When a webhook's signing secrets were made, newest first."
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
        description="A webhook's new signing secret, shown only here; null on a replay."
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
        default="webhook",
        description="webhook: signed JSON POSTs.",
    )
    url: Url | None = None
    email: EmailAddress | None = None
    slack_signing_secret: SlackSigningSecret | None = None
    routing_key: RoutingKey | None = None
    rules: list[RuleInput] = Field(
        min_length=1,
        max_length=MAX_RULES,
        description="Which events the channel receives: once if any rule takes it.",
    )
    idempotency_key: IdempotencyKey | None = None

    @model_validator(mode="after")
    def _target(self) -> CreateChannelInput:
        if self.kind == "email":
            if self.email is None or self.url is not None:
                raise ValueError("an email channel takes email, and no url")
        elif self.email is not None:
            raise ValueError(f"a {self.kind} channel takes no email")
        elif self.kind == "pagerduty":
            if self.routing_key is None:
                raise ValueError("a pagerduty channel takes routing_key")
        elif self.url is None:
            raise ValueError(f"a {self.kind} channel takes url")
        problem = None if self.url is None else receiver_problem(self.kind, self.url)
        if problem is not None:
            raise ValueError(problem)
        if self.slack_signing_secret is not None and self.kind != "slack":
            raise ValueError("only a slack channel takes slack_signing_secret")
        if self.routing_key is not None and self.kind != "pagerduty":
            raise ValueError("only a pagerduty channel takes routing_key")
        return self

    @property
    def target(self) -> str:
        """Where its deliveries go: the URL, the address, or PagerDuty's host (the US region's
        unless the url names the EU's)."""
        if self.kind == "email":
            assert self.email is not None  # the validator above
            return self.email
        if self.kind == "pagerduty":
            host = urlsplit(self.url).hostname if self.url else None
            return f"https://{host or 'events.pagerduty.com'}"
        assert self.url is not None  # the validator above
        return self.url


def create_channel(ctx: NotificationContext, args: CreateChannelInput) -> ChannelIssued:
    now = ctx.clock.now()
    if args.url is not None and args.url.startswith("http://") and not ctx.sender.allow_private:
        problem = "must be https:// (http:// is for the local runtime only)"
        raise invalid(
            "the arguments do not match the tool's input schema",
            problems=[{"field": "url", "problem": problem}],
        )
    rules = [r.rule() for r in args.rules]
    new = service.NewChannel(
        args.name, args.kind, args.target, rules, args.slack_signing_secret, args.routing_key
    )
    return service.create(
        new,
        caller=ctx.caller,
        now=now,
        store=ctx.store,
        uow=ctx.uow,
        keys=ctx.keys,
        present=_issued(now),
    )


# -- list_channels --------------------------------------------------------------------------
class ListChannelsInput(StrictInput):
    pass


def list_channels(ctx: NotificationContext, args: ListChannelsInput) -> ChannelList:
    now = ctx.clock.now()
    found = service.channels(caller=ctx.caller, store=ctx.store)
    return ChannelList(channels=[ChannelView.of(channel, now) for channel in found])


# -- rotate_channel_secret ------------------------------------------------------------------
class RotateChannelSecretInput(StrictInput):
    id: ChannelId
    version: Version
    idempotency_key: IdempotencyKey | None = None


def rotate_channel_secret(
    ctx: NotificationContext, args: RotateChannelSecretInput
) -> ChannelIssued:
    now = ctx.clock.now()
    return service.rotate_secret(
        args.id,
        args.version,
        caller=ctx.caller,
        now=now,
        store=ctx.store,
        uow=ctx.uow,
        keys=ctx.keys,
        present=_issued(now),
    )


# -- set_channel_state ----------------------------------------------------------------------
class SetChannelStateInput(StrictInput):
    id: ChannelId
    version: Version
    state: ChannelState = Field(description="A disabled channel receives nothing.")
    idempotency_key: IdempotencyKey | None = None


def set_channel_state(ctx: NotificationContext, args: SetChannelStateInput) -> ChannelResult:
    now = ctx.clock.now()
    return service.set_state(
        args.id,
        args.version,
        args.state,
        caller=ctx.caller,
        now=now,
        store=ctx.store,
        uow=ctx.uow,
        present=_result(now),
    )


# -- delete_channel -------------------------------------------------------------------------
class DeleteChannelInput(StrictInput):
    id: ChannelId
    version: Version
    idempotency_key: IdempotencyKey | None = None


def delete_channel(ctx: NotificationContext, args: DeleteChannelInput) -> ChannelDeleted:
    now = ctx.clock.now()
    return service.delete(
        args.id,
        args.version,
        caller=ctx.caller,
        now=now,
        store=ctx.store,
        uow=ctx.uow,
        present=lambda channel: ChannelDeleted(id=channel.id, deleted_at=now),
    )


_OVERLAP_HOURS = int(ROTATION_OVERLAP.total_seconds() // 3600)

TOOLS: tuple[Tool[NotificationContext], ...] = (
    Tool(
        name="create_channel",
        title="Create a notification channel",
        description=(
            "Send events (switch fired, request opened, session stale...), chosen by rules, to "
            "a signed webhook, Slack, Teams, Discord, PagerDuty or email. A webhook's signing "
            "secret is shown only here."
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
            "The channels: rules, state (and why disabled), version. No secret: signing "
            "secrets by their dates, a Slack webhook by its host."
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
            "A new signing secret for a webhook channel, shown only here. The old one also "
            "signs for 24 hours while receivers switch."
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
            "Disable a channel (no events until enabled) or enable it, one Vigil disabled "
            "after a 410 Gone too."
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
            "Delete a channel at its version: it receives nothing more; its quota place is freed."
        ),
        input_model=DeleteChannelInput,
        output_model=ChannelDeleted,
        run=delete_channel,
        roles=OPERATORS,
        destructive=True,
    ),
)
