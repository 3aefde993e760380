"""Runs."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.runs import Run


class RunPort(ABC):
    @abstractmethod
    def get_run(self, namespace: str, run_id: str) -> Run | None: ...

    @abstractmethod
    def put_run(
        self, run: Run, expected_version: int | None, completes: IdempotencyRecord | None = None
    ) -> None:
        """Stores ``run`` if the stored version is ``expected_version`` (None: no run with its
        id yet), together with ``completes`` in one atomic step. Raises ConditionFailed
        otherwise."""
