"""Releasing a lease: the one way it happens, by its holder or by a dead-man switch that fired."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel

from vigil.kit.retry import retry_on_conflict
from vigil.kit.uow import UnitOfWork
from vigil.leases.records import Lease, stale_lease
from vigil.leases.store import LeaseStore


def release(
    store: LeaseStore,
    uow: UnitOfWork,
    namespace: str,
    resource: str,
    generation: int,
    holder: str,
    released_by: str,
    now: datetime,
    present: Callable[[Lease], BaseModel] | None = None,
) -> Lease:
    """Releases ``resource`` held by ``holder`` at ``generation``.

    A lease past its expiry is still the holder's to release until someone else is granted
    it. Releasing again returns the released lease and writes nothing. ``present`` gives the
    call's result for a lease, committed with the release as the call's idempotent outcome.
    """

    def attempt() -> Lease:
        current = store.get_lease(namespace, resource)
        if current is None or not current.held_by(holder, generation):
            raise stale_lease(current, now)
        if current.state == "released":
            return current
        released = current.released(released_by, now)
        uow.commit(
            store.save_lease(released, current.version),
            result=present(released) if present else None,
        )
        return released

    return retry_on_conflict(attempt, "the lease")
