"""Dead-man switch tools for operators' maintenance: ``pause_switches`` and ``resume_switches``;
and ``list_pauses`` for the people watching."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from vigil.clock import to_ms
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.names import PRINTABLE
from vigil.kit.tooling import OPERATORS, PEOPLE, Cursor, IdempotencyKey, Output, StrictInput, Tool
from vigil.switches.pauses import PauseOrder, pause, pauses_page, resume_pause
from vigil.switches.records import (
    MAX_PAUSE_SECONDS,
    Pause,
)
from vigil.switches.tools import ScopePrefix, SwitchContext

# RFC 3339 with its offset (Z or ±hh:mm), as every time Vigil returns; t and z may be lower case.
_MOMENT = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def _moment(value: object) -> datetime:
    """A time given as RFC 3339 text, never as a number or without its offset."""
    if not isinstance(value, str) or re.fullmatch(_MOMENT, value) is None:
        raise ValueError("expected an RFC 3339 time with its offset, e.g. 2026-08-01T14:00:00Z")
    try:
        return to_ms(datetime.fromisoformat(value.upper()).astimezone(UTC))
    except ValueError:
        raise ValueError("not a valid time") from None


Moment = Annotated[
    datetime,
    BeforeValidator(_moment),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": _MOMENT}),
]
PauseId = Annotated[
    str,
    Field(pattern=r"^pau_[a-z2-7]{16}$", description="A pause's id."),
]
PauseReason = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=PRINTABLE,
        description="Why, in one line.",
    ),
]


class PauseSwitchesInput(StrictInput):
    scope_prefix: ScopePrefix = Field(
        description="Every switch whose scope begins with this (job-1 covers job-10)."
    )
    until: Moment | None = Field(
        default=None,
        description=f"When the pause ends, at most {MAX_PAUSE_SECONDS // 86400} days ahead.",
    )
    until_next_beat: bool = Field(
        default=False,
        description="End it for each switch at its next beat; with until, first wins.",
    )
    reason: PauseReason | None = None
    idempotency_key: IdempotencyKey | None = None

    @model_validator(mode="after")
    def _ends(self) -> PauseSwitchesInput:
        if self.until is None and not self.until_next_beat:
            raise ValueError("a pause needs an end: give until, until_next_beat or both")
        return self


class ResumeSwitchesInput(StrictInput):
    id: PauseId | None = None
    scope_prefix: ScopePrefix | None = Field(
        default=None, description="Instead of id: the pause's scope prefix."
    )
    version: int = Field(
        ge=1, le=1_000_000_000, description="Its current version; a stale one conflicts."
    )
    idempotency_key: IdempotencyKey | None = None

    @model_validator(mode="after")
    def _one(self) -> ResumeSwitchesInput:
        if (self.id is None) == (self.scope_prefix is None):
            raise ValueError("name the pause by id or by scope_prefix, not both")
        return self


class PauseView(Output):
    id: str
    scope_prefix: str = Field(description="It covers the switches whose scope begins with this.")
    state: Literal["active", "ended"] = Field(
        description="active while in force; ended once until has passed or it was resumed."
    )
    paused_by: str = Field(description="Principal id of the operator who set it.")
    paused_at: datetime
    until: datetime | None = Field(description="When it ends for every switch; null if unset.")
    until_next_beat: bool = Field(
        description="Whether it ends for each switch at that switch's next beat."
    )
    reason: str | None
    resumed_at: datetime | None = Field(description="When an operator ended it early.")
    resumed_by: str | None = Field(description="Principal id of the operator who ended it.")
    version: int

    @classmethod
    def of(cls, pause: Pause, now: datetime) -> PauseView:
        return cls(
            state="active" if pause.in_force(now) else "ended",
            **pause.model_dump(exclude={"namespace"}),
        )


def pause_switches(ctx: SwitchContext, args: PauseSwitchesInput) -> PauseView:
    now = to_ms(ctx.clock.now())
    order = PauseOrder(
        scope_prefix=args.scope_prefix,
        until=args.until,
        until_next_beat=args.until_next_beat,
        reason=args.reason,
    )
    return pause(
        order,
        ctx.caller,
        now,
        store=ctx.store,
        uow=ctx.uow,
        present=lambda found: PauseView.of(found, now),
    )


def resume_switches(ctx: SwitchContext, args: ResumeSwitchesInput) -> PauseView:
    now = to_ms(ctx.clock.now())
    return resume_pause(
        ctx.caller,
        args.id,
        args.scope_prefix,
        args.version,
        now,
        store=ctx.store,
        uow=ctx.uow,
        present=lambda found: PauseView.of(found, now),
    )


class ListPausesInput(StrictInput):
    cursor: Cursor | None = Field(default=None, description="next_cursor of the last page.")


class PausePage(Output):
    pauses: list[PauseView] = Field(description="The pauses in force, in scope prefix order.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end."
    )


def list_pauses(ctx: SwitchContext, args: ListPausesInput) -> PausePage:
    now = ctx.clock.now()
    query = {"n": ctx.caller.namespace}
    after = cursor_position(args.cursor, "pauses", str, **query) if args.cursor else None
    found, last = pauses_page(ctx.caller, after, now, store=ctx.store)
    return PausePage(
        pauses=[PauseView.of(found_pause, now) for found_pause in found],
        next_cursor=encode_cursor("pauses", a=last, **query) if last is not None else None,
    )


TOOLS: tuple[Tool[SwitchContext], ...] = (
    Tool(
        name="pause_switches",
        title="Pause dead-man switches",
        description=(
            "Pause the switches whose scope begins with scope_prefix, until a time or their "
            "next beat: they neither fire nor alert; beats still work. Audited."
        ),
        input_model=PauseSwitchesInput,
        output_model=PauseView,
        run=pause_switches,
        roles=OPERATORS,
    ),
    Tool(
        name="resume_switches",
        title="End a pause",
        description=(
            "End a pause early, by id or scope_prefix, at its version; each switch it held "
            "gets a full window from now. Audited."
        ),
        input_model=ResumeSwitchesInput,
        output_model=PauseView,
        run=resume_switches,
        roles=OPERATORS,
    ),
    Tool(
        name="list_pauses",
        title="Paused switches",
        description="The pauses in force, by scope prefix: who set them, until when, version.",
        input_model=ListPausesInput,
        output_model=PausePage,
        run=list_pauses,
        roles=OPERATORS,
        kinds=PEOPLE,
        read_only=True,
    ),
)
