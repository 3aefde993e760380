"""Leases in memory."""

from __future__ import annotations

from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.leases.records import Lease
from vigil.leases.store import LeaseStore


class MemoryLeases(MemoryBase, LeaseStore):
    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], Lease] = {}
        super().__init__()

    def get_lease(self, namespace: str, resource: str) -> Lease | None:
        with self._lock:
            found = self.leases.get((namespace, resource))
            return found.model_copy() if found else None

    def save_lease(self, lease: Lease, expected_version: int | None) -> MemoryWrite:
        key = (lease.namespace, lease.resource)
        return self._versioned(self.leases, key, lease, expected_version)

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
