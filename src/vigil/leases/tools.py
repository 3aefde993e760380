"""Lease tools: ``acquire_lease``, ``renew_lease``, ``release_lease``.

The use cases are vigil.leases.service; the rules, vigil.leases.records.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Protocol

from pydantic import Field

from vigil.identity.calls import Call
from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.tooling import AgentLabel, IdempotencyKey, Output, Scope, StrictInput, Tool
from vigil.leases import service
from vigil.leases.records import Lease, LeaseState
from vigil.leases.store import LeaseStore
from vigil.quotas.records import Quotas


class LeaseContext(Call[LeaseStore], Protocol):
    """What the lease tools read of a call."""

    @property
    def quotas(self) -> Quotas: ...


Resource = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=PRINTABLE,
        description="What the lease is on, e.g. repo:main/deploy.",
    ),
    normalised(200),
]
Generation = Annotated[
    int,
    Field(ge=1, description="The fencing token acquire_lease returned."),
]
TtlSeconds = Annotated[
    int,
    Field(ge=1, le=86400, description="The lease's length from now, in seconds."),
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


def _present(lease: Lease) -> LeaseResult:
    return LeaseResult(lease=LeaseView.of(lease))


# -- acquire ------------------------------------------------------------------------------
class AcquireInput(StrictInput):
    resource: Resource
    scope: Scope | None = Field(
        default=None,
        description="A switch's scope whose death releases it.",
    )
    ttl_seconds: TtlSeconds = 60
    agent_id: AgentLabel | None = Field(
        default=None,
        description="A label for your instance, e.g. worker-3.",
    )
    idempotency_key: IdempotencyKey | None = None


def acquire_lease(ctx: LeaseContext, args: AcquireInput) -> LeaseResult:
    return service.acquire(
        ctx.caller,
        service.AcquireLease(args.resource, args.scope, args.agent_id, args.ttl_seconds),
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        quotas=ctx.quotas,
        present=_present,
    )


# -- renew --------------------------------------------------------------------------------
class RenewInput(StrictInput):
    resource: Resource
    generation: Generation
    ttl_seconds: TtlSeconds = 60
    idempotency_key: IdempotencyKey | None = None


def renew_lease(ctx: LeaseContext, args: RenewInput) -> LeaseResult:
    return service.renew(
        ctx.caller,
        args.resource,
        args.generation,
        args.ttl_seconds,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        present=_present,
    )


# -- release ------------------------------------------------------------------------------
class ReleaseInput(StrictInput):
    resource: Resource
    generation: Generation
    idempotency_key: IdempotencyKey | None = None


def release_lease(ctx: LeaseContext, args: ReleaseInput) -> LeaseResult:
    command = service.ReleaseLease(
        ctx.caller.namespace, args.resource, args.generation, ctx.caller.principal_id, "holder"
    )
    released = service.release(
        command,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        present=_present,
    )
    return _present(released)


TOOLS: tuple[Tool[LeaseContext], ...] = (
    Tool(
        name="acquire_lease",
        title="Acquire a lease",
        description=(
            "Take an exclusive lease on a resource for ttl_seconds; its generation is the "
            "fencing token for every action on it. Held by another: version_conflict with "
            "held_until. With a scope, your dead-man switch's death releases it."
        ),
        input_model=AcquireInput,
        output_model=LeaseResult,
        run=acquire_lease,
    ),
    Tool(
        name="renew_lease",
        title="Renew a lease",
        description=(
            "Extend a lease you hold to ttl_seconds from now, same generation. "
            "stale_generation: you lost it; stop what you did under it."
        ),
        input_model=RenewInput,
        output_model=LeaseResult,
        run=renew_lease,
    ),
    Tool(
        name="release_lease",
        title="Release a lease",
        description="Give up a lease you hold at that generation; others may take it at once.",
        input_model=ReleaseInput,
        output_model=LeaseResult,
        run=release_lease,
    ),
)
