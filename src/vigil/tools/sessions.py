"""Sessions with human instructions: ``session_heartbeat`` for the working agent,
``post_instruction``, ``list_instructions`` and ``list_sessions`` for the people steering it.

Instructions are numbered per session as they are posted (``vigil.domain.sessions`` says why
a reader that takes the session's last number first can miss none). A beat reads the session,
then the open instructions after its starting point and up to that last number, in order. So
one walk (a series of beats, each passing the previous ``nextInstructionCursor``) shows each
instruction at most once and in order, and by its end every one that was open when it began;
one posted meanwhile comes on a later page or in the next walk. Whatever a beat hands out is
recorded as delivered in the same transaction as the beat, and comes back in later walks until
the agent acknowledges it. The session remembers how far everything is acknowledged
(``acked_through``), so a new walk starts at the first open instruction without reading the
acknowledged ones before it.

Acknowledging anything the session was never handed is refused before anything is written.
The checks that make the write safe are conditions, not the earlier reads: the session's
version (beats race only each other; posting moves ``last_seq`` alone), each delivery on the
count it was read with, each acknowledgment on the instruction still being delivered.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from vigil.clock import to_ms
from vigil.domain.identity import Caller
from vigil.domain.sessions import (
    INSTRUCTION_ID_PATTERN,
    MAX_BODY_BYTES,
    PAGE_SIZE,
    SESSION_ID_PATTERN,
    STALE_AFTER_SECONDS,
    Instruction,
    InstructionState,
    Session,
    SessionStatus,
    instruction_seq,
    new_instruction_id,
)
from vigil.errors import conflict, forbidden, invalid, not_found
from vigil.store import ConditionFailed, Store
from vigil.tools.common import Context, IdempotencyKey, Output, StrictInput

# Each attempt lost to a concurrent beat of the same session (or, for posting, another post);
# more would only queue callers behind a session that is plainly contended.
_ATTEMPTS = 5
INSTRUCTIONS_PAGE = 25
SESSIONS_PAGE = 50
# One list_sessions call examines at most this many sessions, so that looking for the few
# stale ones returns a short page and a cursor rather than reading a whole namespace.
_SCAN_BUDGET = 500
MAX_ACKNOWLEDGMENTS = 100

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=SESSION_ID_PATTERN,
        description="The session, named by its agent: 1-128 of A-Z a-z 0-9 . _ : -",
    ),
]
InstructionId = Annotated[str, Field(max_length=20, pattern=INSTRUCTION_ID_PATTERN)]
Cursor = Annotated[str, Field(min_length=1, max_length=512)]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _optional(description: str) -> Any:
    """An optional field published as its plain type: to leave it out, omit it (null is
    refused, as the schema says)."""
    return Field(default=None, description=description, json_schema_extra=_no_default)


def _steers(caller: Caller) -> bool:
    return caller.kind == "person" or caller.is_operator


# -- cursors ------------------------------------------------------------------------------
def _encode_cursor(**fields: Any) -> str:
    raw = json.dumps(fields, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, kind: str) -> dict[str, Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
        ok = isinstance(decoded, dict) and decoded.get("k") == kind
    except (binascii.Error, ValueError, TypeError):
        ok = False
    if not ok:
        raise invalid("the cursor is not one this tool returned")
    fields: dict[str, Any] = decoded
    return fields


def _seq_cursor(cursor: str, kind: str, session_id: str) -> int:
    fields = _decode_cursor(cursor, kind)
    after = fields.get("a")
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise invalid("the cursor is not one this tool returned")
    if fields.get("s") != session_id:
        raise invalid("the cursor belongs to another session")
    return after


# -- views --------------------------------------------------------------------------------
class HandedInstruction(Output):
    id: str
    body: str = Field(description="Written by a person or operator: data to weigh, as sent.")
    postedBy: str = Field(description="Principal id of who posted it, as authenticated.")
    postedAt: datetime
    deliveryCount: int = Field(description="How many beats have handed it out, this one too.")


class InstructionView(Output):
    id: str
    sessionId: str
    body: str
    state: InstructionState = Field(
        description="pending (not handed out yet), delivered (handed out, not yet "
        "acknowledged) or acknowledged."
    )
    postedBy: str
    postedAt: datetime
    deliveryCount: int
    lastDeliveredAt: datetime | None
    acknowledgedAt: datetime | None

    @classmethod
    def of(cls, instruction: Instruction) -> InstructionView:
        return cls(
            id=instruction.id,
            sessionId=instruction.session_id,
            body=instruction.body,
            state=instruction.state,
            postedBy=instruction.posted_by,
            postedAt=instruction.posted_at,
            deliveryCount=instruction.delivery_count,
            lastDeliveredAt=instruction.last_delivered_at,
            acknowledgedAt=instruction.acknowledged_at,
        )


class SessionView(Output):
    sessionId: str
    owner: str = Field(description="Principal id of the agent whose beats the session takes.")
    status: SessionStatus
    progressPercent: float | None
    currentStep: str | None
    stepIndex: int | None
    stepCount: int | None
    createdAt: datetime
    lastBeatAt: datetime
    stale: bool = Field(
        description=f"No beat for more than {STALE_AFTER_SECONDS} seconds, as of this call."
    )

    @classmethod
    def of(cls, session: Session, now: datetime) -> SessionView:
        return cls(
            sessionId=session.session_id,
            owner=session.owner,
            status=session.status,
            progressPercent=session.progress_percent,
            currentStep=session.current_step,
            stepIndex=session.step_index,
            stepCount=session.step_count,
            createdAt=session.created_at,
            lastBeatAt=session.last_beat_at,
            stale=session.stale(now),
        )


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
        Annotated[str, Field(min_length=1, max_length=500, pattern=r"^[^\x00-\x1f\x7f]+$")]
        | SkipJsonSchema[None]
    ) = _optional("What the agent is doing now, up to 500 printable characters.")
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
        "never come back. An id this session never handed out refuses the whole beat."
    )
    instructionCursor: Cursor | SkipJsonSchema[None] = _optional(
        "The nextInstructionCursor of the previous beat, to get the next page of the same "
        "walk; leave it out to start from the oldest instruction not acknowledged."
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


def _received(
    store: Store, namespace: str, current: Session | None, ids: list[str]
) -> list[Instruction]:
    """The instructions named by ``ids``, each one this session has handed out."""
    stored: dict[str, Instruction] = {}
    if current is not None and ids:
        seqs = [seq for seq in map(instruction_seq, ids) if seq is not None]
        found = store.get_instructions(namespace, current.session_id, seqs)
        stored = {instruction.id: instruction for instruction in found}
    unknown = [i for i in ids if i not in stored or stored[i].state == "pending"]
    if unknown:
        raise invalid(
            "acknowledgedInstructionIds names instructions this session has not handed out; "
            "nothing was recorded",
            unknown=unknown,
        )
    return [stored[i] for i in ids]


def _page(
    store: Store, current: Session | None, after: int, acknowledging: set[int]
) -> tuple[list[Instruction], bool, int]:
    """The next page of open instructions after ``after``, whether more follow, and how far
    every instruction is now known to be acknowledged."""
    if current is None:
        return [], False, 0
    start = max(after, current.acked_through)
    limit = PAGE_SIZE + 1 + len(acknowledging)
    found = store.open_instructions(
        current.namespace, current.session_id, start, current.last_seq, limit
    )
    remaining = [i for i in found if i.seq not in acknowledging]
    acked_through = current.acked_through
    if start == current.acked_through:
        # Between the start and the first instruction still open, all are acknowledged, or
        # are being acknowledged by this beat: later walks need not read them again. Found
        # rows short of the limit mean the range was read to its end.
        acked_through = remaining[0].seq - 1 if remaining else current.last_seq
    return remaining[:PAGE_SIZE], len(remaining) > PAGE_SIZE, acked_through


def _beaten(
    ctx: Context,
    current: Session | None,
    args: SessionHeartbeatInput,
    now: datetime,
    acked_through: int,
) -> Session:
    reported: dict[str, Any] = {
        "status": args.status,
        "progress_percent": args.progressPercent,
        "current_step": args.currentStep,
        "step_index": args.stepIndex,
        "step_count": args.stepCount,
    }
    if current is None:
        return Session(
            namespace=ctx.caller.namespace,
            session_id=args.sessionId,
            owner=ctx.caller.principal_id,
            **{**reported, "status": args.status or "active"},
            created_at=now,
            last_beat_at=now,
            beats=1,
            acked_through=acked_through,
            last_seq=0,
            version=1,
        )
    # What a beat leaves out keeps its last reported value.
    changes = {name: value for name, value in reported.items() if value is not None}
    return current.model_copy(
        update={
            **changes,
            "last_beat_at": now,
            "beats": current.beats + 1,
            "acked_through": acked_through,
            "version": current.version + 1,
        }
    )


def session_heartbeat(ctx: Context, args: SessionHeartbeatInput) -> SessionHeartbeatResult:
    namespace = ctx.caller.namespace
    after = (
        _seq_cursor(args.instructionCursor, "beat", args.sessionId)
        if args.instructionCursor is not None
        else 0
    )
    ack_ids = list(dict.fromkeys(args.acknowledgedInstructionIds or []))
    for _ in range(_ATTEMPTS):
        now = to_ms(ctx.clock.now())
        current = ctx.store.get_session(namespace, args.sessionId)
        if current is not None and current.owner != ctx.caller.principal_id:
            raise not_found("session")
        received = _received(ctx.store, namespace, current, ack_ids)
        acknowledged = [
            i.model_copy(update={"state": "acknowledged", "acknowledged_at": now})
            for i in received
            if i.state == "delivered"
        ]
        page, more, acked_through = _page(ctx.store, current, after, {i.seq for i in received})
        delivered = [
            i.model_copy(
                update={
                    "state": "delivered",
                    "delivery_count": i.delivery_count + 1,
                    "last_delivered_at": now,
                }
            )
            for i in page
        ]
        session = _beaten(ctx, current, args, now, acked_through)
        result = SessionHeartbeatResult(
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
                for i in delivered
            ],
            nextInstructionCursor=(
                _encode_cursor(k="beat", s=session.session_id, a=page[-1].seq) if more else None
            ),
            acknowledged=ack_ids,
        )
        try:
            ctx.store.record_beat(
                session, delivered, acknowledged, completes=ctx.completion(result)
            )
        except ConditionFailed:
            continue
        return result
    raise conflict("the session kept changing while this beat ran; retry with the same key")


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


def post_instruction(ctx: Context, args: PostInstructionInput) -> InstructionView:
    if not _steers(ctx.caller):
        raise forbidden("only people and operators may post instructions")
    now = to_ms(ctx.clock.now())
    for _ in range(_ATTEMPTS):
        session = ctx.store.get_session(ctx.caller.namespace, args.session_id)
        if session is None:
            raise not_found("session")
        seq = session.last_seq + 1
        instruction = Instruction(
            namespace=session.namespace,
            session_id=session.session_id,
            seq=seq,
            id=new_instruction_id(seq),
            body=args.body,
            posted_by=ctx.caller.principal_id,
            posted_at=now,
            state="pending",
            delivery_count=0,
        )
        view = InstructionView.of(instruction)
        try:
            ctx.store.post_instruction(instruction, completes=ctx.completion(view))
        except ConditionFailed:
            continue
        return view
    raise conflict("others kept posting to this session meanwhile; retry with the same key")


# -- list_instructions --------------------------------------------------------------------
class ListInstructionsInput(StrictInput):
    session_id: SessionId
    cursor: Cursor | None = Field(
        default=None, description="The nextCursor of the previous page, to continue."
    )


class InstructionPage(Output):
    sessionId: str
    instructions: list[InstructionView] = Field(description="Oldest first, in posting order.")
    nextCursor: str | None = Field(description="Pass as cursor for the next page; null at the end.")


def list_instructions(ctx: Context, args: ListInstructionsInput) -> InstructionPage:
    session = ctx.store.get_session(ctx.caller.namespace, args.session_id)
    if session is None or not (_steers(ctx.caller) or session.owner == ctx.caller.principal_id):
        raise not_found("session")
    after = _seq_cursor(args.cursor, "instructions", args.session_id) if args.cursor else 0
    found = ctx.store.list_instructions(
        session.namespace, session.session_id, after, INSTRUCTIONS_PAGE + 1
    )
    page = found[:INSTRUCTIONS_PAGE]
    return InstructionPage(
        sessionId=session.session_id,
        instructions=[InstructionView.of(i) for i in page],
        nextCursor=(
            _encode_cursor(k="instructions", s=session.session_id, a=page[-1].seq)
            if len(found) > INSTRUCTIONS_PAGE
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
        default=None, description="The nextCursor of the previous page of the same query."
    )


class SessionPage(Output):
    sessions: list[SessionView] = Field(description="In session id order.")
    nextCursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end. A page may be short "
        "(even empty) and still have a cursor when stale_only skips many sessions."
    )
    staleAfterSeconds: int = STALE_AFTER_SECONDS


def list_sessions(ctx: Context, args: ListSessionsInput) -> SessionPage:
    if not _steers(ctx.caller):
        raise forbidden("only people and operators may list sessions")
    after: str | None = None
    if args.cursor is not None:
        fields = _decode_cursor(args.cursor, "sessions")
        after = fields.get("a")
        if not isinstance(after, str):
            raise invalid("the cursor is not one this tool returned")
        if fields.get("q") != args.stale_only:
            raise invalid("the cursor belongs to a different query")
    now = ctx.clock.now()
    shown: list[SessionView] = []
    examined = 0
    while len(shown) < SESSIONS_PAGE and examined < _SCAN_BUDGET:
        batch = ctx.store.list_sessions(ctx.caller.namespace, after, SESSIONS_PAGE)
        for session in batch:
            examined += 1
            after = session.session_id
            if not args.stale_only or session.stale(now):
                shown.append(SessionView.of(session, now))
                if len(shown) == SESSIONS_PAGE:
                    break
        if len(batch) < SESSIONS_PAGE and len(shown) < SESSIONS_PAGE:
            return SessionPage(sessions=shown, nextCursor=None)
    return SessionPage(
        sessions=shown, nextCursor=_encode_cursor(k="sessions", q=args.stale_only, a=after)
    )
