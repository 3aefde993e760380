"""The audit trail's tool: ``list_audit_events``, for operators."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import Field

from vigil.audit.records import AuditAction, AuditEvent, TargetKind
from vigil.errors import not_found
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.paging import scan_page
from vigil.kit.principals import PRINCIPAL_ID_PATTERN, Surface
from vigil.kit.tooling import OPERATORS, Output, StrictInput, Tool


class Reader(Protocol):
    """Whoever reads the trail: it reads its own namespace's."""

    @property
    def namespace(self) -> str: ...


class AuditReads(Protocol):
    """What the audit tool reads: the trail, and whether a principal it is asked about is of
    the caller's namespace (the identities', a read across)."""

    def audit_events(self, namespace: str, before: str | None, limit: int) -> list[AuditEvent]: ...

    def get_principal(self, namespace: str, principal_id: str) -> object | None: ...


class AuditContext(Protocol):
    """What the audit tool reads of a call."""

    @property
    def store(self) -> AuditReads: ...

    @property
    def caller(self) -> Reader: ...


# A filtered page examines at most this many events of the trail, and may come back short
# with a cursor to go on from.
SCAN_BUDGET = 1_000


class ListAuditEventsInput(StrictInput):
    actor: str | None = Field(
        default=None, pattern=PRINCIPAL_ID_PATTERN, description="Only this principal's changes."
    )
    cursor: str | None = Field(
        default=None,
        max_length=512,
        description="next_cursor of the last page.",
    )
    limit: int = Field(default=50, ge=1, le=100)
    target: str | None = Field(
        default=None, max_length=200, description="Only changes to this id, scope or address."
    )
    target_kind: TargetKind | None = None

    def keeps(self, event: AuditEvent) -> bool:
        return (
            (self.actor is None or event.actor == self.actor)
            and (self.target is None or event.target == self.target)
            and (self.target_kind is None or event.target_kind == self.target_kind)
        )


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
    if args.actor is not None and ctx.store.get_principal(namespace, args.actor) is None:
        # Another namespace's principal is one this namespace has never heard of.
        raise not_found("principal")
    # A cursor names its namespace and filters, so one namespace's place is never read in
    # another's trail, nor a filtered page's in another filter's.
    bound = {"n": namespace, "p": args.actor, "t": args.target, "tk": args.target_kind}
    before = cursor_position(args.cursor, "audit", str, **bound) if args.cursor else None

    # Each batch reads one event more than it hands out, so that a page that ends where the
    # trail ends says so without a read of its own.
    read: dict[str, object] = {}

    def fetch(position: str | None, size: int) -> list[AuditEvent]:
        found = ctx.store.audit_events(namespace, position, size + 1)
        batch = found[:size]
        read.update(last=batch[-1].position if batch else None, more=len(found) > size)
        return batch

    budget = SCAN_BUDGET if args.actor or args.target or args.target_kind else args.limit
    page, last = scan_page(fetch, lambda e: e.position, args.keeps, before, args.limit, budget)
    if last is not None and last == read["last"] and not read["more"]:
        last = None
    return AuditPage(
        events=[AuditEventView.of(event) for event in page],
        next_cursor=None if last is None else encode_cursor("audit", a=last, **bound),
    )


TOOLS: tuple[Tool[AuditContext], ...] = (
    Tool(
        name="list_audit_events",
        title="Read the audit trail",
        description=(
            "The audit trail, newest first: each change made with an operator's power or by "
            "the deployer; who, what, when, versions before and after."
        ),
        input_model=ListAuditEventsInput,
        output_model=AuditPage,
        run=list_audit_events,
        roles=OPERATORS,
        read_only=True,
    ),
)
