"""``test_channel``, for operators: a channel.test event sent to a channel at once, exactly as
a real event goes, and what the receiver answered; audited, never retried, nothing else
recorded."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from vigil.kit.principals import new_id
from vigil.kit.tooling import OPERATORS, Output, StrictInput, Tool
from vigil.notifications import service
from vigil.notifications.channel_arguments import ChannelId
from vigil.notifications.context import NotificationContext
from vigil.notifications.events import ChannelTest, make_event


class TestChannelInput(StrictInput):
    id: ChannelId


class ChannelTested(Output):
    channel_id: str
    event_id: str = Field(description="The test event's id: its webhook-id, for a webhook.")
    delivered: bool
    outcome: Literal["delivered", "retry", "gone", "rejected"] = Field(
        description="What a real event would meet: delivered, retried, gone (410) or rejected."
    )
    status: int | None = Field(description="The receiver's HTTP status; null if none came.")
    reason: str = Field(description="What the attempt came to, in a line (never a secret).")
    tested_at: datetime


def test_channel(ctx: NotificationContext, args: TestChannelInput) -> ChannelTested:
    now = ctx.clock.now()
    channel = service.to_test(args.id, caller=ctx.caller, now=now, store=ctx.store, uow=ctx.uow)
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


TOOLS: tuple[Tool[NotificationContext], ...] = (
    Tool(
        name="test_channel",
        title="Send a test notification",
        description=(
            "Send a channel.test event as a real one goes (even if disabled); says what the "
            "receiver answered."
        ),
        input_model=TestChannelInput,
        output_model=ChannelTested,
        run=test_channel,
        roles=OPERATORS,
    ),
)
