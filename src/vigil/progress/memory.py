"""Progress reports in memory."""

from __future__ import annotations

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed
from vigil.progress.records import ProgressReport
from vigil.progress.store import ProgressStore


class MemoryProgress(MemoryBase, ProgressStore):
    def __init__(self) -> None:
        self.progress_by_principal: dict[tuple[str, str], ProgressReport] = {}
        self.progress_by_scope: dict[tuple[str, str], ProgressReport] = {}
        super().__init__()

    def save_progress(self, report: ProgressReport, for_scope: bool) -> MemoryWrite:
        places = [(self.progress_by_principal, (report.namespace, report.reported_by))]
        if for_scope and report.scope is not None:
            places.append((self.progress_by_scope, (report.namespace, report.scope)))

        def check() -> None:
            for reports, key in places:
                stored = reports.get(key)
                if stored is not None and stored.reported_at > report.reported_at:
                    raise ConditionFailed("a later report is recorded")

        def apply() -> None:
            for reports, key in places:
                reports[key] = report.model_copy(deep=True)

        return MemoryWrite(check, apply, tuple(item_bytes(key, report) for _, key in places))

    def latest_progress(self, namespace: str, principal_id: str) -> ProgressReport | None:
        with self._lock:
            found = self.progress_by_principal.get((namespace, principal_id))
            return found.model_copy(deep=True) if found else None

    def scope_progress(self, namespace: str, scope: str) -> ProgressReport | None:
        with self._lock:
            found = self.progress_by_scope.get((namespace, scope))
            return found.model_copy(deep=True) if found else None
