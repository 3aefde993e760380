"""Lambda entry point for the dead-man alarm worker (Scheduler and timer queue)."""
from vigil.entrypoints.alarm import handler

__all__ = ["handler"]
