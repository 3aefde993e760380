"""The audit trail in memory."""

from __future__ import annotations

from vigil.audit.records import AuditEvent
from vigil.audit.store import AuditStore
from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed


class MemoryAudit(MemoryBase, AuditStore):
    def __init__(self) -> None:
        self.audit: dict[tuple[str, str], AuditEvent] = {}
        super().__init__()

    def add_audit_event(self, event: AuditEvent) -> MemoryWrite:
        key = (event.namespace, event.position)

        def check() -> None:
            if key in self.audit:
                raise ConditionFailed(str(key))

        def apply() -> None:
            self.audit[key] = event.model_copy()

        return MemoryWrite(check, apply, (item_bytes(key, event),))

    def audit_events(self, namespace: str, before: str | None, limit: int) -> list[AuditEvent]:
        with self._lock:
            found = sorted((key[1], e) for key, e in self.audit.items() if key[0] == namespace)
        newest_first = [e for position, e in reversed(found) if before is None or position < before]
        return [e.model_copy() for e in newest_first[:limit]]
