"""The sweep's entry into the alarm function: the stack's recurring schedule (template.yaml,
SweepSchedule) invokes the alarm function every SweepMinutes with ``SWEEP_EVENT``, which no
timer looks like, and the alarm function hands it here. The sweep runs on the alarm function's
engine, with its permissions, within its timeout (vigil.switches.sweep)."""

from __future__ import annotations

from typing import Any, TypeVar

from vigil.switches.engine import SwitchEngine
from vigil.switches.store import SwitchPorts

SWEEP_EVENT = {"sweep": "switches"}

S = TypeVar("S", bound=SwitchPorts)


def is_sweep(event: dict[str, Any]) -> bool:
    return event == SWEEP_EVENT


def run(engine: SwitchEngine[S], context: Any = None) -> dict[str, Any]:
    """One run of the sweep, bounded by what is left of the invocation ``context`` (none: no
    bound); returns what it found. The sweep's module is imported with the first run, not with
    the alarm function's."""
    from vigil.switches.sweep import sweep

    def remaining() -> float:
        return float(context.get_remaining_time_in_millis()) / 1000

    return sweep(engine, remaining if context is not None else None)._asdict()
