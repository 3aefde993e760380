"""Leases: exclusive, expiring claims on a named resource, fenced by a generation."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from vigil.domain import Record

LeaseState = Literal["held", "released"]


class Lease(Record):
    namespace: str
    resource: str
    scope: str | None
    holder: str  # principal id
    holder_label: str | None  # e.g. the agent_id of the instance that took it
    generation: int  # grows with every grant: the fencing token
    state: LeaseState
    acquired_at: datetime
    expires_at: datetime
    released_at: datetime | None = None
    released_by: str | None = None  # "holder", or "expiry:<scope>" when a dead-man switch fired
    version: int  # grows with every change, renewals included

    def live(self, now: datetime) -> bool:
        return self.state == "held" and self.expires_at > now
