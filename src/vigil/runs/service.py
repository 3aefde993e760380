"""Run use cases: start, claim, renew, finish and read a run. Each change reads the run,
applies one of its transitions (vigil.runs.records) and stores the outcome conditionally on the
version read."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from vigil.errors import conflict, not_found
from vigil.identity.records import Caller
from vigil.kit.retry import update_versioned
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.runs.records import RESULT_BOUNDS, Outcome, Run
from vigil.runs.store import RunStore

R = TypeVar("R", bound=BaseModel)


def read(store: RunStore, caller: Caller, run_id: str) -> Run:
    run = store.get_run(caller.namespace, run_id)
    if run is None:
        raise not_found("run")
    return run


def start(
    store: RunStore,
    uow: UnitOfWork,
    caller: Caller,
    run_id: str,
    lease_seconds: int,
    now: datetime,
    present: Callable[[Run], R],
) -> R:
    run = Run.started(caller.namespace, run_id, caller.principal_id, lease_seconds, now)
    result = present(run)
    try:
        uow.commit(store.save_run(run, None), result=result)
    except ConditionFailed:
        raise conflict("a run with this run_id exists already") from None
    return result


def _change(
    store: RunStore,
    uow: UnitOfWork,
    caller: Caller,
    run_id: str,
    transition: Callable[[Run], Run],
    present: Callable[[Run], R],
) -> R:
    def change(run: Run | None) -> Run:
        assert run is not None  # read() refuses a missing run
        return transition(run)

    return update_versioned(
        uow,
        read=lambda: read(store, caller, run_id),
        change=change,
        save=store.save_run,
        present=present,
        what="the run",
    )


def claim(
    store: RunStore,
    uow: UnitOfWork,
    caller: Caller,
    run_id: str,
    lease_seconds: int,
    now: datetime,
    present: Callable[[Run], R],
) -> R:
    return _change(
        store,
        uow,
        caller,
        run_id,
        lambda run: run.claimed_by(caller.principal_id, lease_seconds, now),
        present,
    )


def renew(
    store: RunStore,
    uow: UnitOfWork,
    caller: Caller,
    run_id: str,
    lease_seconds: int,
    now: datetime,
    present: Callable[[Run], R],
) -> R:
    return _change(
        store,
        uow,
        caller,
        run_id,
        lambda run: run.renewed(caller.principal_id, lease_seconds, now),
        present,
    )


def finish(
    store: RunStore,
    uow: UnitOfWork,
    caller: Caller,
    run_id: str,
    generation: int,
    outcome: Outcome,
    result: dict[str, Any] | None,
    now: datetime,
    present: Callable[[Run], R],
) -> R:
    if result is not None:
        RESULT_BOUNDS.require_size(result, "the result")
    return _change(
        store,
        uow,
        caller,
        run_id,
        lambda run: run.finished(caller.principal_id, generation, outcome, result, now),
        present,
    )
