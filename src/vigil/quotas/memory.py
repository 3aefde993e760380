"""Quota counters in memory."""

from __future__ import annotations

from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.quotas.records import Counter
from vigil.quotas.store import QuotaStore, quota_count


def _nothing() -> None:
    pass


class MemoryQuotas(MemoryBase, QuotaStore):
    def count(self, namespace: str, counter: Counter, delta: int, limit: int) -> MemoryWrite:
        counts = (quota_count(namespace, counter, delta, limit),)
        return MemoryWrite(_nothing, _nothing, (), counts=counts)

    def quota_usage(self, namespace: str, counter: Counter) -> int:
        return self.counter(f"NS#{namespace}", "QUOTAS", counter)
