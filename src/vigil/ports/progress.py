"""Progress reports."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.progress import ProgressReport


class ProgressPort(ABC):
    @abstractmethod
    def record_progress(
        self, report: ProgressReport, completes: IdempotencyRecord | None = None
    ) -> None:
        """Stores ``report`` as its reporter's latest and, if it names a scope, as the scope's
        latest, together with ``completes``, in one atomic step. Raises ConditionFailed, and
        stores nothing, if either place holds a report made later than this one."""

    @abstractmethod
    def latest_progress(self, namespace: str, principal_id: str) -> ProgressReport | None:
        """The latest report made by ``principal_id``, whatever its scope."""

    @abstractmethod
    def scope_progress(self, namespace: str, scope: str) -> ProgressReport | None:
        """The latest report made for ``scope``, by whoever made it."""
