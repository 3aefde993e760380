"""Leases in memory."""

from __future__ import annotations

from vigil.adapters.memory_base import MemoryBase
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.leases import Lease
from vigil.ports.leases import LeasePort
from vigil.store import ConditionFailed


class MemoryLeases(MemoryBase, LeasePort):
    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], Lease] = {}
        super().__init__()

    def get_lease(self, namespace: str, resource: str) -> Lease | None:
        with self._lock:
            found = self.leases.get((namespace, resource))
            return found.model_copy() if found else None

    def put_lease(
        self, lease: Lease, expected_version: int | None, completes: IdempotencyRecord | None = None
    ) -> None:
        with self._lock:
            key = (lease.namespace, lease.resource)
            current = self.leases.get(key)
            if (None if current is None else current.version) != expected_version:
                raise ConditionFailed(lease.resource)
            self._check_completion(completes)
            self.leases[key] = lease.model_copy()
            self._apply_completion(completes)

    def scope_leases(self, namespace: str, scope: str) -> list[Lease]:
        with self._lock:
            return [
                lease.model_copy()
                for (ns, _), lease in sorted(self.leases.items())
                if ns == namespace and lease.state == "held" and lease.scope == scope
            ]

    def unscoped_leases_held_by(self, namespace: str, holder: str) -> int:
        with self._lock:
            return sum(
                1
                for (ns, _), lease in self.leases.items()
                if ns == namespace
                and lease.state == "held"
                and lease.scope is None
                and lease.holder == holder
            )
