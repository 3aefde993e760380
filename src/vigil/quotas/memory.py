"""Quota counters in memory."""

from __future__ import annotations

from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import Count
from vigil.quotas.records import Counter
from vigil.quotas.store import QUOTA_SHARDS, QUOTAS, QuotaStore, quota_pk, shard_pk


def _nothing() -> None:
    pass


class MemoryQuotas(MemoryBase, QuotaStore):
    def counted(self, counts: tuple[Count, ...]) -> MemoryWrite:
        return MemoryWrite(_nothing, _nothing, (), counts=counts)

    def quota_main(self, namespace: str, counter: Counter) -> int:
        return self.counter(quota_pk(namespace), QUOTAS, counter)

    def quota_shards(self, namespace: str, counter: Counter) -> list[int]:
        with self._lock:
            return [
                self.counter(shard_pk(namespace, k), QUOTAS, counter) for k in range(QUOTA_SHARDS)
            ]
