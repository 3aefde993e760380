"""Progress use cases: recording a report, and reading a principal's latest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vigil.clock import Clock, to_ms
from vigil.errors import not_found
from vigil.identity.records import Caller
from vigil.kit.retry import R, retry_on_conflict
from vigil.kit.uow import UnitOfWork
from vigil.progress.records import PROGRESS_BOUNDS, ProgressReport
from vigil.progress.store import ProgressPorts


def report(
    caller: Caller,
    scope: str | None,
    progress: dict[str, Any],
    *,
    store: ProgressPorts,
    uow: UnitOfWork,
    clock: Clock,
    present: Callable[[ProgressReport, bool], R],
) -> R:
    PROGRESS_BOUNDS.require_size(progress, "the progress")

    def attempt() -> R:
        # The time is taken afresh on each attempt: a write refused because a later report
        # landed first (another instance, another clock) is retried with a later time.
        made = ProgressReport(
            namespace=caller.namespace,
            reported_by=caller.principal_id,
            scope=scope,
            progress=progress,
            reported_at=to_ms(clock.now()),
        )
        # Only the report of the scope's holder becomes the scope's progress, and only while
        # it holds the switch: the write depends on that. Anyone else's stays the reporter's.
        holds = (
            scope is not None and store.scope_holder(caller.namespace, scope) == caller.principal_id
        )
        writes = [store.save_progress(made, for_scope=holds)]
        if holds and scope is not None:
            writes.append(store.require_holder(caller.namespace, scope, caller.principal_id))
        result = present(made, holds)
        uow.commit(*writes, result=result)
        return result

    return retry_on_conflict(attempt, "the latest progress")


def latest(caller: Caller, principal_id: str, *, store: ProgressPorts) -> ProgressReport | None:
    """``principal_id``'s latest report; not_found if no such principal exists."""
    namespace = caller.namespace
    found = store.latest_progress(namespace, principal_id)
    # Only an authenticated principal can have reported, so the directory is read only when
    # there is no report: to tell "nothing reported yet" from "no such principal".
    if (
        found is None
        and principal_id != caller.principal_id
        and store.get_principal(namespace, principal_id) is None
    ):
        raise not_found("principal")
    return found
