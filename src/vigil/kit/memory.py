"""In-memory fakes of the store, with the same conditional semantics as the DynamoDB adapters:
the lock, the idempotency records and the unit of work's commit that every capability shares."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from vigil.kit.idempotency import IdempotencyRecord, IdempotencyStore
from vigil.kit.limits import MAX_TRANSACTION_ITEMS, item_bytes, require_transaction
from vigil.kit.uow import Committer, ConditionFailed, Count, Tally, Write, tallies

IdemKey = tuple[str, str, str, str]
K = TypeVar("K")


def idem_key(record: IdempotencyRecord) -> IdemKey:
    return (record.namespace, record.principal_id, record.tool, record.key)


@dataclass(frozen=True)
class MemoryWrite(Write):
    """A conditional change: ``check`` raises ConditionFailed unless it may be applied, and
    ``apply`` makes it. A commit checks every write before it applies any, under the lock.

    ``sizes`` are the bytes of the DynamoDB items the change stands for, one per item, so that
    the fake refuses what DynamoDB would; ``ahead`` those of the items that, like
    ``DynamoWrite.ahead``, may go in transactions of their own."""

    check: Callable[[], None]
    apply: Callable[[], None]
    sizes: tuple[int, ...]
    ahead: tuple[int, ...] = ()
    counts: tuple[Count, ...] = ()


class MemoryBase(Committer, IdempotencyStore):
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.idempotency: dict[IdemKey, IdempotencyRecord] = {}
        self.counters: dict[tuple[str, str, str], int] = {}
        super().__init__()

    def commit(self, writes: Sequence[Write], completion: IdempotencyRecord | None = None) -> None:
        steps = list(writes)
        if completion is not None:
            steps.append(self._completion(completion))
        assert all(isinstance(step, MemoryWrite) for step in steps), "staged for another backend"
        counts = [c for step in steps if isinstance(step, MemoryWrite) for c in step.counts]
        steps += [self._tally(changes) for changes in tallies(counts).values()]
        _require_fits([step for step in steps if isinstance(step, MemoryWrite)])
        with self._lock:
            for step in steps:
                assert isinstance(step, MemoryWrite)
                step.check()
            for step in steps:
                assert isinstance(step, MemoryWrite)
                step.apply()

    def _tally(self, changes: list[Tally]) -> MemoryWrite:
        """As on DynamoDB: one item's counters, each increase conditional on its limit."""

        def check() -> None:
            for change in changes:
                stored = self.counters.get((change.pk, change.sk, change.name), 0)
                limit = change.limit
                if change.delta > 0 and limit is not None and stored + change.delta > limit:
                    raise ConditionFailed(f"{change.name} at its limit")

        def apply() -> None:
            for change in changes:
                key = (change.pk, change.sk, change.name)
                self.counters[key] = self.counters.get(key, 0) + change.delta

        return MemoryWrite(check, apply, (item_bytes((changes[0].pk, changes[0].sk)),))

    def counter(self, pk: str, sk: str, name: str) -> int:
        """A counter as stored (0 if never counted)."""
        with self._lock:
            return self.counters.get((pk, sk, name), 0)

    @staticmethod
    def _versioned(
        table: dict[K, Any], key: K, record: Any, expected: int | None, deep: bool = False
    ) -> MemoryWrite:
        """Stores a copy of ``record`` at ``key`` if the stored version is ``expected``
        (None: nothing stored yet); ``deep`` for a record that holds containers."""

        def check() -> None:
            current = table.get(key)
            if (None if current is None else current.version) != expected:
                raise ConditionFailed(str(key))

        def apply() -> None:
            table[key] = record.model_copy(deep=deep)

        return MemoryWrite(check, apply, (item_bytes(key, record),))

    def _completion(self, record: IdempotencyRecord) -> MemoryWrite:
        def check() -> None:
            current = self.idempotency.get(idem_key(record))
            if current is None or current.status != "pending" or current.token != record.token:
                raise ConditionFailed("idempotency claim lost")

        def apply() -> None:
            self.idempotency[idem_key(record)] = record.model_copy(deep=True)

        return MemoryWrite(check, apply, (item_bytes(idem_key(record), record),))

    def claim_idempotency(
        self, record: IdempotencyRecord, now: datetime
    ) -> IdempotencyRecord | None:
        with self._lock:
            key = idem_key(record)
            current = self.idempotency.get(key)
            live = current is not None and current.expires_at > now
            if (
                live
                and current is not None
                and not (current.status == "pending" and current.locked_until <= now)
            ):
                return current.model_copy(deep=True)
            self.idempotency[key] = record.model_copy(deep=True)
            return None

    def read_idempotency(
        self, namespace: str, principal_id: str, tool: str, key: str
    ) -> IdempotencyRecord | None:
        with self._lock:
            found = self.idempotency.get((namespace, principal_id, tool, key))
            return found.model_copy(deep=True) if found else None

    def release_idempotency(self, record: IdempotencyRecord) -> None:
        with self._lock:
            current = self.idempotency.get(idem_key(record))
            if (
                current is not None
                and current.status == "pending"
                and current.token == record.token
            ):
                del self.idempotency[idem_key(record)]


def _require_fits(steps: list[MemoryWrite]) -> None:
    """DynamoDB's limits, as ``DynamoBase.commit`` meets them: writes marked ``ahead`` go in
    transactions of their own when the whole does not fit one."""
    ahead = [size for step in steps for size in step.ahead]
    rest = [size for step in steps for size in step.sizes]
    if len(ahead) + len(rest) <= MAX_TRANSACTION_ITEMS:
        rest, ahead = ahead + rest, []
    for start in range(0, len(ahead), MAX_TRANSACTION_ITEMS):
        require_transaction(ahead[start : start + MAX_TRANSACTION_ITEMS])
    require_transaction(rest)
