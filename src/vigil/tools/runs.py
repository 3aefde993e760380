"""Runs: ``start_run``, ``claim_run``, ``create_run_heartbeat``, ``finish_run``, ``get_run``.

A run is held under an expiring lease by one principal at a time. Its generation is the
fencing token: it starts at 1 and grows by one each time someone claims the run after its
lease lapsed, never with a renewal. Every change reads the run, decides, and writes
conditionally on the version it read; a lost race reads again, a few times at most.

``create_run_heartbeat`` keeps the published schema, which carries no generation: the holder
is recognised by the caller's principal. Two processes that share one secret are therefore
one holder, and either may renew the other's lease; give each worker its own principal.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from vigil.clock import iso
from vigil.domain.runs import (
    DEFAULT_LEASE_SECONDS,
    MAX_LEASE_SECONDS,
    MIN_LEASE_SECONDS,
    RESULT_BOUNDS,
    Outcome,
    Run,
    RunState,
)
from vigil.errors import ErrorCode, VigilError, conflict, invalid, not_found
from vigil.store import ConditionFailed
from vigil.tools.common import Context, IdempotencyKey, Output, StrictInput

_ATTEMPTS = 3
_UUID_TEXT = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def _uuid_text(value: Any) -> UUID:
    # Only the 8-4-4-4-12 text form: the looser spellings uuid.UUID accepts (braces, urn:,
    # no hyphens) are not what format "uuid" promises.
    if not isinstance(value, str) or not _UUID_TEXT.match(value):
        raise ValueError("must be a UUID in its 8-4-4-4-12 hexadecimal form")
    return UUID(value)


RunId = Annotated[
    UUID,
    BeforeValidator(_uuid_text),
    Field(description="The run's id, a UUID."),
]
LeaseSeconds = Annotated[
    int,
    Field(
        ge=MIN_LEASE_SECONDS,
        le=MAX_LEASE_SECONDS,
        description=(
            f"How long the lease lasts from now: {MIN_LEASE_SECONDS} to {MAX_LEASE_SECONDS} "
            f"seconds, {DEFAULT_LEASE_SECONDS} if omitted."
        ),
    ),
]
RESULT_LIMITS = (
    f"at most {RESULT_BOUNDS.max_bytes // 1024} KiB as compact UTF-8 JSON, "
    f"{RESULT_BOUNDS.max_keys} keys per object, {RESULT_BOUNDS.max_depth} levels of nesting"
)
ResultDocument = Annotated[
    dict[str, Any],
    AfterValidator(RESULT_BOUNDS.checked),
    WithJsonSchema(RESULT_BOUNDS.json_schema()),
]


class RunView(Output):
    run_id: UUID
    state: RunState = Field(
        description=(
            "running: its lease is live; lapsed: the lease ran out and anyone may claim the run; "
            "finished: an outcome is recorded and nothing more can change."
        )
    )
    holder: str = Field(description="Principal id holding the run, or that last held it.")
    generation: int = Field(description="Fencing token: grows by one with every claim.")
    expires_at: datetime = Field(description="When the lease ends, or ended.")
    outcome: Outcome | None
    result: dict[str, Any] | None = Field(description="What the holder reported when finishing.")
    started_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, run: Run, now: datetime) -> RunView:
        return cls(
            run_id=UUID(run.run_id),
            state=run.state(now),
            holder=run.holder,
            generation=run.generation,
            expires_at=run.expires_at,
            outcome=run.outcome,
            result=run.result,
            started_at=run.started_at,
            finished_at=run.finished_at,
        )


class RunResult(Output):
    run: RunView


def _read(ctx: Context, run_id: UUID) -> Run:
    run = ctx.store.get_run(ctx.caller.namespace, str(run_id))
    if run is None:
        raise not_found("run")
    return run


def _stale(run: Run, why: str) -> VigilError:
    return VigilError(ErrorCode.STALE_GENERATION, why, current_generation=run.generation)


def _require_holder(run: Run, ctx: Context, now: datetime, generation: int | None) -> None:
    """Refuses anyone but the caller holding the current generation of a live run."""
    if run.finished_at is not None:
        raise _stale(run, "the run is finished; nothing more can change")
    if run.holder != ctx.caller.principal_id or (
        generation is not None and generation != run.generation
    ):
        raise _stale(run, "the caller does not hold the current generation of this run")
    if run.state(now) != "running":
        raise _stale(
            run,
            "the caller's lease on the run lapsed; stop, and claim_run to take it again "
            "at a new generation",
        )


def _contended() -> VigilError:
    return conflict("the run kept changing while this call ran; read it and retry")


# -- start --------------------------------------------------------------------------------
class StartRunInput(StrictInput):
    run_id: RunId | None = Field(
        default=None, description="The id to give the run; a new UUID is chosen if omitted."
    )
    lease_duration_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS
    idempotency_key: IdempotencyKey | None = None


def start_run(ctx: Context, args: StartRunInput) -> RunResult:
    now = ctx.clock.now()
    run = Run(
        namespace=ctx.caller.namespace,
        run_id=str(args.run_id or uuid.uuid4()),
        holder=ctx.caller.principal_id,
        generation=1,
        expires_at=now + timedelta(seconds=args.lease_duration_seconds),
        started_at=now,
        version=1,
    )
    result = RunResult(run=RunView.of(run, now))
    try:
        ctx.store.put_run(run, None, completes=ctx.completion(result))
    except ConditionFailed:
        raise conflict("a run with this run_id exists already") from None
    return result


# -- claim --------------------------------------------------------------------------------
class ClaimRunInput(StrictInput):
    run_id: RunId
    lease_duration_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS
    idempotency_key: IdempotencyKey | None = None


def _claimed(run: Run, ctx: Context, args: ClaimRunInput, now: datetime) -> Run:
    expires_at = now + timedelta(seconds=args.lease_duration_seconds)
    if run.finished_at is not None:
        raise invalid("the run is finished; it cannot be claimed")
    if run.state(now) == "running":
        if run.holder != ctx.caller.principal_id:
            raise conflict(
                f"the run is held by another worker until {iso(run.expires_at)}",
                held_until=iso(run.expires_at),
                generation=run.generation,
            )
        # The live holder claiming again keeps its fencing token: nothing it did is superseded.
        return run.model_copy(update={"expires_at": expires_at, "version": run.version + 1})
    return run.model_copy(
        update={
            "holder": ctx.caller.principal_id,
            "generation": run.generation + 1,
            "expires_at": expires_at,
            "version": run.version + 1,
        }
    )


def claim_run(ctx: Context, args: ClaimRunInput) -> RunResult:
    now = ctx.clock.now()
    for _ in range(_ATTEMPTS):
        run = _read(ctx, args.run_id)
        claimed = _claimed(run, ctx, args, now)
        result = RunResult(run=RunView.of(claimed, now))
        try:
            ctx.store.put_run(claimed, run.version, completes=ctx.completion(result))
        except ConditionFailed:
            continue
        return result
    raise _contended()


# -- heartbeat ----------------------------------------------------------------------------
class RunHeartbeatInput(StrictInput):
    run_id: RunId
    lease_duration_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS


class RunHeartbeatResult(Output):
    run_id: UUID = Field(description="The run whose lease was renewed.")
    expires_at: datetime = Field(description="When the renewed lease ends unless renewed again.")


def create_run_heartbeat(ctx: Context, args: RunHeartbeatInput) -> RunHeartbeatResult:
    now = ctx.clock.now()
    for _ in range(_ATTEMPTS):
        run = _read(ctx, args.run_id)
        _require_holder(run, ctx, now, generation=None)
        renewed = run.model_copy(
            update={
                "expires_at": now + timedelta(seconds=args.lease_duration_seconds),
                "version": run.version + 1,
            }
        )
        try:
            ctx.store.put_run(renewed, run.version)
        except ConditionFailed:
            continue
        return RunHeartbeatResult(run_id=args.run_id, expires_at=renewed.expires_at)
    raise _contended()


# -- finish -------------------------------------------------------------------------------
class FinishRunInput(StrictInput):
    run_id: RunId
    generation: int = Field(ge=1, description="The generation you hold: your fencing token.")
    outcome: Outcome
    result: ResultDocument | None = Field(
        default=None,
        description=f"An optional JSON object summing up the outcome: {RESULT_LIMITS}.",
    )
    idempotency_key: IdempotencyKey | None = None


def finish_run(ctx: Context, args: FinishRunInput) -> RunResult:
    if args.result is not None and RESULT_BOUNDS.size(args.result) > RESULT_BOUNDS.max_bytes:
        raise VigilError(
            ErrorCode.LIMIT_EXCEEDED,
            f"the result is larger than {RESULT_BOUNDS.max_bytes} bytes as compact UTF-8 JSON",
            limit_bytes=RESULT_BOUNDS.max_bytes,
        )
    now = ctx.clock.now()
    for _ in range(_ATTEMPTS):
        run = _read(ctx, args.run_id)
        _require_holder(run, ctx, now, args.generation)
        finished = run.model_copy(
            update={
                "expires_at": now,
                "finished_at": now,
                "outcome": args.outcome,
                "result": args.result,
                "version": run.version + 1,
            }
        )
        result = RunResult(run=RunView.of(finished, now))
        try:
            ctx.store.put_run(finished, run.version, completes=ctx.completion(result))
        except ConditionFailed:
            continue
        return result
    raise _contended()


# -- get ----------------------------------------------------------------------------------
class GetRunInput(StrictInput):
    run_id: RunId


def get_run(ctx: Context, args: GetRunInput) -> RunResult:
    return RunResult(run=RunView.of(_read(ctx, args.run_id), ctx.clock.now()))
