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
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Protocol
from uuid import UUID

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from vigil.identity.calls import Call
from vigil.kit.tooling import IdempotencyKey, Output, StrictInput, Tool
from vigil.runs import service
from vigil.runs.records import (
    DEFAULT_LEASE_SECONDS,
    MAX_LEASE_SECONDS,
    MIN_LEASE_SECONDS,
    RESULT_BOUNDS,
    Outcome,
    Run,
    RunState,
)
from vigil.runs.store import RunStore


class RunContext(Call[RunStore], Protocol):
    """What the run tools read of a call."""


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
    Field(description="The run's id."),
]
LeaseSeconds = Annotated[
    int,
    Field(
        ge=MIN_LEASE_SECONDS,
        le=MAX_LEASE_SECONDS,
        description="The lease's length from now.",
    ),
]
RESULT_LIMITS = RESULT_BOUNDS.describe()
ResultDocument = Annotated[
    dict[str, Any],
    AfterValidator(RESULT_BOUNDS.checked),
    WithJsonSchema(RESULT_BOUNDS.json_schema()),
]


class RunView(Output):
    run_id: UUID
    state: RunState = Field(description="lapsed: the lease ran out and anyone may claim the run.")
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


def _presenter(now: datetime) -> Callable[[Run], RunResult]:
    return lambda run: RunResult(run=RunView.of(run, now))


# -- start --------------------------------------------------------------------------------
class StartRunInput(StrictInput):
    run_id: RunId | None = Field(default=None, description="Its id; a new UUID if omitted.")
    lease_duration_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS
    idempotency_key: IdempotencyKey | None = None


def start_run(ctx: RunContext, args: StartRunInput) -> RunResult:
    now = ctx.clock.now()
    run_id = str(args.run_id or uuid.uuid4())
    return service.start(
        ctx.caller,
        run_id,
        args.lease_duration_seconds,
        now,
        store=ctx.store,
        uow=ctx.uow,
        present=_presenter(now),
    )


# -- claim --------------------------------------------------------------------------------
class ClaimRunInput(StrictInput):
    run_id: RunId
    lease_duration_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS
    idempotency_key: IdempotencyKey | None = None


def claim_run(ctx: RunContext, args: ClaimRunInput) -> RunResult:
    now = ctx.clock.now()
    return service.change(
        ctx.caller,
        str(args.run_id),
        lambda run: run.claimed_by(ctx.caller.principal_id, args.lease_duration_seconds, now),
        store=ctx.store,
        uow=ctx.uow,
        present=_presenter(now),
    )


# -- heartbeat ----------------------------------------------------------------------------
class RunHeartbeatInput(StrictInput):
    run_id: RunId
    lease_duration_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS


# Seed 003's published output schema for create_run_heartbeat, as tools/list carries it (less
# its dialect and its own description: MCP's listing has a dialect, and a model the tool's).
SEED_RUN_HEARTBEAT_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "run_id": {
            "type": "string",
            "format": "uuid",
            "description": "Run identifier associated with this result.",
        },
        "expires_at": {
            "type": "string",
            "format": "date-time",
            "description": "The expires at returned by the tool.",
        },
    },
    "required": ["run_id", "expires_at"],
    "additionalProperties": False,
}


class RunHeartbeatResult(Output):
    run_id: UUID = Field(description="The run whose lease was renewed.")
    expires_at: datetime = Field(description="When the renewed lease ends unless renewed again.")


def create_run_heartbeat(ctx: RunContext, args: RunHeartbeatInput) -> RunHeartbeatResult:
    now = ctx.clock.now()
    return service.change(
        ctx.caller,
        str(args.run_id),
        lambda run: run.renewed(ctx.caller.principal_id, args.lease_duration_seconds, now),
        store=ctx.store,
        uow=ctx.uow,
        present=lambda run: RunHeartbeatResult(run_id=args.run_id, expires_at=run.expires_at),
    )


# -- finish -------------------------------------------------------------------------------
class FinishRunInput(StrictInput):
    run_id: RunId
    generation: int = Field(ge=1, description="The generation you hold: your fencing token.")
    outcome: Outcome
    result: ResultDocument | None = Field(
        default=None,
        description=f"A JSON object on the outcome ({RESULT_LIMITS}).",
    )
    idempotency_key: IdempotencyKey | None = None


def finish_run(ctx: RunContext, args: FinishRunInput) -> RunResult:
    now = ctx.clock.now()
    return service.finish(
        ctx.caller,
        service.FinishRun(str(args.run_id), args.generation, args.outcome, args.result),
        now,
        store=ctx.store,
        uow=ctx.uow,
        present=_presenter(now),
    )


# -- get ----------------------------------------------------------------------------------
class GetRunInput(StrictInput):
    run_id: RunId


def get_run(ctx: RunContext, args: GetRunInput) -> RunResult:
    return _presenter(ctx.clock.now())(service.read(ctx.caller, str(args.run_id), store=ctx.store))


TOOLS: tuple[Tool[RunContext], ...] = (
    Tool(
        name="start_run",
        title="Start a run",
        description=(
            "Create a run you hold at generation 1, under a lease: renew it with "
            "create_run_heartbeat, end the run with finish_run."
        ),
        input_model=StartRunInput,
        output_model=RunResult,
        run=start_run,
    ),
    Tool(
        name="claim_run",
        title="Claim a run",
        description=(
            "Take over a run whose lease ran out, at the next generation, fencing off its "
            "last holder. Lease live: version_conflict with held_until."
        ),
        input_model=ClaimRunInput,
        output_model=RunResult,
        run=claim_run,
    ),
    Tool(
        name="create_run_heartbeat",
        title="Renew a run's lease",
        description=(
            "Extend your lease on a run to lease_duration_seconds from now. "
            "stale_generation: the run is no longer yours; stop."
        ),
        input_model=RunHeartbeatInput,
        output_model=RunHeartbeatResult,
        seed_output_schema=SEED_RUN_HEARTBEAT_OUTPUT,
        run=create_run_heartbeat,
    ),
    Tool(
        name="finish_run",
        title="Finish a run",
        description=(
            "Record a run's outcome and an optional result, ending its lease; only the "
            "current generation's holder may. It never changes after."
        ),
        input_model=FinishRunInput,
        output_model=RunResult,
        run=finish_run,
    ),
    Tool(
        name="get_run",
        title="Read a run",
        description="A run's state, holder, generation and outcome.",
        input_model=GetRunInput,
        output_model=RunResult,
        run=get_run,
        read_only=True,
    ),
)
