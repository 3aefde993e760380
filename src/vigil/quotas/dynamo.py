"""Quota counters on DynamoDB."""

from __future__ import annotations

from vigil.kit.dynamo import DynamoBase, DynamoWrite
from vigil.quotas.records import Counter
from vigil.quotas.store import QuotaStore, quota_count


class DynamoQuotas(DynamoBase, QuotaStore):
    def count(self, namespace: str, counter: Counter, delta: int, limit: int) -> DynamoWrite:
        return DynamoWrite([], counts=(quota_count(namespace, counter, delta, limit),))

    def quota_usage(self, namespace: str, counter: Counter) -> int:
        return self.counter(f"NS#{namespace}", "QUOTAS", counter)
