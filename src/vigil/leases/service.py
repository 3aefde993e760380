"""Lease use cases: acquiring, renewing and releasing. A dead-man switch that fired frees its
holder's leases with the same rule (``Lease.released``) and the same store write, a batch at a
time (vigil.switches.deaths)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from vigil.identity.records import Caller
from vigil.kit.retry import R, retry_on_conflict, update_versioned
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.leases.records import Lease, granted, stale_lease
from vigil.leases.store import LeaseStore
from vigil.quotas.records import Quotas


@dataclass(frozen=True)
class AcquireLease:
    """A lease on ``resource`` for ``ttl_seconds``, tied to ``scope`` if one is given, taken by
    the instance ``label`` names (if it names one)."""

    resource: str
    scope: str | None
    label: str | None
    ttl_seconds: int


@dataclass(frozen=True)
class ReleaseLease:
    """The release of ``resource`` held by ``holder`` at ``generation``, in ``namespace``, on
    behalf of ``released_by`` (the holder itself, or the switch of a scope that fired)."""

    namespace: str
    resource: str
    generation: int
    holder: str
    released_by: str


def acquire(
    caller: Caller,
    command: AcquireLease,
    now: datetime,
    *,
    store: LeaseStore,
    uow: UnitOfWork,
    quotas: Quotas,
    present: Callable[[Lease], R],
) -> R:
    """Grants the resource to the caller. A lease that joins a scope holds only while the
    scope has fewer than its quota of held leases, counted in the same transaction."""
    namespace, holder = caller.namespace, caller.principal_id
    resource, scope = command.resource, command.scope
    limit = quotas.leases_per_scope

    def attempt() -> R:
        current = store.get_lease(namespace, resource)
        lease = granted(
            current, namespace, resource, scope, holder, command.label, command.ttl_seconds, now
        )
        result = present(lease)
        version = current.version if current is not None else None
        try:
            uow.commit(store.save_lease(lease, version, scope_limit=limit), result=result)
        except ConditionFailed:
            joins = current is None or current.state != "held" or current.scope != scope
            if scope is not None and joins and store.scope_held(namespace, scope) >= limit:
                raise quotas.exceeded("leases_per_scope") from None
            raise
        return result

    return retry_on_conflict(attempt, "the lease")


def renew(
    caller: Caller,
    resource: str,
    generation: int,
    ttl_seconds: int,
    now: datetime,
    *,
    store: LeaseStore,
    uow: UnitOfWork,
    present: Callable[[Lease], R],
) -> R:
    def renewed(current: Lease | None) -> Lease:
        if current is None:
            raise stale_lease(None, now)
        return current.renewed(caller.principal_id, generation, ttl_seconds, now)

    return update_versioned(
        uow,
        read=lambda: store.get_lease(caller.namespace, resource),
        change=renewed,
        save=store.save_lease,
        present=present,
        what="the lease",
    )


def release(
    command: ReleaseLease,
    now: datetime,
    *,
    store: LeaseStore,
    uow: UnitOfWork,
    present: Callable[[Lease], BaseModel] | None = None,
) -> Lease:
    """Releases the resource held by the holder at the generation the command names.

    A lease past its expiry is still the holder's to release until someone else is granted
    it. Releasing again returns the released lease and writes nothing. ``present`` gives the
    call's result for a lease, committed with the release as the call's idempotent outcome.
    """

    def attempt() -> Lease:
        current = store.get_lease(command.namespace, command.resource)
        if current is None or not current.held_by(command.holder, command.generation):
            raise stale_lease(current, now)
        if current.state == "released":
            return current
        released = current.released(command.released_by, now)
        uow.commit(
            store.save_lease(released, current.version),
            result=present(released) if present else None,
        )
        return released

    return retry_on_conflict(attempt, "the lease")
