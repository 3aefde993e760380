"""Where runs are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.kit.uow import Write
from vigil.runs.records import Run


class RunStore(ABC):
    @abstractmethod
    def get_run(self, namespace: str, run_id: str) -> Run | None: ...

    @abstractmethod
    def save_run(self, run: Run, expected_version: int | None) -> Write:
        """Stores ``run`` if the stored version is ``expected_version`` (None: no run with its
        id yet)."""
