"""In-memory fakes of the store, with the same conditional semantics as the DynamoDB adapters.
State shared by every family lives here: the lock and the idempotency records."""

from __future__ import annotations

import threading

from vigil.domain.idempotency import IdempotencyRecord
from vigil.store import ConditionFailed

IdemKey = tuple[str, str, str, str]


def idem_key(record: IdempotencyRecord) -> IdemKey:
    return (record.namespace, record.principal_id, record.tool, record.key)


class MemoryBase:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.idempotency: dict[IdemKey, IdempotencyRecord] = {}
        super().__init__()

    def _check_completion(self, completes: IdempotencyRecord | None) -> None:
        if completes is None:
            return
        current = self.idempotency.get(idem_key(completes))
        if current is None or current.status != "pending" or current.token != completes.token:
            raise ConditionFailed("idempotency claim lost")

    def _apply_completion(self, completes: IdempotencyRecord | None) -> None:
        if completes is not None:
            self.idempotency[idem_key(completes)] = completes.model_copy(deep=True)
