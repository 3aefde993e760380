"""Runs: a unit of work held by one worker at a time under an expiring lease, fenced by a
generation that grows each time the run is claimed after its lease lapsed."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from vigil.domain import Record
from vigil.domain.progress import JsonBounds

RunState = Literal["running", "lapsed", "finished"]
Outcome = Literal["succeeded", "failed", "cancelled"]

MIN_LEASE_SECONDS = 5
MAX_LEASE_SECONDS = 300
DEFAULT_LEASE_SECONDS = 60
# A result is a summary of the outcome, not its payload: the payload belongs elsewhere.
RESULT_BOUNDS = JsonBounds(max_bytes=16 * 1024, max_depth=4, max_keys=50, max_string=16 * 1024)


class Run(Record):
    namespace: str
    run_id: str  # a UUID in its canonical text form
    holder: str  # principal id of whoever holds (or last held) the lease
    generation: int  # grows with every claim after a lapse: the fencing token
    expires_at: datetime  # the lease's end; when finished, the moment it finished
    started_at: datetime
    finished_at: datetime | None = None
    outcome: Outcome | None = None
    result: dict[str, Any] | None = None
    version: int  # grows with every change, renewals included

    def state(self, now: datetime) -> RunState:
        if self.finished_at is not None:
            return "finished"
        return "running" if self.expires_at > now else "lapsed"
