"""Runs in memory."""

from __future__ import annotations

from vigil.adapters.memory_base import MemoryBase
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.runs import Run
from vigil.ports.runs import RunPort
from vigil.store import ConditionFailed


class MemoryRuns(MemoryBase, RunPort):
    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], Run] = {}
        super().__init__()

    def get_run(self, namespace: str, run_id: str) -> Run | None:
        with self._lock:
            found = self.runs.get((namespace, run_id))
            return found.model_copy(deep=True) if found else None

    def put_run(
        self, run: Run, expected_version: int | None, completes: IdempotencyRecord | None = None
    ) -> None:
        with self._lock:
            key = (run.namespace, run.run_id)
            current = self.runs.get(key)
            if (None if current is None else current.version) != expected_version:
                raise ConditionFailed(run.run_id)
            self._check_completion(completes)
            self.runs[key] = run.model_copy(deep=True)
            self._apply_completion(completes)
