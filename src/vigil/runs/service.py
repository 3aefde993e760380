"""Run use cases: start, change and read a run. Each change reads the run, applies one of its
transitions (vigil.runs.records: claimed_by, renewed, finished) and stores the outcome
conditionally on the version read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vigil.errors import conflict, not_found
from vigil.identity.records import Caller
from vigil.kit.retry import R, update_versioned
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.runs.records import RESULT_BOUNDS, Outcome, Run
from vigil.runs.store import RunStore


def read(caller: Caller, run_id: str, *, store: RunStore) -> Run:
    run = store.get_run(caller.namespace, run_id)
    if run is None:
        raise not_found("run")
    return run


def start(
    caller: Caller,
    run_id: str,
    lease_seconds: int,
    now: datetime,
    *,
    store: RunStore,
    uow: UnitOfWork,
    present: Callable[[Run], R],
) -> R:
    run = Run.started(caller.namespace, run_id, caller.principal_id, lease_seconds, now)
    result = present(run)
    try:
        uow.commit(store.save_run(run, None), result=result)
    except ConditionFailed:
        raise conflict("a run with this run_id exists already") from None
    return result


def change(
    caller: Caller,
    run_id: str,
    transition: Callable[[Run], Run],
    *,
    store: RunStore,
    uow: UnitOfWork,
    present: Callable[[Run], R],
) -> R:
    """The caller's run ``run_id`` after ``transition``; not_found if there is none."""

    def changed(run: Run | None) -> Run:
        assert run is not None  # read() refuses a missing run
        return transition(run)

    return update_versioned(
        uow,
        read=lambda: read(caller, run_id, store=store),
        change=changed,
        save=store.save_run,
        present=present,
        what="the run",
    )


@dataclass(frozen=True)
class FinishRun:
    """The end of the run ``run_id``, by the holder of ``generation``: its ``outcome``, and
    the ``result`` that sums it up, if any."""

    run_id: str
    generation: int
    outcome: Outcome
    result: dict[str, Any] | None


def finish(
    caller: Caller,
    command: FinishRun,
    now: datetime,
    *,
    store: RunStore,
    uow: UnitOfWork,
    present: Callable[[Run], R],
) -> R:
    if command.result is not None:
        RESULT_BOUNDS.require_size(command.result, "the result")
    return change(
        caller,
        command.run_id,
        lambda run: run.finished(
            caller.principal_id, command.generation, command.outcome, command.result, now
        ),
        store=store,
        uow=uow,
        present=present,
    )
