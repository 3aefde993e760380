"""What a switch tells people of: ``switch.fired``, with what its actions did."""

from __future__ import annotations

from datetime import datetime

from pydantic import AwareDatetime, Field

from vigil.kit.events import EventData
from vigil.mailboxes.records import parse_address
from vigil.switches.records import Action, Death, Switch


class ReleasedLease(EventData):
    resource: str
    generation: int


class SwitchFired(EventData):
    """A dead-man switch missed its deadline and fired: what it was, and what its actions did."""

    scope: str
    generation: int = Field(description="The generation of the switch that died.")
    holder: str = Field(description="Principal id of who had armed it and stopped beating.")
    agent_id: str | None = Field(description="The label its last beat gave the instance.")
    deadline: AwareDatetime = Field(description="The deadline that was missed.")
    fired_at: AwareDatetime = Field(description="When the missed deadline was seen and acted on.")
    lateness_seconds: float = Field(description="fired_at minus deadline, in seconds.")
    actions: list[Action] = Field(description="The on_expiry actions chosen, in run order.")
    released_count: int | None = Field(
        description="How many leases release_leases released; null if it was not chosen."
    )
    released: list[ReleasedLease] = Field(
        description="The first few leases released (all of them are in resume_packet)."
    )
    released_pages: int | None = Field(
        description="How many pages of released leases resume_packet returns; null as above."
    )
    dependants_count: int = Field(
        default=0,
        description=(
            "How many switches depend on this one: their deaths while it is dead are told "
            "here, not apart."
        ),
    )
    dependants: list[str] = Field(
        default_factory=list, description="The scopes of the first 50 of them, in scope order."
    )
    run_started_at: AwareDatetime | None = Field(
        default=None,
        description="When the run it died in began (its start beat): it did not finish in time.",
    )
    # The agent whose mailbox its alert goes to: who may read it as its own event. Not sent:
    # the channels' contract (docs/events) is what it was.
    watcher: str | None = Field(default=None, exclude=True)

    @classmethod
    def of(
        cls, death: Death, dependants: list[str] | None = None, dependants_count: int = 0
    ) -> SwitchFired:
        chosen = "release_leases" in death.actions
        return cls(
            scope=death.scope,
            generation=death.generation,
            holder=death.holder,
            agent_id=death.agent_id,
            deadline=death.deadline,
            fired_at=death.fired_at,
            lateness_seconds=death.lateness_seconds,
            actions=death.actions,
            released_count=death.release.released if chosen else None,
            released=[
                ReleasedLease(resource=held.resource, generation=held.generation)
                for held in (death.release.first if chosen else [])
            ],
            released_pages=death.release.pages if chosen else None,
            dependants_count=dependants_count,
            dependants=dependants or [],
            run_started_at=death.run_started_at,
            watcher=_owner(death.notify_address),
        )

    def identity(self) -> tuple[str, ...]:
        return (self.scope, str(self.generation))

    def readers(self) -> tuple[str, ...]:
        return () if self.watcher is None else (self.watcher,)


def _owner(address: str | None) -> str | None:
    parsed = None if address is None else parse_address(address)
    return None if parsed is None else parsed[0]


class SwitchRecovered(EventData):
    """A switch that had fired was beaten again: the death it ends, and how long it was down.
    It goes wherever its switch.fired went."""

    scope: str
    generation: int = Field(description="The generation that died.")
    holder: str = Field(description="Principal id of who had armed the generation that died.")
    agent_id: str | None = Field(description="The label the dead generation's last beat gave.")
    deadline: AwareDatetime = Field(description="The deadline that was missed: down since then.")
    fired_at: AwareDatetime
    recovered_at: AwareDatetime = Field(description="When the beat that armed it again came.")
    downtime_seconds: float = Field(description="recovered_at minus deadline, in seconds.")
    recovered_by: str = Field(description="Principal id of who beat it again.")
    fired_event_id: str = Field(description="The id of the switch.fired event this ends.")
    # The agent alerted of the death, who reads its end as its own event too; and, for a death
    # told in another switch's alert, that alert's id, where its end goes. Neither is sent.
    watcher: str | None = Field(default=None, exclude=True)
    told_in: str | None = Field(default=None, exclude=True)

    def identity(self) -> tuple[str, ...]:
        return (self.scope, str(self.generation))

    @classmethod
    def of(cls, death: Death, fired_event_id: str, told_in: str | None = None) -> SwitchRecovered:
        assert death.recovered_at is not None
        assert death.recovered_by is not None
        downtime = death.downtime_seconds
        assert downtime is not None
        return cls(
            scope=death.scope,
            generation=death.generation,
            holder=death.holder,
            agent_id=death.agent_id,
            deadline=death.deadline,
            fired_at=death.fired_at,
            recovered_at=death.recovered_at,
            downtime_seconds=downtime,
            recovered_by=death.recovered_by,
            fired_event_id=fired_event_id,
            watcher=_owner(death.notify_address),
            told_in=told_in,
        )

    def readers(self) -> tuple[str, ...]:
        return () if self.watcher is None else (self.watcher,)


class SwitchFlapping(EventData):
    """A switch died again and again: told once, in place of this death's switch.fired. Its
    deaths and recoveries are not told until it settles (switch.settled)."""

    scope: str
    generation: int = Field(description="The generation whose death made it flap.")
    holder: str
    agent_id: str | None
    fired_at: AwareDatetime = Field(description="When that death fired: flapping since then.")
    deaths: int = Field(description="Its deaths within window_seconds, this one included.")
    window_seconds: int = Field(description="How far back deaths are counted.")

    @classmethod
    def of(cls, death: Death, deaths: int, window_seconds: int) -> SwitchFlapping:
        return cls(
            scope=death.scope,
            generation=death.generation,
            holder=death.holder,
            agent_id=death.agent_id,
            fired_at=death.fired_at,
            deaths=deaths,
            window_seconds=window_seconds,
        )

    def identity(self) -> tuple[str, ...]:
        return self.about(self.scope, self.fired_at)

    @staticmethod
    def about(scope: str, since: datetime) -> tuple[str, ...]:
        """What makes a flapping of ``scope`` since ``since`` the one it is: a switch.settled
        names it so, from the switch that keeps ``since``."""
        return (scope, since.isoformat())


class SwitchSettled(EventData):
    """A flapping switch went a whole window without dying: its deaths are told again."""

    scope: str
    flapping_since: AwareDatetime
    settled_at: AwareDatetime
    flapping_event_id: str = Field(description="The id of the switch.flapping event this ends.")

    def identity(self) -> tuple[str, ...]:
        return (self.scope, self.flapping_since.isoformat())


class SwitchRanShort(EventData):
    """A run finished sooner than the floor its start beat set: the work may not have been
    done. It goes where the switch's deaths would."""

    scope: str
    generation: int
    holder: str
    agent_id: str | None
    started_at: AwareDatetime = Field(description="When the start beat came.")
    finished_at: AwareDatetime = Field(description="When the finish beat came.")
    run_seconds: float = Field(description="finished_at minus started_at, in seconds.")
    min_run_seconds: float = Field(description="The floor the start beat set, in seconds.")

    @classmethod
    def of(cls, switch: Switch, finished_at: datetime) -> SwitchRanShort:
        assert switch.run_started_at is not None
        assert switch.short_before is not None
        return cls(
            scope=switch.scope,
            generation=switch.generation,
            holder=switch.holder,
            agent_id=switch.agent_id,
            started_at=switch.run_started_at,
            finished_at=finished_at,
            run_seconds=round((finished_at - switch.run_started_at).total_seconds(), 3),
            min_run_seconds=round((switch.short_before - switch.run_started_at).total_seconds(), 3),
        )

    def identity(self) -> tuple[str, ...]:
        return (self.scope, str(self.generation), self.started_at.isoformat())
