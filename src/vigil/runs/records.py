"""Runs: a unit of work held by one worker at a time under an expiring lease, fenced by a
generation that grows each time the run is claimed after its lease lapsed."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from vigil.clock import iso
from vigil.errors import ErrorCode, VigilError, conflict, invalid
from vigil.kit.bounds import JsonBounds
from vigil.kit.records import Versioned

RunState = Literal["running", "lapsed", "finished"]
Outcome = Literal["succeeded", "failed", "cancelled"]

MIN_LEASE_SECONDS = 5
MAX_LEASE_SECONDS = 300
DEFAULT_LEASE_SECONDS = 60
# A result is a summary of the outcome, not its payload: the payload belongs elsewhere.
RESULT_BOUNDS = JsonBounds(max_bytes=16 * 1024, max_depth=4, max_keys=50, max_string=16 * 1024)


class Run(Versioned):
    namespace: str
    run_id: str  # a UUID in its canonical text form
    holder: str  # principal id of whoever holds (or last held) the lease
    generation: int  # grows with every claim after a lapse: the fencing token
    expires_at: datetime  # the lease's end; when finished, the moment it finished
    started_at: datetime
    finished_at: datetime | None = None
    outcome: Outcome | None = None
    result: dict[str, Any] | None = None

    def state(self, now: datetime) -> RunState:
        if self.finished_at is not None:
            return "finished"
        return "running" if self.expires_at > now else "lapsed"

    @classmethod
    def started(cls, namespace: str, run_id: str, holder: str, seconds: int, now: datetime) -> Run:
        return cls(
            namespace=namespace,
            run_id=run_id,
            holder=holder,
            generation=1,
            expires_at=now + timedelta(seconds=seconds),
            started_at=now,
            version=1,
        )

    def claimed_by(self, holder: str, seconds: int, now: datetime) -> Run:
        """A lapsed run goes to ``holder`` at the next generation; the live holder claiming
        again keeps its fencing token, since nothing it did is superseded."""
        expires_at = now + timedelta(seconds=seconds)
        if self.finished_at is not None:
            raise invalid("the run is finished; it cannot be claimed")
        if self.state(now) == "running":
            if self.holder != holder:
                raise conflict(
                    f"the run is held by another worker until {iso(self.expires_at)}",
                    held_until=iso(self.expires_at),
                    generation=self.generation,
                )
            return self.changed(expires_at=expires_at)
        return self.changed(holder=holder, generation=self.generation + 1, expires_at=expires_at)

    def renewed(self, holder: str, seconds: int, now: datetime) -> Run:
        self._require_holder(holder, None, now)
        return self.changed(expires_at=now + timedelta(seconds=seconds))

    def finished(
        self,
        holder: str,
        generation: int,
        outcome: Outcome,
        result: dict[str, Any] | None,
        now: datetime,
    ) -> Run:
        self._require_holder(holder, generation, now)
        return self.changed(expires_at=now, finished_at=now, outcome=outcome, result=result)

    def _require_holder(self, holder: str, generation: int | None, now: datetime) -> None:
        """Refuses anyone but ``holder`` holding the current generation of a live run."""
        if self.finished_at is not None:
            raise self._stale("the run is finished; nothing more can change")
        if self.holder != holder or (generation is not None and generation != self.generation):
            raise self._stale("the caller does not hold the current generation of this run")
        if self.state(now) != "running":
            raise self._stale(
                "the caller's lease on the run lapsed; stop, and claim_run to take it again "
                "at a new generation"
            )

    def _stale(self, why: str) -> VigilError:
        return VigilError(ErrorCode.STALE_GENERATION, why, current_generation=self.generation)
