"""Retry on conflict: read, decide, write conditionally; on a lost race, read again.

One policy for every capability. More attempts would only queue callers behind a record that
is plainly contended; the caller then gets ``version_conflict`` and decides itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from pydantic import BaseModel

from vigil.errors import contended
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.observability import metrics


class _Versioned(Protocol):
    @property
    def version(self) -> int: ...


T = TypeVar("T")
V = TypeVar("V", bound=_Versioned)
R = TypeVar("R", bound=BaseModel)

ATTEMPTS = 5


def retry_on_conflict(attempt: Callable[[], T], what: str) -> T:
    """``attempt()`` until it does not lose a race, ATTEMPTS times at most; then
    version_conflict, naming ``what`` kept changing."""
    for _ in range(ATTEMPTS):
        try:
            return attempt()
        except ConditionFailed:
            metrics.version_conflict()
    raise contended(f"{what} kept changing while this call ran; retry")


def update_versioned(
    uow: UnitOfWork,
    read: Callable[[], V | None],
    change: Callable[[V | None], V],
    save: Callable[[V, int | None], Write],
    present: Callable[[V], R],
    what: str,
) -> R:
    """The usual change of one versioned record: read it, apply a rule (``change``), store the
    outcome conditionally on the version read, with the call's result presented from it; after
    a lost race, all of it again."""

    def attempt() -> R:
        before = read()
        after = change(before)
        result = present(after)
        uow.commit(save(after, before.version if before is not None else None), result=result)
        return result

    return retry_on_conflict(attempt, what)
