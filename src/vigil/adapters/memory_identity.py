"""Namespaces, principals and idempotency records in memory."""

from __future__ import annotations

from datetime import datetime

from vigil.adapters.memory_base import MemoryBase, idem_key
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.identity import Kind, Namespace, Principal
from vigil.ports.identity import IdentityPort
from vigil.store import ConditionFailed


class MemoryIdentity(MemoryBase, IdentityPort):
    def __init__(self) -> None:
        self.namespaces: dict[str, Namespace] = {}
        self.principals: dict[tuple[str, str], Principal] = {}
        super().__init__()

    def create_namespace(self, namespace: Namespace) -> None:
        with self._lock:
            if namespace.name in self.namespaces:
                raise ConditionFailed(namespace.name)
            self.namespaces[namespace.name] = namespace.model_copy()

    def get_namespace(self, name: str) -> Namespace | None:
        with self._lock:
            found = self.namespaces.get(name)
            return found.model_copy() if found else None

    def get_principal(self, namespace: str, principal_id: str) -> Principal | None:
        with self._lock:
            found = self.principals.get((namespace, principal_id))
            return found.model_copy() if found else None

    def create_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        with self._lock:
            key = (principal.namespace, principal.id)
            if key in self.principals:
                raise ConditionFailed(principal.id)
            self._check_completion(completes)
            self.principals[key] = principal.model_copy()
            self._apply_completion(completes)

    def update_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        with self._lock:
            key = (principal.namespace, principal.id)
            current = self.principals.get(key)
            if current is None or current.version != principal.version - 1:
                raise ConditionFailed(principal.id)
            self._check_completion(completes)
            self.principals[key] = principal.model_copy()
            self._apply_completion(completes)

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

    def complete_idempotency(self, record: IdempotencyRecord) -> None:
        with self._lock:
            self._check_completion(record)
            self._apply_completion(record)

    def release_idempotency(self, record: IdempotencyRecord) -> None:
        with self._lock:
            current = self.idempotency.get(idem_key(record))
            if (
                current is not None
                and current.status == "pending"
                and current.token == record.token
            ):
                del self.idempotency[idem_key(record)]
