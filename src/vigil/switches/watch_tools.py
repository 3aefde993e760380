"""Dead-man switch tools for the people watching a namespace: ``list_switches`` and
``list_deaths``."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.tooling import OPERATORS, PEOPLE, Cursor, Output, StrictInput, Tool
from vigil.switches.records import Action, Death, PublicState, Switch
from vigil.switches.tools import DeathView, ScopePrefix, SwitchContext
from vigil.switches.watching import LIST_PAGE, deaths_page, switches_page


class ListSwitchesInput(StrictInput):
    state: PublicState | None = Field(
        default=None,
        description="Only this state; failed: fired with mark_failed.",
    )
    scope_prefix: ScopePrefix | None = None
    cursor: Cursor | None = Field(default=None, description="next_cursor of the last page.")


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
    flapping_since: datetime | None = Field(
        default=None,
        description="Since when it flaps: its deaths are not told until it settles; or null.",
    )
    depends_on: str | None = Field(default=None, description="The scope it depends on.")
    schedule: str | None = Field(
        default=None, description="Its calendar in words; null: a window after each beat."
    )
    run_started_at: datetime | None = Field(
        default=None, description="When the run under way began (its start beat); or null."
    )

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
            flapping_since=switch.flapping_since,
            depends_on=switch.depends_on,
            schedule=switch.calendar.describe() if switch.calendar is not None else None,
            run_started_at=switch.run_started_at if switch.state == "armed" else None,
        )


class SwitchPage(Output):
    switches: list[SwitchView] = Field(description="In scope order.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end."
    )


def list_switches(ctx: SwitchContext, args: ListSwitchesInput) -> SwitchPage:
    prefix = args.scope_prefix or ""
    # A cursor names its namespace and query, so no other query's place is read with it.
    query = {"n": ctx.caller.namespace, "s": args.state, "p": prefix}
    after = cursor_position(args.cursor, "switches", str, **query) if args.cursor else None
    found, last = switches_page(ctx.caller, args.state, prefix, after, store=ctx.store)
    return SwitchPage(
        switches=[SwitchView.of(switch) for switch in found],
        next_cursor=encode_cursor("switches", a=last, **query) if last is not None else None,
    )


# -- list_deaths --------------------------------------------------------------------------
class ListDeathsInput(StrictInput):
    cursor: Cursor | None = Field(default=None, description="next_cursor of the last page.")
    limit: int = Field(default=LIST_PAGE, ge=1, le=LIST_PAGE)


class ListedDeath(DeathView):
    scope: str = Field(description="The scope whose switch died; resume_packet tells more.")

    @classmethod
    def listed(cls, death: Death) -> ListedDeath:
        return cls(scope=death.scope, **DeathView.of(death).model_dump())


class DeathPage(Output):
    deaths: list[ListedDeath] = Field(description="Newest first, by when each switch fired.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next (older) page; null at the end."
    )


def list_deaths(ctx: SwitchContext, args: ListDeathsInput) -> DeathPage:
    query = {"n": ctx.caller.namespace}
    before = cursor_position(args.cursor, "deaths", str, **query) if args.cursor else None
    found, last = deaths_page(ctx.caller, before, args.limit, store=ctx.store)
    return DeathPage(
        deaths=[ListedDeath.listed(death) for death in found],
        next_cursor=encode_cursor("deaths", a=last, **query) if last is not None else None,
    )


TOOLS: tuple[Tool[SwitchContext], ...] = (
    Tool(
        name="list_switches",
        title="Watch dead-man switches",
        description=(
            "Your namespace's dead-man switches in scope order: state, holder, deadline, last beat."
        ),
        input_model=ListSwitchesInput,
        output_model=SwitchPage,
        run=list_switches,
        roles=OPERATORS,
        kinds=PEOPLE,
        read_only=True,
    ),
    Tool(
        name="list_deaths",
        title="Recent deaths",
        description=(
            "Dead-man switch deaths, newest first: how late each fired, what its actions did."
        ),
        input_model=ListDeathsInput,
        output_model=DeathPage,
        run=list_deaths,
        roles=OPERATORS,
        kinds=PEOPLE,
        read_only=True,
    ),
)
