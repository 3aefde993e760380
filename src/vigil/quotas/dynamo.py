"""Quota counters on DynamoDB."""

from __future__ import annotations

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_s
from vigil.kit.uow import Count
from vigil.quotas.records import Counter
from vigil.quotas.store import QUOTA_SHARDS, QUOTAS, QuotaStore, quota_pk, shard_pk


class DynamoQuotas(DynamoBase, QuotaStore):
    def counted(self, counts: tuple[Count, ...]) -> DynamoWrite:
        return DynamoWrite([], counts=counts)

    def quota_main(self, namespace: str, counter: Counter) -> int:
        return self.counter(quota_pk(namespace), QUOTAS, counter)

    def quota_shards(self, namespace: str, counter: Counter) -> list[int]:
        pks = [shard_pk(namespace, k) for k in range(QUOTA_SHARDS)]
        items = self._batch_get([{"pk": attr_s(pk), "sk": attr_s(QUOTAS)} for pk in pks])
        found = {item["pk"]["S"]: int(item[counter]["N"]) for item in items if counter in item}
        return [found.get(pk, 0) for pk in pks]
