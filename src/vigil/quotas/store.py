"""Where a namespace's quota counters are kept: increases on one item per namespace
(``NS#<ns>`` / ``QUOTAS``), decreases spread over ``QUOTA_SHARDS`` items of their own
(``NS#<ns>#QUOTAS#<k>`` / ``QUOTAS``), each in a partition of its own.

Every increase is conditional on its limit, so it must see one number: the main item's. A
decrease needs no condition, so it goes to the shard its key hashes to, and a burst of deaths,
disarms or closed requests spreads its writes over the shards instead of queueing on one item
(DynamoDB cancels overlapping transactions on an item, and takes 1,000 write units a second of
a partition). A counter is the main item's number plus its shards' (each zero or below): the
main item alone over-counts by what the shards hold, which is safe for a limit. An increase
the main item refuses is therefore looked at again (``over_quota``): if the true sum is under
the limit, the shards are folded into the main item, in one transaction, and the increase tried
again. A quota refuses exactly at its limit, and the shards are written to on the death path
and read only when a limit is met.
"""

from __future__ import annotations

import contextlib
import zlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vigil.kit.uow import ConditionFailed, Count, Write
from vigil.quotas.records import Counter

if TYPE_CHECKING:
    from vigil.kit.idempotency import IdempotencyRecord

QUOTA_SHARDS = 32
QUOTAS = "QUOTAS"


def quota_pk(namespace: str) -> str:
    """The partition of the main item: the namespace's."""
    return f"NS#{namespace}"


def shard_pk(namespace: str, shard: int) -> str:
    return f"NS#{namespace}#QUOTAS#{shard}"


def quota_count(
    namespace: str, counter: Counter, delta: int, limit: int | None = None, key: str = ""
) -> Count:
    """``delta`` added to the namespace's ``counter``: an increase to the main item, holding
    only within ``limit``; a decrease to the shard that ``key`` (what is counted out: a scope,
    a request) hashes to."""
    if delta < 0:
        shard = zlib.crc32(key.encode()) % QUOTA_SHARDS
        return Count(shard_pk(namespace, shard), QUOTAS, counter, delta)
    return Count(quota_pk(namespace), QUOTAS, counter, delta, limit)


class QuotaStore(ABC):
    @abstractmethod
    def commit(self, writes: Sequence[Write], completion: IdempotencyRecord | None = None) -> None:
        """As ``Committer.commit``: every store that keeps quotas commits units of work."""

    @abstractmethod
    def counted(self, counts: tuple[Count, ...]) -> Write:
        """The write of ``counts``, committed as a unit of work commits every count."""

    @abstractmethod
    def quota_main(self, namespace: str, counter: Counter) -> int:
        """The main item's number of the namespace's ``counter`` (0 if never counted)."""

    @abstractmethod
    def quota_shards(self, namespace: str, counter: Counter) -> list[int]:
        """Each shard's number of the namespace's ``counter``, in shard order (0 where never
        counted), read together and consistently."""

    def count(
        self, namespace: str, counter: Counter, delta: int, limit: int, key: str = ""
    ) -> Write:
        """Adds ``delta`` to the namespace's ``counter`` when committed. An increase holds only
        while the main item stays at or under ``limit``; a decrease (of what ``key`` names)
        always holds."""
        return self.counted((quota_count(namespace, counter, delta, limit, key),))

    def quota_usage(self, namespace: str, counter: Counter) -> int:
        """The namespace's ``counter``: its main item's number and its shards'."""
        return self.quota_main(namespace, counter) + sum(self.quota_shards(namespace, counter))

    def over_quota(self, namespace: str, counter: Counter, limit: int) -> bool:
        """Whether ``counter`` is at ``limit`` (an increase of one would exceed it). The main
        item alone answers while it is under the limit (one read); at it, the shards are read
        too, and if their decreases leave room they are folded into the main item first, so
        that the increase it refused holds when tried again."""
        main = self.quota_main(namespace, counter)
        if main < limit:
            return False
        shards = self.quota_shards(namespace, counter)
        if main + sum(shards) >= limit:
            return True
        self.fold(namespace, counter, shards)
        return False

    def fold(self, namespace: str, counter: Counter, shards: list[int]) -> None:
        """Moves what the shards held when read (``shards``) to the main item, in one
        transaction: each shard goes up by what it held, on the condition that it still holds
        at least that much (a fold that another fold overtook fails and changes nothing), and
        the main item down by the sum. The counter's value is the same before and after."""
        counts = [
            # An increase to at most 0: the shard still holds what was read, or more.
            Count(shard_pk(namespace, shard), QUOTAS, counter, -held, 0)
            for shard, held in enumerate(shards)
            if held < 0
        ]
        counts.append(Count(quota_pk(namespace), QUOTAS, counter, sum(shards)))
        # Another fold may have moved them first: then the main item is already lower.
        with contextlib.suppress(ConditionFailed):
            self.commit([self.counted(tuple(counts))])
