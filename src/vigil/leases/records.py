"""Leases: exclusive, expiring claims on a named resource, fenced by a generation.

The generation grows with every grant, never with a renewal, so whoever acts on a resource
can present it and be refused once it is stale.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from vigil.clock import iso
from vigil.errors import ErrorCode, VigilError, conflict
from vigil.kit.records import Versioned

LeaseState = Literal["held", "released"]


class Lease(Versioned):
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

    def live(self, now: datetime) -> bool:
        return self.state == "held" and self.expires_at > now

    def held_by(self, holder: str, generation: int) -> bool:
        return self.holder == holder and self.generation == generation

    def renewed(self, holder: str, generation: int, ttl_seconds: int, now: datetime) -> Lease:
        """Only the holder of the current generation of a live lease may renew it."""
        if not (self.live(now) and self.held_by(holder, generation)):
            raise stale_lease(self, now)
        return self.changed(expires_at=now + timedelta(seconds=ttl_seconds))

    def released(self, released_by: str, now: datetime) -> Lease:
        return self.changed(state="released", released_at=now, released_by=released_by)


def granted(
    current: Lease | None,
    namespace: str,
    resource: str,
    scope: str | None,
    holder: str,
    label: str | None,
    ttl_seconds: int,
    now: datetime,
) -> Lease:
    """The lease ``holder`` gets: a new generation if nobody holds it live, the same one
    extended if ``holder`` does (nothing it did is superseded); version_conflict if another
    holder does."""
    expires_at = now + timedelta(seconds=ttl_seconds)
    if current is not None and current.live(now):
        if current.holder != holder:
            raise conflict(
                f"the resource is leased to another holder until {iso(current.expires_at)}",
                held_until=iso(current.expires_at),
                generation=current.generation,
            )
        return current.changed(scope=scope, holder_label=label, expires_at=expires_at)
    return Lease(
        namespace=namespace,
        resource=resource,
        scope=scope,
        holder=holder,
        holder_label=label,
        generation=1 if current is None else current.generation + 1,
        state="held",
        acquired_at=now,
        expires_at=expires_at,
        version=1 if current is None else current.version + 1,
    )


def stale_lease(current: Lease | None, now: datetime) -> VigilError:
    live = current is not None and current.live(now)
    return VigilError(
        ErrorCode.STALE_GENERATION,
        "the caller does not hold this generation of the lease"
        + ("" if live else "; nobody holds the lease now"),
        current_generation=current.generation if current is not None and live else None,
    )
