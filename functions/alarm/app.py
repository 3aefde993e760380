"""Lambda entry point for the dead-man alarm worker (Scheduler and timer queue).

Importing it is the function's init phase: it builds the store, the queues, the alarms and
their AWS clients, so that timers find them built. The garbage collector leaves what init makes
alone, as the API function's entry point says."""

import gc

gc.disable()

from vigil.entrypoints.alarm import handler, switch_engine  # noqa: E402

switch_engine()
gc.freeze()
gc.enable()

__all__ = ["handler"]
