"""Dead-man switch tools: ``heartbeat`` and ``resume_packet`` for the agents, ``list_switches``,
``list_deaths`` and ``list_pauses`` for the people watching them, and ``pause_switches`` and
``resume_switches`` for operators (the engine behind them is vigil.switches.service)."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from vigil.clock import to_ms
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.tooling import (
    OPERATORS,
    AgentLabel,
    Cursor,
    IdempotencyKey,
    Output,
    Scope,
    StrictInput,
    Tool,
)
from vigil.progress.tools import ProgressSummary
from vigil.switches.records import (
    HOLD_CHECK_MAX_SECONDS,
    HOLD_CHECK_MIN_SECONDS,
    MAX_PAUSE_SECONDS,
    MAX_PAUSES,
    MAX_WINDOW_SECONDS,
    MIN_WINDOW_SECONDS,
    NAMED_RELEASES,
    Action,
    Beat,
    Death,
    HeldLease,
    Pause,
    PublicState,
    Switch,
)
from vigil.switches.service import (
    HELD_PAGE,
    LIST_PAGE,
    SWITCHES_SCAN_BUDGET,
    Liveness,
    deaths_page,
    pause,
    pauses_page,
    resume_pause,
    switches_page,
)

if TYPE_CHECKING:
    from vigil.app import Context

AddressField = Annotated[
    str,
    Field(
        max_length=100,
        pattern=r"^agent:agt_[a-z2-7]{16}(/[a-z0-9][a-z0-9_-]{0,31})?$",
        description="A registered mailbox address: agent:<id> or agent:<id>/<box>.",
    ),
]


def _default_actions() -> list[Action]:
    return ["mark_failed"]


# -- inputs and outputs -------------------------------------------------------------------
class HeartbeatInput(StrictInput):
    scope: Scope
    expect_within_seconds: int = Field(
        ge=MIN_WINDOW_SECONDS,
        le=MAX_WINDOW_SECONDS,
        description="Beat again within this many seconds (2 to 2,592,000) or the switch fires.",
    )
    on_expiry: list[Action] = Field(
        default_factory=_default_actions,
        max_length=3,
        description=(
            "What happens if the next beat is late, run once and always in the order "
            "release_leases, mark_failed, queue_alert. release_leases reaches only leases taken "
            "with this scope, and reports the holder's other leases as its blind spot."
        ),
    )
    notify_address: AddressField | None = Field(
        default=None,
        description=(
            "Required with queue_alert: the mailbox that gets the alert. Accepted without it "
            "too, and then unused."
        ),
    )
    agent_id: AgentLabel | None = Field(
        default=None,
        description="A label for the beating instance, carried in the alert (e.g. worker-3).",
    )
    disarm: bool = Field(default=False, description="Stop the switch instead of beating it.")
    agent_key: str | None = Field(
        default=None,
        max_length=200,
        description="Your secret, only if your MCP host cannot send an Authorization header.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> HeartbeatInput:
        if len(set(self.on_expiry)) != len(self.on_expiry):
            raise ValueError("on_expiry lists an action twice")
        if "queue_alert" in self.on_expiry and self.notify_address is None:
            raise ValueError("queue_alert needs a notify_address")
        return self


class ResumePacketInput(StrictInput):
    scope: Scope
    released_page: int = Field(
        default=1,
        ge=1,
        le=1_000_000,
        description=(
            "Which page of the latest death's released leases to return (from 1; "
            "death.released_pages says how many there are)."
        ),
    )
    held_leases_cursor: str | None = Field(
        default=None,
        max_length=4096,
        description="Opaque held_leases_next_cursor from the previous packet of this scope.",
    )
    agent_key: str | None = Field(default=None, max_length=200, description="As for heartbeat.")


class DeathView(Output):
    generation: int = Field(description="The generation of the switch that died.")
    holder: str = Field(description="Principal id of who had armed it and stopped beating.")
    agent_id: str | None = Field(description="The label its last beat gave the instance.")
    deadline: datetime = Field(description="The deadline that was missed.")
    fired_at: datetime = Field(description="When the missed deadline was seen and acted on.")
    lateness_seconds: float = Field(description="fired_at minus deadline, in seconds.")
    actions: list[Action] = Field(description="The on_expiry actions chosen, in run order.")
    completed: list[Action] = Field(description="Those of actions already done.")
    marked_failed: bool = Field(description="Whether mark_failed has recorded the failure.")
    released_count: int | None = Field(
        description=(
            "How many leases release_leases has released so far (all of them once it is "
            "completed); null if that action was not chosen."
        )
    )
    released: list[HeldLease] | None = Field(
        description=(
            f"The first {NAMED_RELEASES} leases released; the whole list is in resume_packet, "
            "a page at a time. Null if release_leases was not chosen."
        )
    )
    released_pages: int | None = Field(
        description="How many pages of released leases resume_packet can return."
    )
    blind_spot: dict[str, Any] | None = Field(
        description="What release_leases could not reach: the holder's leases without a scope."
    )
    alert_envelope_id: str | None = Field(
        description="The alert queued into notify_address, once queue_alert is done."
    )
    alert_id: str | None = Field(
        default=None,
        description=(
            "The id of the switch.fired event the namespace's channels were sent (its "
            "webhook-id), to stop its repeats with acknowledge_alert; null until they were "
            "told, or if none wanted it."
        ),
    )

    @classmethod
    def of(cls, death: Death) -> DeathView:
        chosen = "release_leases" in death.actions
        release = death.done.get("release_leases")
        alert = death.done.get("queue_alert")
        return cls(
            generation=death.generation,
            holder=death.holder,
            agent_id=death.agent_id,
            deadline=death.deadline,
            fired_at=death.fired_at,
            lateness_seconds=death.lateness_seconds,
            actions=death.actions,
            completed=[a for a in death.actions if a in death.done],
            marked_failed="mark_failed" in death.done,
            released_count=death.release.released if chosen else None,
            released=death.release.first if chosen else None,
            released_pages=death.release.pages if chosen else None,
            blind_spot=release["blind_spot"] if release else None,
            alert_envelope_id=alert.get("envelope_id") if alert else None,
            alert_id=(death.done.get("notify") or {}).get("event_id"),
        )


class HeartbeatResult(Output):
    scope: str
    state: PublicState
    generation: int
    deadline: datetime | None = Field(description="When the switch fires unless beaten again.")
    expect_within_seconds: int
    on_expiry: list[Action]
    notify_address: str | None
    agent_id: str | None
    beats: int
    death: DeathView | None = Field(
        description=(
            "Set when this switch had fired before this call: the facts of that death. A beat "
            "after a death arms a new generation, whose first three beats repeat the death in "
            "case an answer was lost; it stays on record in resume_packet."
        )
    )


class LeaseSummary(Output):
    resource: str
    holder: str
    holder_label: str | None
    generation: int
    expires_at: datetime


class ResumePacket(Output):
    scope: str
    state: PublicState
    generation: int
    holder: str
    agent_id: str | None
    armed_at: datetime
    last_beat_at: datetime
    deadline: datetime | None
    expect_within_seconds: int
    on_expiry: list[Action]
    notify_address: str | None
    death: DeathView | None = Field(description="The most recent observed death of this scope.")
    released_leases: list[HeldLease] | None = Field(
        description=(
            "Page released_page of the leases the death released, in resource order; null "
            "when that page does not exist."
        )
    )
    held_leases: list[LeaseSummary] = Field(
        description=f"Leases of this scope held right now, up to {HELD_PAGE} per packet."
    )
    held_leases_next_cursor: str | None = Field(
        description="Pass back as held_leases_cursor for more held leases; null at the end."
    )
    last_progress: ProgressSummary | None = Field(
        description=(
            "The latest progress reported for this scope; failing that, the latest report of "
            "the switch's holder; null if there is neither."
        )
    )


def _liveness(ctx: Context) -> Liveness:
    return Liveness(ctx.store, ctx.clock, ctx.alarms, ctx.queues, ctx.quotas)


# -- heartbeat ----------------------------------------------------------------------------
def heartbeat(ctx: Context, args: HeartbeatInput) -> HeartbeatResult:
    beat = Beat(
        at=to_ms(ctx.clock.now()),
        expect_within_seconds=args.expect_within_seconds,
        on_expiry=args.on_expiry,
        notify_address=args.notify_address,
        agent_id=args.agent_id,
    )
    switch, death = _liveness(ctx).beat(ctx.caller, args.scope, beat, args.disarm)
    return _result(switch, death)


def _result(switch: Switch, death: Death | None) -> HeartbeatResult:
    return HeartbeatResult(
        scope=switch.scope,
        state=switch.public_state(death),
        generation=switch.generation,
        deadline=switch.deadline if switch.state == "armed" else None,
        expect_within_seconds=switch.expect_within_seconds,
        on_expiry=switch.on_expiry,
        notify_address=switch.notify_address,
        agent_id=switch.agent_id,
        beats=switch.beats,
        death=DeathView.of(death) if death is not None else None,
    )


# -- resume_packet ------------------------------------------------------------------------
def _digest(scope: str) -> str:
    """What binds a cursor to its scope: short, whatever the scope's length."""
    return hashlib.sha256(scope.encode()).hexdigest()[:16]


def resume_packet(ctx: Context, args: ResumePacketInput) -> ResumePacket:
    held_after = None
    if args.held_leases_cursor is not None:
        held_after = cursor_position(args.held_leases_cursor, "held", str, s=_digest(args.scope))
    found = _liveness(ctx).resume(ctx.caller.namespace, args.scope, held_after, args.released_page)
    switch, death, progress = found.switch, found.death, found.last_progress
    return ResumePacket(
        scope=switch.scope,
        state=found.state,
        generation=switch.generation,
        holder=switch.holder,
        agent_id=switch.agent_id,
        armed_at=switch.armed_at,
        last_beat_at=switch.last_beat_at,
        deadline=switch.deadline if switch.state == "armed" else None,
        expect_within_seconds=switch.expect_within_seconds,
        on_expiry=switch.on_expiry,
        notify_address=switch.notify_address,
        death=DeathView.of(death) if death is not None else None,
        released_leases=found.released.leases if found.released is not None else None,
        held_leases=[
            LeaseSummary(
                resource=lease.resource,
                holder=lease.holder,
                holder_label=lease.holder_label,
                generation=lease.generation,
                expires_at=lease.expires_at,
            )
            for lease in found.held_leases
        ],
        held_leases_next_cursor=(
            encode_cursor("held", a=found.held_after, s=_digest(args.scope))
            if found.held_after
            else None
        ),
        last_progress=ProgressSummary.of(progress) if progress is not None else None,
    )


# -- list_switches ------------------------------------------------------------------------
ScopePrefix = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=PRINTABLE,
        description="Only scopes that begin with this text, e.g. permit-review-.",
    ),
    normalised(200),
]


class ListSwitchesInput(StrictInput):
    state: PublicState | None = Field(
        default=None,
        description=(
            "Only switches in this state: armed, disarmed, failed (fired, and its death marked "
            "the work failed) or expired (fired without mark_failed)."
        ),
    )
    scope_prefix: ScopePrefix | None = None
    cursor: Cursor | None = Field(
        default=None, description="The next_cursor of the previous page of the same query."
    )


class SwitchView(Output):
    scope: str
    state: PublicState = Field(
        description="armed, disarmed, failed (fired, work marked failed) or expired (fired)."
    )
    generation: int = Field(
        description="Grows by one each time the scope is armed again after a disarm or a death."
    )
    holder: str = Field(description="Principal id of who armed this generation and beats it.")
    agent_id: str | None = Field(description="The label the holder's last beat gave itself.")
    deadline: datetime | None = Field(
        description="When an armed switch fires unless beaten again; null unless armed."
    )
    expect_within_seconds: int = Field(description="The window the last beat asked for.")
    last_beat_at: datetime = Field(description="When this generation was last beaten.")
    armed_at: datetime = Field(description="When this generation was armed.")
    beats: int = Field(description="Beats of this generation.")
    on_expiry: list[Action] = Field(description="What runs (or ran) when the switch fires.")

    @classmethod
    def of(cls, switch: Switch) -> SwitchView:
        return cls(
            scope=switch.scope,
            state=switch.listed_state,
            generation=switch.generation,
            holder=switch.holder,
            agent_id=switch.agent_id,
            deadline=switch.deadline if switch.state == "armed" else None,
            expect_within_seconds=switch.expect_within_seconds,
            last_beat_at=switch.last_beat_at,
            armed_at=switch.armed_at,
            beats=switch.beats,
            on_expiry=switch.on_expiry,
        )


class SwitchPage(Output):
    switches: list[SwitchView] = Field(
        description="In scope order; a list in an object, because MCP structured output is one."
    )
    next_cursor: str | None = Field(
        description=(
            "Pass as cursor for the next page; null at the end. A page may be short (even "
            "empty) and still have a cursor when the state filter skips many switches."
        )
    )


def list_switches(ctx: Context, args: ListSwitchesInput) -> SwitchPage:
    prefix = args.scope_prefix or ""
    # A cursor names its namespace and query, so no other query's place is read with it.
    query = {"n": ctx.caller.namespace, "s": args.state, "p": prefix}
    after = cursor_position(args.cursor, "switches", str, **query) if args.cursor else None
    found, last = switches_page(ctx.store, ctx.caller, args.state, prefix, after)
    return SwitchPage(
        switches=[SwitchView.of(switch) for switch in found],
        next_cursor=encode_cursor("switches", a=last, **query) if last is not None else None,
    )


# -- list_deaths --------------------------------------------------------------------------
class ListDeathsInput(StrictInput):
    cursor: Cursor | None = Field(
        default=None, description="The next_cursor of the previous (newer) page."
    )
    limit: int = Field(default=LIST_PAGE, ge=1, le=LIST_PAGE, description="Page size, 1-50.")


class ListedDeath(DeathView):
    scope: str = Field(description="The scope whose switch died; resume_packet tells more.")

    @classmethod
    def listed(cls, death: Death) -> ListedDeath:
        return cls(scope=death.scope, **DeathView.of(death).model_dump())


class DeathPage(Output):
    deaths: list[ListedDeath] = Field(
        description=(
            "Newest first, by when each switch fired; a list in an object, because MCP "
            "structured output is one."
        )
    )
    next_cursor: str | None = Field(
        description="Pass as cursor for the next (older) page; null at the end."
    )


def list_deaths(ctx: Context, args: ListDeathsInput) -> DeathPage:
    query = {"n": ctx.caller.namespace}
    before = cursor_position(args.cursor, "deaths", str, **query) if args.cursor else None
    found, last = deaths_page(ctx.store, ctx.caller, before, args.limit)
    return DeathPage(
        deaths=[ListedDeath.listed(death) for death in found],
        next_cursor=encode_cursor("deaths", a=last, **query) if last is not None else None,
    )


# -- pauses -------------------------------------------------------------------------------
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
    Field(
        min_length=20,
        max_length=20,
        pattern=r"^pau_[a-z2-7]{16}$",
        description="A pause's id, as pause_switches and list_pauses return it.",
    ),
]
PauseReason = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=PRINTABLE,
        description="Why, for the people watching: one line, up to 200 characters.",
    ),
]


class PauseSwitchesInput(StrictInput):
    scope_prefix: ScopePrefix = Field(
        description=(
            "Pause every switch whose scope begins with this text (1-200 characters). A whole "
            "scope pauses that scope's switch, and any whose scope extends it (job-1 also "
            "covers job-10: end a prefix with a separator, job-1/, to keep to one family). "
            "There is no namespace-wide pause."
        )
    )
    until: Moment | None = Field(
        default=None,
        description=(
            "When the pause ends for every switch it covers: an RFC 3339 time with its "
            f"offset, after now and at most {MAX_PAUSE_SECONDS} s (30 days) ahead."
        ),
    )
    until_next_beat: bool = Field(
        default=False,
        description=(
            "End the pause for each switch at that switch's next beat: it holds only switches "
            "not beaten since it began, until their agents come back. With until, whichever "
            "comes first. Give until, until_next_beat or both."
        ),
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
        default=None, description="Instead of id: the scope prefix of the pause to end."
    )
    version: int = Field(
        ge=1, le=1_000_000_000, description="The pause's current version; a stale one conflicts."
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


def pause_switches(ctx: Context, args: PauseSwitchesInput) -> PauseView:
    now = to_ms(ctx.clock.now())
    return pause(
        ctx.store,
        ctx.uow,
        ctx.caller,
        args.scope_prefix,
        args.until,
        args.until_next_beat,
        args.reason,
        now,
        lambda found: PauseView.of(found, now),
    )


def resume_switches(ctx: Context, args: ResumeSwitchesInput) -> PauseView:
    now = to_ms(ctx.clock.now())
    return resume_pause(
        ctx.store,
        ctx.uow,
        ctx.caller,
        args.id,
        args.scope_prefix,
        args.version,
        now,
        lambda found: PauseView.of(found, now),
    )


class ListPausesInput(StrictInput):
    cursor: Cursor | None = Field(default=None, description="The next_cursor of the previous page.")


class PausePage(Output):
    pauses: list[PauseView] = Field(
        description=(
            "The pauses in force, in scope prefix order; a list in an object, because MCP "
            "structured output is one."
        )
    )
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end."
    )


def list_pauses(ctx: Context, args: ListPausesInput) -> PausePage:
    now = ctx.clock.now()
    query = {"n": ctx.caller.namespace}
    after = cursor_position(args.cursor, "pauses", str, **query) if args.cursor else None
    found, last = pauses_page(ctx.store, ctx.caller, after, now)
    return PausePage(
        pauses=[PauseView.of(found_pause, now) for found_pause in found],
        next_cursor=encode_cursor("pauses", a=last, **query) if last is not None else None,
    )


TOOLS: tuple[Tool[Context], ...] = (
    Tool(
        name="heartbeat",
        title="Dead-man switch",
        description=(
            "Prove you are alive. Each beat arms (or re-arms) a durable alarm for the scope: beat "
            "again within expect_within_seconds or the switch fires and runs the on_expiry "
            "actions exactly once, in the order release_leases, mark_failed, queue_alert. "
            "release_leases frees your leases taken with this scope and reports the rest as its "
            "blind spot; mark_failed makes resume_packet report the death as an observed fact; "
            "queue_alert puts one alert into notify_address. A beat after a death reports that "
            "death and arms a new generation. disarm stops the switch when the work is done."
        ),
        input_model=HeartbeatInput,
        output_model=HeartbeatResult,
        run=heartbeat,
    ),
    Tool(
        name="resume_packet",
        title="Resume a scope",
        description=(
            "What a successor needs to pick up a scope: whether its switch is armed, disarmed "
            "or dead, the observed death with what its actions released and whom they alerted, "
            "the last beat, the leases of the scope held now, and the latest progress reported "
            "for the scope (or else by the switch's holder), returned as its reporter's data. "
            "Long lists come a page at a time: released_page picks a page of the leases the "
            "death released (death.released_pages says how many), and held_leases_cursor "
            "continues the held leases from held_leases_next_cursor."
        ),
        input_model=ResumePacketInput,
        output_model=ResumePacket,
        run=resume_packet,
        read_only=True,
    ),
    Tool(
        name="list_switches",
        title="Watch dead-man switches",
        description=(
            f"The dead-man switches of your namespace in scope order, {LIST_PAGE} a page, for "
            "people and operators (agents see their own through heartbeat and resume_packet). "
            "Each with its state (armed, disarmed, failed or expired), holder (who armed it), "
            "agent_id (the label of the beating instance), deadline (when an armed switch "
            "fires), last_beat_at, expect_within_seconds and generation. state and "
            "scope_prefix narrow the list; with state, one call examines at most "
            f"{SWITCHES_SCAN_BUDGET} switches, so a page may be short and still have a "
            "next_cursor."
        ),
        input_model=ListSwitchesInput,
        output_model=SwitchPage,
        run=list_switches,
        read_only=True,
    ),
    Tool(
        name="list_deaths",
        title="Recent deaths",
        description=(
            "The deaths of your namespace's dead-man switches, newest first, for people and "
            "operators: each with its scope, generation, holder and agent_id, deadline, "
            "fired_at and lateness_seconds (how long after the deadline the switch was seen "
            "to fire), the actions chosen and completed, and what release_leases released "
            "(released_count, the first few leases, the pages resume_packet can return)."
        ),
        input_model=ListDeathsInput,
        output_model=DeathPage,
        run=list_deaths,
        read_only=True,
    ),
    Tool(
        name="pause_switches",
        title="Pause dead-man switches",
        description=(
            "For maintenance: pause every dead-man switch whose scope begins with scope_prefix, "
            "until a time (until), until each switch's next beat (until_next_beat), or the first "
            "of both. While a pause covers a switch, a missed deadline neither fires it nor "
            "alerts: the switch is held, armed, and beats keep working. When the pause ends, a "
            "held switch gets its own window again from that moment, and fires only if it is "
            "not beaten by then. One pause per prefix; the pause and who set it go to the "
            f"audit trail. At most {MAX_PAUSES} pauses in force per namespace. Operators only."
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
            "End a pause early, named by its id or its scope_prefix, with its current version. "
            "Each switch it held learns of the end at its next hold check (every window of its "
            f"own, at least {HOLD_CHECK_MIN_SECONDS} s and at most {HOLD_CHECK_MAX_SECONDS} s "
            "apart) and then has its own window counted from now: it fires only if not beaten "
            "by then (a switch with a window under a minute, as soon as it learns). A pause that "
            "has already ended is returned as it is. Audited. Operators only."
        ),
        input_model=ResumeSwitchesInput,
        output_model=PauseView,
        run=resume_switches,
        roles=OPERATORS,
    ),
    Tool(
        name="list_pauses",
        title="Paused switches",
        description=(
            f"The pauses in force in your namespace, in scope prefix order, {LIST_PAGE} a page, "
            "for people and operators: each with its scope_prefix, who set it and when, until, "
            "until_next_beat, the reason given, and its version (for resume_switches). A switch "
            "is paused when a pause's scope_prefix begins its scope."
        ),
        input_model=ListPausesInput,
        output_model=PausePage,
        run=list_pauses,
        read_only=True,
    ),
)
