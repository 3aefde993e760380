"""Where progress reports are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.kit.uow import Write
from vigil.progress.records import ProgressReport


class ProgressStore(ABC):
    @abstractmethod
    def save_progress(self, report: ProgressReport, for_scope: bool) -> Write:
        """Stores ``report`` as its reporter's latest and, if ``for_scope`` (it names a scope
        whose holder made it), as the scope's latest. Fails, storing nothing, if either place
        holds a report made later."""

    @abstractmethod
    def latest_progress(self, namespace: str, principal_id: str) -> ProgressReport | None:
        """The latest report made by ``principal_id``, whatever its scope."""

    @abstractmethod
    def scope_progress(self, namespace: str, scope: str) -> ProgressReport | None:
        """The latest report made for ``scope``, by whoever made it."""
