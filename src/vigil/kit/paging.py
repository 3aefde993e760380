"""A filtered page under a scan budget.

A listing that filters (a search text, stale sessions only) reads the store in batches and
keeps what matches. To keep one call bounded whatever the filter, it examines at most
``budget`` records: then it returns the page it has, possibly short or empty, with a place to
continue from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
P = TypeVar("P")


def scan_page(
    fetch: Callable[[P | None, int], list[T]],
    position: Callable[[T], P],
    keep: Callable[[T], bool],
    after: P | None,
    size: int,
    budget: int,
) -> tuple[list[T], P | None]:
    """Up to ``size`` records that ``keep`` accepts, read after ``after`` in batches of
    ``size``; and the position to continue after, or None when the listing is exhausted."""
    kept: list[T] = []
    examined = 0
    while examined < budget:
        batch = fetch(after, size)
        for record in batch:
            examined += 1
            after = position(record)
            if keep(record):
                kept.append(record)
                if len(kept) == size:
                    return kept, after
        if len(batch) < size:
            return kept, None
    return kept, after
