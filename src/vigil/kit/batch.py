"""Reads that the timers of one batch share.

A burst of deaths in one namespace brings the alarm function batches of its switches' timers,
and every fire reads the same few namespace-wide things: the pauses (is the switch held?) and
the notification channels (who is told?). Read for each fire, a burst of fifty thousand would
be fifty thousand reads of each of those two partitions; read once per batch (ten timers on
the timer queue), a tenth of that. The price is staleness, bounded by one batch's run: a pause
or a channel made while a batch runs applies from the next batch, at most the function's
timeout later (30 s; in practice the second or two a batch takes), as if it had been made just
after those fires.

``one_batch`` opens the sharing for the timers run inside it (the alarm function's handler);
outside it ``read_once`` simply reads, so the tools, the console and the beats always read
afresh. Each thread has its own batch: concurrent batches share nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, cast

T = TypeVar("T")

_shared: ContextVar[dict[Hashable, Any] | None] = ContextVar("vigil_batch_reads", default=None)


@contextmanager
def one_batch() -> Iterator[None]:
    """The reads made by ``read_once`` inside are made once each."""
    token = _shared.set({})
    try:
        yield
    finally:
        _shared.reset(token)


def in_a_batch() -> bool:
    """Whether reads are shared here (inside ``one_batch``)."""
    return _shared.get() is not None


def offer(key: Hashable, value: Any) -> None:
    """Leaves ``value`` for one ``take`` of ``key`` in this batch (nothing outside a batch)."""
    shared = _shared.get()
    if shared is not None:
        shared[("offered", key)] = value


def take(key: Hashable) -> tuple[bool, Any]:
    """What was offered for ``key`` in this batch, once: (True, it), then (False, None)."""
    shared = _shared.get()
    if shared is None or ("offered", key) not in shared:
        return False, None
    return True, shared.pop(("offered", key))


def read_once(key: Hashable, read: Callable[[], T]) -> T:
    """``read()``, or, inside ``one_batch``, what it returned the first time ``key`` was
    read there. What it returns is shared: callers only look at it."""
    shared = _shared.get()
    if shared is None:
        return read()
    if key not in shared:
        shared[key] = read()
    return cast(T, shared[key])
