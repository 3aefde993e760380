"""Dead-man switches and the deaths they observe.

A switch is one per scope in a namespace. Beating it in time moves its deadline; missing the
deadline fires it: exactly one caller wins the conditional change from armed to fired, and
that change creates the death record which lists the actions to run and records each one as
it is done, so an alarm delivered again after a crash finishes what is missing and repeats
nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from vigil.domain import Record

Action = Literal["release_leases", "mark_failed", "queue_alert"]
# The alert is last so that it can say what was released.
ACTION_ORDER: tuple[Action, ...] = ("release_leases", "mark_failed", "queue_alert")
SwitchState = Literal["armed", "disarmed", "fired"]

MIN_WINDOW_SECONDS = 2
MAX_WINDOW_SECONDS = 2_592_000


class Switch(Record):
    namespace: str
    scope: str
    holder: str  # the principal that armed this generation
    agent_id: str | None
    state: SwitchState
    generation: int  # grows each time the switch is armed after a disarm or a death
    deadline: datetime
    expect_within_seconds: int
    on_expiry: list[Action]
    notify_address: str | None
    armed_at: datetime
    last_beat_at: datetime
    beats: int  # beats of this generation
    alarm_due: datetime  # the due time of the newest alarm armed for this generation
    version: int
    # The generation whose death this one was armed after: its first beats repeat that death,
    # so that a lost answer cannot hide it from the worker.
    follows_death: int | None = None


class HeldLease(Record):
    resource: str
    generation: int


class Death(Record):
    """What was observed when a switch fired, and what its actions did."""

    namespace: str
    scope: str
    generation: int
    holder: str
    agent_id: str | None
    deadline: datetime
    fired_at: datetime
    actions: list[Action]  # in ACTION_ORDER
    notify_address: str | None
    to_release: list[HeldLease]  # the scope's leases of the holder when it fired
    done: dict[str, dict[str, Any]]  # action -> its recorded outcome
    version: int

    @property
    def lateness_seconds(self) -> float:
        return round((self.fired_at - self.deadline).total_seconds(), 3)

    def pending(self) -> list[Action]:
        return [action for action in self.actions if action not in self.done]


def ordered(actions: list[Action]) -> list[Action]:
    return [action for action in ACTION_ORDER if action in actions]
