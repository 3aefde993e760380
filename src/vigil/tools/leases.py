"""Leases: exclusive, expiring claims on a named resource, fenced by a generation.

Every change reads the lease, decides, and writes conditionally on the version it read; a
lost race reads again, a few times at most. The generation grows with every grant, never with
a renewal, so whoever acts on a resource can present it and be refused once it is stale.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import Field

from vigil.clock import Clock, iso
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.leases import Lease, LeaseState
from vigil.errors import ErrorCode, VigilError, conflict
from vigil.store import ConditionFailed, Store
from vigil.tools.common import Context, IdempotencyKey, Output, Scope, StrictInput

# Each attempt lost to a concurrent change of the same lease; more would only queue callers
# behind a lease that is plainly contended.
_ATTEMPTS = 3

Resource = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="What the lease is on, 1-200 printable characters, e.g. repo:main/deploy.",
    ),
]
Generation = Annotated[
    int,
    Field(ge=1, description="The generation acquire_lease returned: the lease's fencing token."),
]
TtlSeconds = Annotated[
    int,
    Field(ge=1, le=86400, description="How long the lease lasts from now, 1 to 86,400 seconds."),
]


class LeaseView(Output):
    resource: str
    scope: str | None
    holder: str = Field(description="Principal id of the holder.")
    holder_label: str | None = Field(description="The agent_id given when it was acquired.")
    generation: int = Field(description="Fencing token: grows with every grant.")
    state: LeaseState = Field(
        description="held or released; a held lease whose expires_at has passed may be taken."
    )
    acquired_at: datetime
    expires_at: datetime
    released_at: datetime | None
    released_by: str | None = Field(
        description='"holder", or "expiry:<scope>" when a dead-man switch released it.'
    )

    @classmethod
    def of(cls, lease: Lease) -> LeaseView:
        return cls(
            resource=lease.resource,
            scope=lease.scope,
            holder=lease.holder,
            holder_label=lease.holder_label,
            generation=lease.generation,
            state=lease.state,
            acquired_at=lease.acquired_at,
            expires_at=lease.expires_at,
            released_at=lease.released_at,
            released_by=lease.released_by,
        )


class LeaseResult(Output):
    lease: LeaseView


def _stale(current: Lease | None, now: datetime) -> VigilError:
    live = current is not None and current.live(now)
    return VigilError(
        ErrorCode.STALE_GENERATION,
        "the caller does not hold this generation of the lease"
        + ("" if live else "; nobody holds the lease now"),
        current_generation=current.generation if current is not None and live else None,
    )


def _contended() -> VigilError:
    return conflict("the lease kept changing while this call ran; read it and retry")


# -- acquire ------------------------------------------------------------------------------
class AcquireInput(StrictInput):
    resource: Resource
    scope: Scope | None = Field(
        default=None,
        description=(
            "Ties the lease to a dead-man switch's scope. Without one, no switch can release "
            "it if the holder dies: it only lapses at expires_at."
        ),
    )
    ttl_seconds: TtlSeconds = 60
    agent_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="A label for the instance taking the lease, e.g. worker-3; up to 64 chars.",
    )
    idempotency_key: IdempotencyKey | None = None


def _granted(current: Lease | None, ctx: Context, args: AcquireInput, now: datetime) -> Lease:
    expires_at = now + timedelta(seconds=args.ttl_seconds)
    caller = ctx.caller.principal_id
    if current is not None and current.live(now):
        if current.holder != caller:
            raise conflict(
                f"the resource is leased to another holder until {iso(current.expires_at)}",
                held_until=iso(current.expires_at),
                generation=current.generation,
            )
        # The holder acquiring again keeps its fencing token: nothing it did is superseded.
        return current.model_copy(
            update={
                "scope": args.scope,
                "holder_label": args.agent_id,
                "expires_at": expires_at,
                "version": current.version + 1,
            }
        )
    return Lease(
        namespace=ctx.caller.namespace,
        resource=args.resource,
        scope=args.scope,
        holder=caller,
        holder_label=args.agent_id,
        generation=1 if current is None else current.generation + 1,
        state="held",
        acquired_at=now,
        expires_at=expires_at,
        version=1 if current is None else current.version + 1,
    )


def acquire_lease(ctx: Context, args: AcquireInput) -> LeaseResult:
    now = ctx.clock.now()
    for _ in range(_ATTEMPTS):
        current = ctx.store.get_lease(ctx.caller.namespace, args.resource)
        granted = _granted(current, ctx, args, now)
        result = LeaseResult(lease=LeaseView.of(granted))
        try:
            ctx.store.put_lease(
                granted, current.version if current else None, completes=ctx.completion(result)
            )
        except ConditionFailed:
            continue
        return result
    raise _contended()


# -- renew --------------------------------------------------------------------------------
class RenewInput(StrictInput):
    resource: Resource
    generation: Generation
    ttl_seconds: TtlSeconds = 60
    idempotency_key: IdempotencyKey | None = None


def renew_lease(ctx: Context, args: RenewInput) -> LeaseResult:
    now = ctx.clock.now()
    for _ in range(_ATTEMPTS):
        current = ctx.store.get_lease(ctx.caller.namespace, args.resource)
        if (
            current is None
            or not current.live(now)
            or current.holder != ctx.caller.principal_id
            or current.generation != args.generation
        ):
            raise _stale(current, now)
        renewed = current.model_copy(
            update={
                "expires_at": now + timedelta(seconds=args.ttl_seconds),
                "version": current.version + 1,
            }
        )
        result = LeaseResult(lease=LeaseView.of(renewed))
        try:
            ctx.store.put_lease(renewed, current.version, completes=ctx.completion(result))
        except ConditionFailed:
            continue
        return result
    raise _contended()


# -- release ------------------------------------------------------------------------------
class ReleaseInput(StrictInput):
    resource: Resource
    generation: Generation
    idempotency_key: IdempotencyKey | None = None


def release(
    store: Store,
    clock: Clock,
    namespace: str,
    resource: str,
    generation: int,
    holder: str,
    released_by: str,
    completes: Callable[[Lease], IdempotencyRecord | None] | None = None,
) -> Lease:
    """The one way a lease is released, by its holder or by a dead-man switch that fired.

    ``holder`` must hold ``generation``; a lease past its expiry is still theirs to release
    until someone else is granted it. Releasing again returns the released lease and writes
    nothing. ``completes`` builds the idempotency completion from the outcome: it is written
    with the release, or alone when there was nothing left to release.
    """
    now = clock.now()
    for _ in range(_ATTEMPTS):
        current = store.get_lease(namespace, resource)
        if current is None or current.holder != holder or current.generation != generation:
            raise _stale(current, now)
        if current.state == "released":
            completion = completes(current) if completes else None
            if completion is not None:
                store.complete_idempotency(completion)
            return current
        released = current.model_copy(
            update={
                "state": "released",
                "released_at": now,
                "released_by": released_by,
                "version": current.version + 1,
            }
        )
        try:
            store.put_lease(
                released, current.version, completes=completes(released) if completes else None
            )
        except ConditionFailed:
            continue
        return released
    raise _contended()


def release_lease(ctx: Context, args: ReleaseInput) -> LeaseResult:
    released = release(
        ctx.store,
        ctx.clock,
        ctx.caller.namespace,
        args.resource,
        args.generation,
        ctx.caller.principal_id,
        released_by="holder",
        completes=lambda lease: ctx.completion(LeaseResult(lease=LeaseView.of(lease))),
    )
    return LeaseResult(lease=LeaseView.of(released))
