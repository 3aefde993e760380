"""Retry on conflict: read, decide, write conditionally; on a lost race, read again.

One policy for every capability. More attempts would only queue callers behind a record that
is plainly contended; the caller then gets ``version_conflict`` and decides itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from vigil.errors import conflict
from vigil.kit.uow import ConditionFailed

T = TypeVar("T")

ATTEMPTS = 5


def retry_on_conflict(attempt: Callable[[], T], what: str) -> T:
    """``attempt()`` until it does not lose a race, ATTEMPTS times at most; then
    version_conflict, naming ``what`` kept changing."""
    for _ in range(ATTEMPTS):
        try:
            return attempt()
        except ConditionFailed:
            continue
    raise conflict(f"{what} kept changing while this call ran; read it and retry")
