"""What a switch tells people of: ``switch.fired``, with what its actions did."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from vigil.kit.events import EventData
from vigil.mailboxes.records import parse_address
from vigil.switches.records import Action, Death


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
    # The agent whose mailbox its alert goes to: who may read it as its own event. Not sent:
    # the channels' contract (docs/events) is what it was.
    watcher: str | None = Field(default=None, exclude=True)

    @classmethod
    def of(cls, death: Death) -> SwitchFired:
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
            watcher=_owner(death.notify_address),
        )

    def identity(self) -> tuple[str, ...]:
        return (self.scope, str(self.generation))

    def readers(self) -> tuple[str, ...]:
        return () if self.watcher is None else (self.watcher,)


def _owner(address: str | None) -> str | None:
    parsed = None if address is None else parse_address(address)
    return None if parsed is None else parsed[0]
