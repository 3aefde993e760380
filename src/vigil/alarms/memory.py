"""Alarms in memory: armed timers wait until a test delivers the due ones."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vigil.alarms.timers import Timer


class MemoryAlarms:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.armed: list[Timer] = []

    def arm(self, timer: Timer, now: datetime) -> None:
        with self._lock:
            self.armed.append(timer.model_copy())

    def hand_back(self, record: Mapping[str, Any], seconds: int) -> None:
        """Nothing: a timer in memory is no queue's record; a test delivers it again."""

    def take_due(self, now: datetime) -> list[Timer]:
        """Removes and returns the timers due at ``now``, as the queue would hand them out."""
        with self._lock:
            due = [t for t in self.armed if t.due_at <= now]
            self.armed = [t for t in self.armed if t.due_at > now]
        return due
