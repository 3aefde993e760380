"""What a session tells people of: ``session.stale``, once per silence."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from vigil.kit.events import EventData
from vigil.sessions.records import STALE_AFTER_SECONDS, Session, SessionStatus


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
