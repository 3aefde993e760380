"""What the session tools return of a session and of its instructions: the people's views,
and an instruction as a beat hands it out, all in the seed's camelCase."""

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
    sessionId: str
    body: str
    state: InstructionState = Field(
        description="pending, delivered (not yet acknowledged) or acknowledged."
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


class ProgressPoint(Output):
    at: datetime
    percent: float


class SessionView(Output):
    sessionId: str
    owner: str = Field(description="Principal id of the agent whose beats the session takes.")
    status: SessionStatus
    progressPercent: float | None
    progressHistory: list[ProgressPoint] = Field(
        description="Each change of progressPercent, oldest first (the latest 20)."
    )
    currentStep: str | None
    stepIndex: int | None
    stepCount: int | None
    createdAt: datetime
    lastBeatAt: datetime
    stale: bool = Field(
        description=f"No beat for more than {STALE_AFTER_SECONDS} seconds, as of this call; "
        "never for an ended session."
    )
    endedAt: datetime | None = Field(description="When its agent ended it; null while it runs.")
    outcome: SessionOutcome | None = Field(
        description="How it ended (completed, failed or cancelled); null while it runs."
    )

    @classmethod
    def of(cls, session: Session, now: datetime) -> SessionView:
        return cls(
            sessionId=session.session_id,
            owner=session.owner,
            status=session.status,
            progressPercent=session.progress_percent,
            progressHistory=[
                ProgressPoint(at=at, percent=percent)
                for at, percent in session.progress_over_time()
            ],
            currentStep=session.current_step,
            stepIndex=session.step_index,
            stepCount=session.step_count,
            createdAt=session.created_at,
            lastBeatAt=session.last_beat_at,
            stale=session.stale(now),
            endedAt=session.ended_at,
            outcome=session.outcome,
        )
