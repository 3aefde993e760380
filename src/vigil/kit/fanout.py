"""Independent pieces of one call run side by side: each its own round trips to the store, so
that a call of many (a batch of beats) waits about as long as its slowest few, not their sum.

One pool for the process, as wide as an AWS client's pool of connections (botocore's default,
10): wider would only queue on the connections. Each piece runs in a copy of the caller's
context (its correlation id, for the logs). Pieces must not fan out again: the pool is shared
and bounded. ``concurrent.futures`` is imported by the first call that fans out, not by a cold
start that never does (a single heartbeat's).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

T = TypeVar("T")
R = TypeVar("R")

WIDTH = 10

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
# Set by a measurement that hooks every AWS call and counts them one at a time
# (scripts/costs.py): the pieces then run one after another, in order.
serial = False


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=WIDTH, thread_name_prefix="vigil-fanout")
        return _pool


@contextmanager
def one_at_a_time() -> Iterator[None]:
    """Inside, ``each`` runs its pieces one after another (``serial``), as before outside."""
    global serial
    before, serial = serial, True
    try:
        yield
    finally:
        serial = before


def each(items: Sequence[T], work: Callable[[T], R]) -> list[R]:
    """``work(item)`` for every item, side by side, the results in the items' order. An
    exception from any piece is raised once all have ended: ``work`` should answer its own
    failures as results where the others must go on."""
    if len(items) <= 1 or serial:
        return [work(item) for item in items]
    from concurrent.futures import wait

    pool = _executor()
    futures = [pool.submit(contextvars.copy_context().run, work, item) for item in items]
    wait(futures)
    return [future.result() for future in futures]
