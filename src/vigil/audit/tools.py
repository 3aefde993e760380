"""The audit trail's tool: ``list_audit_events``, for operators."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import Field

from vigil.audit.records import AuditAction, AuditEvent, TargetKind
from vigil.audit.store import AuditStore
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.principals import Surface
from vigil.kit.tooling import OPERATORS, Output, StrictInput, Tool


class Reader(Protocol):
    """Whoever reads the trail: it reads its own namespace's."""

    @property
    def namespace(self) -> str: ...


class AuditContext(Protocol):
    """What the audit tool reads of a call."""

    @property
    def store(self) -> AuditStore: ...

    @property
    def caller(self) -> Reader: ...


class ListAuditEventsInput(StrictInput):
    cursor: str | None = Field(
        default=None,
        max_length=512,
        description="Opaque next_cursor from the previous page.",
    )
    limit: int = Field(default=50, ge=1, le=100, description="Page size, 1-100.")


class AuditEventView(Output):
    id: str
    at: datetime
    actor: str | None = Field(
        description="The operator (or a request's voter) who made it; null for the deployer."
    )
    action: AuditAction
    target_kind: TargetKind
    target: str = Field(description="The id, scope, address or prefix of what changed.")
    before_version: int | None = Field(
        description="The target's version before the change; null if it did not exist."
    )
    after_version: int | None = Field(
        description="The target's version after the change, if it has one."
    )
    via: Surface | None = Field(
        default=None, description="A reply's surface: mcp, rest, console, cli, slack or email."
    )

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventView:
        return cls.model_validate(event.model_dump(exclude={"namespace"}))


class AuditPage(Output):
    events: list[AuditEventView]
    next_cursor: str | None = Field(
        description="Pass back as cursor for the next (older) page; null at the end."
    )
    order: Literal["newest_first"] = "newest_first"


def list_audit_events(ctx: AuditContext, args: ListAuditEventsInput) -> AuditPage:
    namespace = ctx.caller.namespace
    # A cursor names its namespace, so one namespace's place is never read in another's trail.
    before = cursor_position(args.cursor, "audit", str, n=namespace) if args.cursor else None
    found = ctx.store.audit_events(namespace, before, args.limit + 1)
    page = found[: args.limit]
    more = len(found) > args.limit
    return AuditPage(
        events=[AuditEventView.of(event) for event in page],
        next_cursor=encode_cursor("audit", a=page[-1].position, n=namespace) if more else None,
    )


TOOLS: tuple[Tool[AuditContext], ...] = (
    Tool(
        name="list_audit_events",
        title="Read the audit trail",
        description=(
            "Your namespace's audit trail, newest first: each change made with an operator's "
            "power or by the deployer; who, what, when, versions before and after."
        ),
        input_model=ListAuditEventsInput,
        output_model=AuditPage,
        run=list_audit_events,
        roles=OPERATORS,
        read_only=True,
    ),
)
