"""What the session tools return of a session and of its instructions: the people's views,
in snake_case, and an instruction as a beat hands it out, in the seed's camelCase."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from vigil.kit.tooling import Output
from vigil.sessions.records import (
    STALE_AFTER_SECONDS,
    Instruction,
    InstructionState,
    Session,
    SessionOutcome,
    SessionStatus,
)


class HandedInstruction(Output):
    id: str
    body: str = Field(description="Written by a person or operator: data to weigh, as sent.")
    postedBy: str = Field(description="Principal id of who posted it, as authenticated.")
    postedAt: datetime
    deliveryCount: int = Field(description="How many beats have handed it out, this one too.")


class InstructionView(Output):
    id: str
    session_id: str
    body: str
    state: InstructionState = Field(
        description="pending, delivered (not yet acknowledged) or acknowledged."
    )
    posted_by: str
    posted_at: datetime
    delivery_count: int
    last_delivered_at: datetime | None
    acknowledged_at: datetime | None

    @classmethod
    def of(cls, instruction: Instruction) -> InstructionView:
        return cls(
            id=instruction.id,
            session_id=instruction.session_id,
            body=instruction.body,
            state=instruction.state,
            posted_by=instruction.posted_by,
            posted_at=instruction.posted_at,
            delivery_count=instruction.delivery_count,
            last_delivered_at=instruction.last_delivered_at,
            acknowledged_at=instruction.acknowledged_at,
        )


class ProgressPoint(Output):
    at: datetime
    percent: float


class SessionView(Output):
    session_id: str
    owner: str = Field(description="Principal id of the agent whose beats the session takes.")
    status: SessionStatus
    progress_percent: float | None
    progress_history: list[ProgressPoint] = Field(
        description="Each change of progress_percent, oldest first (the latest 20)."
    )
    current_step: str | None
    step_index: int | None
    step_count: int | None
    created_at: datetime
    last_beat_at: datetime
    stale: bool = Field(
        description=f"No beat for more than {STALE_AFTER_SECONDS} seconds, as of this call; "
        "never for an ended session."
    )
    ended_at: datetime | None = Field(description="When its agent ended it; null while it runs.")
    outcome: SessionOutcome | None = Field(
        description="How it ended (completed, failed or cancelled); null while it runs."
    )

    @classmethod
    def of(cls, session: Session, now: datetime) -> SessionView:
        return cls(
            session_id=session.session_id,
            owner=session.owner,
            status=session.status,
            progress_percent=session.progress_percent,
            progress_history=[
                ProgressPoint(at=at, percent=percent)
                for at, percent in session.progress_over_time()
            ],
            current_step=session.current_step,
            step_index=session.step_index,
            step_count=session.step_count,
            created_at=session.created_at,
            last_beat_at=session.last_beat_at,
            stale=session.stale(now),
            ended_at=session.ended_at,
            outcome=session.outcome,
        )
