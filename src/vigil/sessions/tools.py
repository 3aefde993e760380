"""Session tools: ``session_heartbeat`` and ``end_session`` for the working agent;
``post_instruction``, ``list_instructions`` and ``list_sessions`` for the people steering it.
The use cases, and how a walk of instructions works, are in vigil.sessions.service."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from vigil.alarms.timers import Alarms
from vigil.identity.calls import Call
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.publish import Publish
from vigil.kit.text import text_within
from vigil.kit.tooling import (
    OPERATORS,
    PEOPLE,
    Cursor,
    IdempotencyKey,
    Output,
    Replay,
    StrictInput,
    Tool,
)
from vigil.sessions import service
from vigil.sessions.records import (
    MAX_BODY_BYTES,
    MAX_STEP_BYTES,
    PAGE_SIZE,
    STALE_AFTER_SECONDS,
    SessionOutcome,
    SessionStatus,
)
from vigil.sessions.store import SessionStore
from vigil.sessions.views import HandedInstruction, InstructionView, SessionView


class SessionContext(Call[SessionStore], Protocol):
    """What the session tools read of a call."""

    @property
    def alarms(self) -> Alarms: ...
    @property
    def publish(self) -> Publish: ...


MAX_ACKNOWLEDGMENTS = 100

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=PRINTABLE,
        description="The session, named by its agent.",
    ),
    normalised(128),
]
# Opaque to the agent: any id is accepted, and one this session never handed out is reported.
InstructionId = Annotated[str, Field(min_length=1, max_length=64)]
# The seed's cursor is a plain string: an empty one, which no beat hands out, is no cursor.
InstructionCursor = Annotated[str, Field(max_length=512)]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _optional(description: str) -> Any:
    """An optional field published as its plain type: to leave it out, omit it (null is
    refused, as the schema says)."""
    return Field(default=None, description=description, json_schema_extra=_no_default)


# -- session_heartbeat --------------------------------------------------------------------
class SessionHeartbeatInput(StrictInput):
    idempotency_field: ClassVar[str] = "idempotencyKey"

    sessionId: SessionId
    status: SessionStatus | SkipJsonSchema[None] = _optional("Left out on the first beat: active.")
    progressPercent: (
        Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | SkipJsonSchema[None]
    ) = _optional("How far along, in percent.")
    currentStep: (
        Annotated[str, Field(max_length=MAX_STEP_BYTES), text_within(MAX_STEP_BYTES)]
        | SkipJsonSchema[None]
    ) = _optional(f"What you are doing now, up to {MAX_STEP_BYTES // 1024} KiB of UTF-8.")
    stepIndex: Annotated[int, Field(ge=1)] | SkipJsonSchema[None] = _optional(
        "The current step, not above stepCount; sent with it."
    )
    stepCount: Annotated[int, Field(ge=1, le=1000)] | SkipJsonSchema[None] = _optional(
        "Steps planned; sent with stepIndex."
    )
    acknowledgedInstructionIds: (
        Annotated[list[InstructionId], Field(max_length=MAX_ACKNOWLEDGMENTS)] | SkipJsonSchema[None]
    ) = _optional("Instructions you have dealt with: they never come back.")
    instructionCursor: InstructionCursor | SkipJsonSchema[None] = _optional(
        "The last beat's nextInstructionCursor; omit to start from the oldest."
    )
    idempotencyKey: IdempotencyKey

    @field_validator(
        "status",
        "progressPercent",
        "currentStep",
        "stepIndex",
        "stepCount",
        "acknowledgedInstructionIds",
        "instructionCursor",
        mode="before",
    )
    @classmethod
    def _absent_not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("leave the field out rather than sending null")
        return value

    @model_validator(mode="after")
    def _steps(self) -> SessionHeartbeatInput:
        if (self.stepIndex is None) != (self.stepCount is None):
            raise ValueError("stepIndex and stepCount are sent together or not at all")
        if (
            self.stepIndex is not None
            and self.stepCount is not None
            and (self.stepIndex > self.stepCount)
        ):
            raise ValueError("stepIndex cannot be above stepCount")
        return self


class SessionHeartbeatResult(Output):
    sessionId: str
    status: SessionStatus
    progressPercent: float | None
    currentStep: str | None
    stepIndex: int | None
    stepCount: int | None
    lastBeatAt: datetime
    instructions: list[HandedInstruction] = Field(
        description=f"Instructions from people, oldest first, at most {PAGE_SIZE}."
    )
    nextInstructionCursor: str | None = Field(
        description="Pass as instructionCursor on the next beat; null when all are seen."
    )
    acknowledged: list[str] = Field(description="The instruction ids this beat acknowledged.")
    unknownInstructionIds: list[str] = Field(
        description="Acknowledged ids this session never handed out."
    )


def session_heartbeat(ctx: SessionContext, args: SessionHeartbeatInput) -> SessionHeartbeatResult:
    after = (
        cursor_position(args.instructionCursor, "beat", int, s=args.sessionId)
        if args.instructionCursor
        else 0
    )
    reported: dict[str, Any] = {
        "status": args.status,
        "progress_percent": args.progressPercent,
        "current_step": args.currentStep,
        "step_index": args.stepIndex,
        "step_count": args.stepCount,
    }

    def present(beat: service.BeatOutcome) -> SessionHeartbeatResult:
        session = beat.session
        return SessionHeartbeatResult(
            sessionId=session.session_id,
            status=session.status,
            progressPercent=session.progress_percent,
            currentStep=session.current_step,
            stepIndex=session.step_index,
            stepCount=session.step_count,
            lastBeatAt=session.last_beat_at,
            instructions=[
                HandedInstruction(
                    id=i.id,
                    body=i.body,
                    postedBy=i.posted_by,
                    postedAt=i.posted_at,
                    deliveryCount=i.delivery_count,
                )
                for i in beat.delivered
            ],
            nextInstructionCursor=(
                encode_cursor("beat", s=session.session_id, a=beat.next_after)
                if beat.next_after is not None
                else None
            ),
            acknowledged=beat.acknowledged,
            unknownInstructionIds=beat.unknown,
        )

    return service.beat(
        ctx.caller,
        args.sessionId,
        reported,
        args.acknowledgedInstructionIds or [],
        after,
        store=ctx.store,
        uow=ctx.uow,
        clock=ctx.clock,
        alarms=ctx.alarms,
        present=present,
    )


# What a beat's completion keeps of each instruction it handed out: the rest (its body, up to
# 8 KiB, who posted it and when) never changes and is read back from the instruction on a
# replay, so the completion does not grow with what people write.
_BEAT_KEPT = ("id", "deliveryCount")


def _beat_kept(result: dict[str, Any]) -> dict[str, Any]:
    handed = [{name: i[name] for name in _BEAT_KEPT} for i in result["instructions"]]
    return {**result, "instructions": handed}


def _beat_rebuilt(ctx: SessionContext, kept: dict[str, Any]) -> dict[str, Any]:
    ids = [i["id"] for i in kept["instructions"]]
    stored = service.instructions_by_id(
        ctx.caller.namespace, kept["sessionId"], ids, store=ctx.store
    )
    handed = [
        HandedInstruction(
            id=i["id"],
            body=stored[i["id"]].body,
            postedBy=stored[i["id"]].posted_by,
            postedAt=stored[i["id"]].posted_at,
            deliveryCount=i["deliveryCount"],
        ).model_dump(mode="json")
        for i in kept["instructions"]
    ]
    return {**kept, "instructions": handed}


# -- end_session --------------------------------------------------------------------------
class EndSessionInput(StrictInput):
    idempotency_field: ClassVar[str] = "idempotencyKey"

    sessionId: SessionId
    outcome: SessionOutcome = Field(description="How the work ended.")
    idempotencyKey: IdempotencyKey | None = None


class SessionEnded(Output):
    session: SessionView


def end_session(ctx: SessionContext, args: EndSessionInput) -> SessionEnded:
    now = ctx.clock.now()
    return service.end(
        ctx.caller,
        args.sessionId,
        args.outcome,
        now,
        store=ctx.store,
        uow=ctx.uow,
        present=lambda session: SessionEnded(session=SessionView.of(session, now)),
    )


# -- post_instruction ---------------------------------------------------------------------
class PostInstructionInput(StrictInput):
    idempotency_field: ClassVar[str] = "idempotencyKey"

    sessionId: SessionId
    body: str = Field(
        min_length=1,
        max_length=MAX_BODY_BYTES,
        description="What the agent should do, up to 8 KiB of UTF-8.",
    )
    idempotencyKey: IdempotencyKey | None = None

    @field_validator("body")
    @classmethod
    def _fits(cls, body: str) -> str:
        if len(body.encode()) > MAX_BODY_BYTES:
            raise ValueError(f"the body is over {MAX_BODY_BYTES} bytes of UTF-8")
        return body


def post_instruction(ctx: SessionContext, args: PostInstructionInput) -> InstructionView:
    return service.post(
        ctx.caller,
        args.sessionId,
        args.body,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        publish=ctx.publish,
        present=InstructionView.of,
    )


def _post_kept(result: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in result.items() if name != "body"}


def _post_rebuilt(ctx: SessionContext, kept: dict[str, Any]) -> dict[str, Any]:
    namespace, session_id = ctx.caller.namespace, kept["sessionId"]
    stored = service.instructions_by_id(namespace, session_id, [kept["id"]], store=ctx.store)
    rebuilt = {**kept, "body": stored[kept["id"]].body}
    return InstructionView.model_validate(rebuilt).model_dump(mode="json")


# -- list_instructions --------------------------------------------------------------------
class ListInstructionsInput(StrictInput):
    sessionId: SessionId
    cursor: Cursor | None = Field(default=None, description="nextCursor of the last page.")


class InstructionPage(Output):
    sessionId: str
    session: SessionView = Field(description="The session as of this call: status, progress, step.")
    instructions: list[InstructionView] = Field(description="Oldest first, in posting order.")
    nextCursor: str | None = Field(description="Pass as cursor for the next page; null at the end.")


def list_instructions(ctx: SessionContext, args: ListInstructionsInput) -> InstructionPage:
    after = (
        cursor_position(args.cursor, "instructions", int, s=args.sessionId) if args.cursor else 0
    )
    session, page, last = service.instructions_page(
        ctx.caller, args.sessionId, after, store=ctx.store
    )
    return InstructionPage(
        sessionId=session.session_id,
        session=SessionView.of(session, ctx.clock.now()),
        instructions=[InstructionView.of(i) for i in page],
        nextCursor=(
            encode_cursor("instructions", s=session.session_id, a=last)
            if last is not None
            else None
        ),
    )


# -- list_sessions ------------------------------------------------------------------------
class ListSessionsInput(StrictInput):
    staleOnly: bool = Field(
        default=False,
        description=f"Only sessions with no beat for more than {STALE_AFTER_SECONDS} seconds.",
    )
    cursor: Cursor | None = Field(default=None, description="nextCursor of the last page.")


class SessionPage(Output):
    sessions: list[SessionView] = Field(description="In session id order.")
    nextCursor: str | None = Field(description="Pass as cursor for the next page; null at the end.")
    staleAfterSeconds: int = STALE_AFTER_SECONDS


def list_sessions(ctx: SessionContext, args: ListSessionsInput) -> SessionPage:
    query = {"q": args.staleOnly}
    after = cursor_position(args.cursor, "sessions", str, **query) if args.cursor else None
    now = ctx.clock.now()
    found, last = service.sessions_page(ctx.caller, args.staleOnly, after, now, store=ctx.store)
    return SessionPage(
        sessions=[SessionView.of(session, now) for session in found],
        nextCursor=encode_cursor("sessions", a=last, **query) if last is not None else None,
    )


TOOLS: tuple[Tool[SessionContext], ...] = (
    Tool(
        name="session_heartbeat",
        title="Session heartbeat",
        description=(
            "Report your session's status and progress to people; fields left out keep their "
            "last value. Each beat returns pending human instructions: do them, then list "
            "their ids in acknowledgedInstructionIds or they come again. "
            f"Beat at least every {STALE_AFTER_SECONDS} s until end_session. "
            "Rules: docs/TOOLS.md#session_heartbeat."
        ),
        input_model=SessionHeartbeatInput,
        output_model=SessionHeartbeatResult,
        run=session_heartbeat,
        replay=Replay(_beat_kept, _beat_rebuilt),
    ),
    Tool(
        name="end_session",
        title="End a session",
        description=(
            "End your session: completed, failed or cancelled. It takes no more beats and is "
            "never stale; for new work, beat a new sessionId."
        ),
        input_model=EndSessionInput,
        output_model=SessionEnded,
        run=end_session,
    ),
    Tool(
        name="post_instruction",
        title="Instruct a session",
        description=(
            "Instruct an agent's session: session_heartbeat hands it out until acknowledged."
        ),
        input_model=PostInstructionInput,
        output_model=InstructionView,
        run=post_instruction,
        roles=OPERATORS,
        kinds=PEOPLE,
        replay=Replay(_post_kept, _post_rebuilt),
    ),
    Tool(
        name="list_instructions",
        title="List a session's instructions",
        description="A session's instructions, oldest first: pending, delivered or acknowledged.",
        input_model=ListInstructionsInput,
        output_model=InstructionPage,
        run=list_instructions,
        read_only=True,
    ),
    Tool(
        name="list_sessions",
        title="Watch sessions",
        description=(
            "Sessions with status, progress and last beat; stale: no beat for "
            f"{STALE_AFTER_SECONDS} s."
        ),
        input_model=ListSessionsInput,
        output_model=SessionPage,
        run=list_sessions,
        roles=OPERATORS,
        kinds=PEOPLE,
        read_only=True,
    ),
)
