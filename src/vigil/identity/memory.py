"""Namespaces and principals in memory."""

from __future__ import annotations

from vigil.identity.records import Namespace, Principal
from vigil.identity.store import IdentityStore
from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.principals import Kind
from vigil.kit.uow import ConditionFailed


class MemoryIdentity(MemoryBase, IdentityStore):
    def __init__(self) -> None:
        self.namespaces: dict[str, Namespace] = {}
        self.principals: dict[tuple[str, str], Principal] = {}
        super().__init__()

    def add_namespace(self, namespace: Namespace) -> MemoryWrite:
        def check() -> None:
            if namespace.name in self.namespaces:
                raise ConditionFailed(namespace.name)

        def apply() -> None:
            self.namespaces[namespace.name] = namespace.model_copy()

        return MemoryWrite(check, apply, (item_bytes(namespace.name, namespace),))

    def get_namespace(self, name: str) -> Namespace | None:
        with self._lock:
            found = self.namespaces.get(name)
            return found.model_copy() if found else None

    def get_principal(self, namespace: str, principal_id: str) -> Principal | None:
        with self._lock:
            found = self.principals.get((namespace, principal_id))
            return found.model_copy() if found else None

    def get_principals(self, namespace: str, principal_ids: list[str]) -> list[Principal]:
        with self._lock:
            found = (self.principals.get((namespace, i)) for i in set(principal_ids))
            return [p.model_copy() for p in found if p is not None]

    def add_principal(self, principal: Principal) -> MemoryWrite:
        key = (principal.namespace, principal.id)
        return self._versioned(self.principals, key, principal, None)

    def save_principal(self, principal: Principal) -> MemoryWrite:
        key = (principal.namespace, principal.id)
        return self._versioned(self.principals, key, principal, principal.version - 1)

    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        with self._lock:
            found = sorted(
                (p for (ns, _), p in self.principals.items() if ns == namespace and p.kind == kind),
                key=lambda p: p.id,
            )
        if start_after is not None:
            found = [p for p in found if p.id > start_after]
        return [p.model_copy() for p in found[:limit]]
