"""Leases in memory."""

from __future__ import annotations

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.leases.records import Lease
from vigil.leases.store import LeaseStore, scope_counts


class MemoryLeases(MemoryBase, LeaseStore):
    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], Lease] = {}
        super().__init__()

    def get_lease(self, namespace: str, resource: str) -> Lease | None:
        with self._lock:
            found = self.leases.get((namespace, resource))
            return found.model_copy() if found else None

    def save_lease(
        self, lease: Lease, expected_version: int | None, scope_limit: int | None = None
    ) -> MemoryWrite:
        key = (lease.namespace, lease.resource)
        write = self._versioned(self.leases, key, lease, expected_version)
        # As on DynamoDB: the lease, its copy in its scope's partition while it is held, and
        # the removal of the copy under the scope it leaves.
        stored = self.leases.get(key)
        before = stored.scope if stored is not None and stored.state == "held" else None
        after = lease.scope if lease.state == "held" else None
        sizes = write.sizes * (2 if after is not None else 1)
        if before is not None and before != after:
            sizes += (item_bytes((lease.namespace, before, lease.resource)),)
        counts = scope_counts(lease.namespace, before, after, scope_limit)
        return MemoryWrite(write.check, write.apply, sizes, counts=counts)

    def scope_held(self, namespace: str, scope: str) -> int:
        return self.counter(f"NS#{namespace}#SCOPE#{scope}", "COUNT", "held")

    def scope_leases(
        self, namespace: str, scope: str, after: str | None = None, limit: int | None = None
    ) -> list[Lease]:
        with self._lock:
            found = [
                lease.model_copy()
                for (ns, resource), lease in sorted(self.leases.items())
                if ns == namespace
                and lease.state == "held"
                and lease.scope == scope
                and (after is None or resource > after)
            ]
        return found[:limit]

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
