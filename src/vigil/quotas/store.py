"""Where a namespace's quota counters are kept: one item per namespace (``NS#<ns>`` /
``QUOTAS``), one number per counter, changed by the unit of work's counts."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.kit.uow import Count, Write
from vigil.quotas.records import Counter


def quota_count(namespace: str, counter: Counter, delta: int, limit: int | None = None) -> Count:
    """``delta`` added to the namespace's ``counter``; an increase holds only within ``limit``."""
    return Count(f"NS#{namespace}", "QUOTAS", counter, delta, limit)


class QuotaStore(ABC):
    @abstractmethod
    def count(self, namespace: str, counter: Counter, delta: int, limit: int) -> Write:
        """Adds ``delta`` to the namespace's ``counter`` when committed. An increase holds only
        while the counter stays at or under ``limit``; a decrease always holds."""

    @abstractmethod
    def quota_usage(self, namespace: str, counter: Counter) -> int:
        """The namespace's ``counter`` as stored (0 if never counted)."""
