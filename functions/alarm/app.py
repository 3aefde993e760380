"""Lambda entry point for the dead-man alarm worker (Scheduler and timer queue).

Importing it is the function's init phase: it builds the store, the queues, the alarms and
their AWS clients, so that timers find them built."""

from vigil.entrypoints.alarm import handler, liveness

liveness()

__all__ = ["handler"]
