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


MAX_ACKNOWLEDGMENTS = 100

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=PRINTABLE,
        description="The session, named by its agent: 1-128 printable characters.",
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
    status: SessionStatus | SkipJsonSchema[None] = _optional(
        "active, waiting or blocked; active on the first beat if left out."
    )
    progressPercent: (
        Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | SkipJsonSchema[None]
    ) = _optional("How far along the session is, 0 to 100.")
    currentStep: (
        Annotated[str, Field(max_length=MAX_STEP_BYTES), text_within(MAX_STEP_BYTES)]
        | SkipJsonSchema[None]
    ) = _optional(
        f"What the agent is doing now, any text up to {MAX_STEP_BYTES // 1024} KiB of UTF-8, "
        "kept as written (line breaks too)."
    )
    stepIndex: Annotated[int, Field(ge=1)] | SkipJsonSchema[None] = _optional(
        "Position of the current step, from 1; only together with stepCount, and not above it."
    )
    stepCount: Annotated[int, Field(ge=1, le=1000)] | SkipJsonSchema[None] = _optional(
        "How many steps are planned, 1 to 1000; only together with stepIndex."
    )
    acknowledgedInstructionIds: (
        Annotated[list[InstructionId], Field(max_length=MAX_ACKNOWLEDGMENTS)] | SkipJsonSchema[None]
    ) = _optional(
        "Ids of instructions a beat handed you that you have dealt with, up to 100; they "
        "never come back. An id this session never handed out is reported in "
        "unknownInstructionIds, and the rest of the beat stands."
    )
    instructionCursor: InstructionCursor | SkipJsonSchema[None] = _optional(
        "The nextInstructionCursor of the previous beat, to get the next page of the same "
        "walk; leave it out (or send it empty) to start from the oldest instruction not "
        "acknowledged."
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
        description="Pass as instructionCursor on the next beat for the rest of this walk; "
        "null when the walk is complete."
    )
    acknowledged: list[str] = Field(
        description="The instruction ids this beat acknowledged (an id acknowledged before "
        "is harmless and listed again)."
    )
    unknownInstructionIds: list[str] = Field(
        description="The acknowledgedInstructionIds that name no instruction this session has "
        "handed out: nothing was acknowledged for them."
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
    session_id: SessionId
    outcome: SessionOutcome = Field(
        description="How the work ended: completed, failed or cancelled."
    )
    idempotency_key: IdempotencyKey | None = None


class SessionEnded(Output):
    session: SessionView


def end_session(ctx: SessionContext, args: EndSessionInput) -> SessionEnded:
    now = ctx.clock.now()
    return service.end(
        ctx.caller,
        args.session_id,
        args.outcome,
        now,
        store=ctx.store,
        uow=ctx.uow,
        present=lambda session: SessionEnded(session=SessionView.of(session, now)),
    )


# -- post_instruction ---------------------------------------------------------------------
class PostInstructionInput(StrictInput):
    session_id: SessionId
    body: str = Field(
        min_length=1,
        max_length=MAX_BODY_BYTES,
        description="What the agent should do, up to 8 KiB of UTF-8.",
    )
    idempotency_key: IdempotencyKey | None = None

    @field_validator("body")
    @classmethod
    def _fits(cls, body: str) -> str:
        if len(body.encode()) > MAX_BODY_BYTES:
            raise ValueError(f"the body is over {MAX_BODY_BYTES} bytes of UTF-8")
        return body


def post_instruction(ctx: SessionContext, args: PostInstructionInput) -> InstructionView:
    return service.post(
        ctx.caller,
        args.session_id,
        args.body,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        present=InstructionView.of,
    )


def _post_kept(result: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in result.items() if name != "body"}


def _post_rebuilt(ctx: SessionContext, kept: dict[str, Any]) -> dict[str, Any]:
    namespace, session_id = ctx.caller.namespace, kept["session_id"]
    stored = service.instructions_by_id(namespace, session_id, [kept["id"]], store=ctx.store)
    rebuilt = {**kept, "body": stored[kept["id"]].body}
    return InstructionView.model_validate(rebuilt).model_dump(mode="json")


# -- list_instructions --------------------------------------------------------------------
class ListInstructionsInput(StrictInput):
    session_id: SessionId
    cursor: Cursor | None = Field(
        default=None, description="The next_cursor of the previous page, to continue."
    )


class InstructionPage(Output):
    session_id: str
    instructions: list[InstructionView] = Field(description="Oldest first, in posting order.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end."
    )


def list_instructions(ctx: SessionContext, args: ListInstructionsInput) -> InstructionPage:
    after = (
        cursor_position(args.cursor, "instructions", int, s=args.session_id) if args.cursor else 0
    )
    session, page, last = service.instructions_page(
        ctx.caller, args.session_id, after, store=ctx.store
    )
    return InstructionPage(
        session_id=session.session_id,
        instructions=[InstructionView.of(i) for i in page],
        next_cursor=(
            encode_cursor("instructions", s=session.session_id, a=last)
            if last is not None
            else None
        ),
    )


# -- list_sessions ------------------------------------------------------------------------
class ListSessionsInput(StrictInput):
    stale_only: bool = Field(
        default=False,
        description=f"Only sessions with no beat for more than {STALE_AFTER_SECONDS} seconds.",
    )
    cursor: Cursor | None = Field(
        default=None, description="The next_cursor of the previous page of the same query."
    )


class SessionPage(Output):
    sessions: list[SessionView] = Field(description="In session id order.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end. A page may be short "
        "(even empty) and still have a cursor when stale_only skips many sessions."
    )
    stale_after_seconds: int = STALE_AFTER_SECONDS


def list_sessions(ctx: SessionContext, args: ListSessionsInput) -> SessionPage:
    query = {"q": args.stale_only}
    after = cursor_position(args.cursor, "sessions", str, **query) if args.cursor else None
    now = ctx.clock.now()
    found, last = service.sessions_page(ctx.caller, args.stale_only, after, now, store=ctx.store)
    return SessionPage(
        sessions=[SessionView.of(session, now) for session in found],
        next_cursor=encode_cursor("sessions", a=last, **query) if last is not None else None,
    )


TOOLS: tuple[Tool[SessionContext], ...] = (
    Tool(
        name="session_heartbeat",
        title="Session heartbeat",
        description=(
            "Tell the people watching how your session is going: status (active, waiting or "
            "blocked), progressPercent, currentStep and, always together, stepIndex and "
            "stepCount; whatever you leave out keeps its last value. Your first beat creates "
            "the session, and from then on only you may beat it. Each beat returns up to "
            f"{PAGE_SIZE} of the instructions people have posted to you, oldest first, each "
            "with postedBy, the person or operator who sent it: pass nextInstructionCursor as "
            "instructionCursor on the following beats until it comes back null to see them "
            "all. An instruction is handed out again on later walks until you list its id in "
            "acknowledgedInstructionIds; an id never handed to this session is listed in "
            "unknownInstructionIds, and the rest of the beat stands. Beat at least every "
            f"{STALE_AFTER_SECONDS} seconds, or the session shows as stale to its "
            "watchers, until you end it with end_session; a beat after the end is refused "
            "(version_conflict, with ended_at and outcome). A retry with the same "
            "idempotencyKey returns the first result."
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
            "Say that your session's work is over: completed, failed or cancelled. From then "
            "on it is never stale, nobody is alerted about its silence, its later beats and "
            "new instructions are refused (version_conflict, with ended_at and outcome), and "
            "list_sessions shows its end. Only the agent whose beats created it may end it "
            "(anyone else: not_found); ending it again is a version_conflict. For new work, "
            "beat a new sessionId."
        ),
        input_model=EndSessionInput,
        output_model=SessionEnded,
        run=end_session,
    ),
    Tool(
        name="post_instruction",
        title="Instruct a session",
        description=(
            "Send an instruction, up to 8 KiB of UTF-8, to an agent's session in your "
            "namespace. The agent gets it on one of its next session_heartbeat calls, and "
            "again on later ones until it acknowledges it. For people and operators; an agent "
            "or service without the operator role is forbidden. Returns the instruction, "
            "pending until a beat hands it out. A session that has ended takes none "
            "(version_conflict)."
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
        description=(
            f"The instructions of a session, oldest first, {service.INSTRUCTIONS_PAGE} a "
            "page, each with its state: pending (not handed out yet), delivered (handed out "
            "delivery_count times, not acknowledged yet) or acknowledged. For the people and "
            "operators of the namespace and for the agent whose session it is."
        ),
        input_model=ListInstructionsInput,
        output_model=InstructionPage,
        run=list_instructions,
        read_only=True,
    ),
    Tool(
        name="list_sessions",
        title="Watch sessions",
        description=(
            f"The sessions of your namespace in id order, {service.SESSIONS_PAGE} a page, "
            "for people and operators: each with its agent (owner), status, progress, current "
            "step, steps and last beat, its end (ended_at, outcome) once its agent ended it, "
            "and stale: true when it has not beaten for more than "
            f"{STALE_AFTER_SECONDS} seconds at the time of this call and has not ended. "
            "stale_only keeps just the stale ones."
        ),
        input_model=ListSessionsInput,
        output_model=SessionPage,
        run=list_sessions,
        roles=OPERATORS,
        kinds=PEOPLE,
        read_only=True,
    ),
)
