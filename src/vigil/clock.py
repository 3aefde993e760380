"""Time is injected everywhere so that tests move the clock instead of sleeping."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; safe to share between threads."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


def span(seconds: float) -> str:
    """A length of time as people read it, in its two largest units: 3 s, 2 min 5 s,
    1 h 4 min, 2 d 3 h."""
    whole = int(abs(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def to_ms(moment: datetime) -> datetime:
    """Truncated to the millisecond: what the table stores, so stored and computed times compare
    equal."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def iso(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds: sortable as text and exact enough for deadlines."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
