"""Lambda entry point for the notify worker (Scheduler and notify queue).

Importing it is the function's init phase: it builds the store, the alarms, the sender and
their AWS clients, so that timers find them built."""

import gc

gc.disable()

from vigil.entrypoints.notify import handler, notifier  # noqa: E402

notifier()
gc.freeze()
gc.enable()

__all__ = ["handler"]
