"""What a session tells of: to people, ``session.stale``, once per silence; to its agent, an
instruction posted to it."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from vigil.kit.events import EventData
from vigil.sessions.records import STALE_AFTER_SECONDS, Instruction, Session, SessionStatus


class SessionStale(EventData):
    """A working agent's session has not beaten for longer than stale_after_seconds."""

    session_id: str
    owner: str = Field(description="Principal id of the agent whose session it is.")
    status: SessionStatus = Field(description="The status its last beat reported.")
    last_beat_at: AwareDatetime
    stale_after_seconds: int

    @classmethod
    def of(cls, session: Session) -> SessionStale:
        return cls(
            session_id=session.session_id,
            owner=session.owner,
            status=session.status,
            last_beat_at=session.last_beat_at,
            stale_after_seconds=STALE_AFTER_SECONDS,
        )

    def identity(self) -> tuple[str, ...]:
        # A session goes stale once per silence: a beat and a new silence is a new event.
        return (self.session_id, self.last_beat_at.isoformat())


class InstructionPosted(EventData):
    """A person or an operator posted an instruction to an agent's session. Its text is for
    ``session_heartbeat`` to hand out, acknowledged: the event says only that it waits."""

    session_owner: str = Field(description="Principal id of the agent whose session it is.")
    session_id: str
    instruction_id: str
    posted_by: str = Field(description="Principal id of who posted it.")
    posted_at: AwareDatetime

    @classmethod
    def of(cls, session: Session, instruction: Instruction) -> InstructionPosted:
        return cls(
            session_owner=session.owner,
            session_id=session.session_id,
            instruction_id=instruction.id,
            posted_by=instruction.posted_by,
            posted_at=instruction.posted_at,
        )

    def identity(self) -> tuple[str, ...]:
        return (self.session_id, self.instruction_id)

    def readers(self) -> tuple[str, ...]:
        return (self.session_owner,)
