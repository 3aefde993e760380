"""The switches' timers: one per armed window, due at its deadline (or a pause's hold check),
and one for a death whose actions are not all done, due at once."""

from __future__ import annotations

from datetime import datetime

from vigil.alarms.timers import Timer
from vigil.switches.records import Death, Switch

TIMER_KIND = "switch"


def timer_for(switch: Switch, due_at: datetime) -> Timer:
    return Timer(
        kind=TIMER_KIND,
        namespace=switch.namespace,
        key=switch.scope,
        generation=switch.generation,
        due_at=due_at,
    )


def continuation(death: Death, due_at: datetime) -> Timer:
    return Timer(
        kind=TIMER_KIND,
        namespace=death.namespace,
        key=death.scope,
        generation=death.generation,
        due_at=due_at,
    )
