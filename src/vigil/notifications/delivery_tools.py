"""What became of the notifications, for the people watching: a channel's failed deliveries
listed (``list_delivery_failures``) and started again (``replay_delivery``) by operators, and an
alert acknowledged (``acknowledge_alert``) by a person or an operator, which stops its repeats
and its escalation."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from vigil.audit.records import AuditEvent
from vigil.errors import not_found
from vigil.kit.events import EVENT_ID_PATTERN
from vigil.kit.tooling import OPERATORS, PEOPLE, IdempotencyKey, Output, StrictInput, Tool
from vigil.notifications import service
from vigil.notifications.channel_arguments import ChannelId
from vigil.notifications.context import NotificationContext
from vigil.notifications.records import DeliveryFailure, NoticeType
from vigil.notifications.replay import replay

# -- list_delivery_failures -----------------------------------------------------------------
MAX_FAILURES_PAGE = 50


class ListDeliveryFailuresInput(StrictInput):
    channel_id: ChannelId
    before: str | None = Field(
        default=None,
        max_length=200,
        description="next_before of the last page.",
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


def list_delivery_failures(
    ctx: NotificationContext, args: ListDeliveryFailuresInput
) -> DeliveryFailures:
    channel = service.channel(args.channel_id, caller=ctx.caller, store=ctx.store)
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


def replay_delivery(ctx: NotificationContext, args: ReplayDeliveryInput) -> DeliveryReplayed:
    channel = service.channel(args.channel_id, caller=ctx.caller, store=ctx.store)
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
        channel.namespace,
        channel.id,
        args.event_id,
        store=ctx.store,
        uow=ctx.uow,
        clock=ctx.clock,
        alarms=ctx.alarms,
        audited=audited,
    )
    if replayed is None:
        raise not_found("failed delivery")
    return replayed


# -- acknowledge_alert ----------------------------------------------------------------------
class AcknowledgeAlertInput(StrictInput):
    event_id: str = Field(
        pattern=EVENT_ID_PATTERN,
        description="The alert's id (webhook-id), or a repeat's.",
    )


class AlertAcknowledged(Output):
    event_id: str = Field(description="The first alert's id: its repeats stop with it.")
    acknowledged_by: str
    acknowledged_at: datetime


def acknowledge_alert(ctx: NotificationContext, args: AcknowledgeAlertInput) -> AlertAcknowledged:
    notification, ack = service.acknowledge(
        args.event_id,
        caller=ctx.caller,
        now=ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        alarms=ctx.alarms,
    )
    return AlertAcknowledged(
        event_id=notification.event_id, acknowledged_by=ack.by, acknowledged_at=ack.at
    )


TOOLS: tuple[Tool[NotificationContext], ...] = (
    Tool(
        name="list_delivery_failures",
        title="List a channel's failed deliveries",
        description=(
            "Events a channel did not receive, newest first: given up after 8 attempts over "
            "some 11 hours, or at once on a 4xx, a redirect or 410 Gone. Kept 30 days."
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
            "Deliver a failed event again, now, then with the usual retries; it keeps its id "
            "(webhook-id), so receivers deduplicate. Audited."
        ),
        input_model=ReplayDeliveryInput,
        output_model=DeliveryReplayed,
        run=replay_delivery,
        roles=OPERATORS,
    ),
    Tool(
        name="acknowledge_alert",
        title="Acknowledge an alert",
        description=(
            "Say a person has seen an alert (switch fired, request opened): its repeats stop "
            "and it does not escalate. Again, it changes nothing and says who did first."
        ),
        input_model=AcknowledgeAlertInput,
        output_model=AlertAcknowledged,
        run=acknowledge_alert,
        roles=OPERATORS,
        kinds=PEOPLE,
    ),
)
