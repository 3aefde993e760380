"""The sweep's entry into the alarm function: the stack's recurring schedule (template.yaml,
SweepSchedule) invokes the alarm function every SweepMinutes with ``SWEEP_EVENT``, which no
timer looks like, and the alarm function hands it here. A run arms one sweep timer per shard
on the timer queue, which the alarm function's batches then take as they take every timer
(vigil.switches.sweep)."""

from __future__ import annotations

from typing import Any, TypeVar

from vigil.switches.engine import SwitchEngine
from vigil.switches.store import SwitchPorts

SWEEP_EVENT = {"sweep": "switches"}

S = TypeVar("S", bound=SwitchPorts)


def is_sweep(event: dict[str, Any]) -> bool:
    return event == SWEEP_EVENT


def run(engine: SwitchEngine[S]) -> dict[str, Any]:
    """One run of the sweep: its timers armed. The sweep's module is imported with the first
    run or sweep timer, not with the alarm function's."""
    from vigil.switches.sweep import start

    return {"shards": start(engine)}
