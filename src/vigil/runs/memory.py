"""Runs in memory."""

from __future__ import annotations

from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.runs.records import Run
from vigil.runs.store import RunStore


class MemoryRuns(MemoryBase, RunStore):
    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], Run] = {}
        super().__init__()

    def get_run(self, namespace: str, run_id: str) -> Run | None:
        with self._lock:
            found = self.runs.get((namespace, run_id))
            return found.model_copy(deep=True) if found else None

    def save_run(self, run: Run, expected_version: int | None) -> MemoryWrite:
        key = (run.namespace, run.run_id)
        return self._versioned(self.runs, key, run, expected_version, deep=True)
