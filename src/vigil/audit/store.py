"""Where the audit trail is kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.audit.records import AuditEvent
from vigil.kit.uow import Write


class AuditStore(ABC):
    @abstractmethod
    def add_audit_event(self, event: AuditEvent) -> Write:
        """Records ``event``; fails if an event is recorded at its position: nothing in the
        trail is ever overwritten."""

    @abstractmethod
    def audit_events(self, namespace: str, before: str | None, limit: int) -> list[AuditEvent]:
        """Up to ``limit`` events of ``namespace``, newest first, beginning after the position
        ``before`` (in that order)."""
