"""Sessions: what a working agent reports about itself on each beat, and the instructions that
people send it.

Instructions of a session are numbered 1, 2, 3… in the order they were posted. A number is
taken and its instruction stored in one atomic step, conditional on the session's last number,
so whenever a session shows ``last_seq`` = n, instructions 1..n are all stored: a reader that
takes the session first and then reads up to n can miss nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from vigil.clock import iso
from vigil.errors import conflict
from vigil.kit.principals import number_in, numbered_id
from vigil.kit.records import Record, Versioned

SessionStatus = Literal["active", "waiting", "blocked"]
# How a session ended, said by its agent with end_session: the seed's statuses are all of a
# session still at work, so the end is a call of its own rather than a status.
SessionOutcome = Literal["completed", "failed", "cancelled"]
InstructionState = Literal["pending", "delivered", "acknowledged"]

# Instructions handed out by one beat.
PAGE_SIZE = 10
# A session not beaten for longer than this is shown as stale to the people watching it.
STALE_AFTER_SECONDS = 120
MAX_BODY_BYTES = 8 * 1024
# What an agent says it is doing: as long as an instruction may be.
MAX_STEP_BYTES = MAX_BODY_BYTES
# The progress a session keeps over time: each change of its percentage, the latest this many,
# as (seconds since the session began, percent): a picture's worth, in under 300 bytes.
PROGRESS_POINTS = 20


class Session(Versioned):
    namespace: str
    session_id: str
    owner: str  # the principal whose first beat created it; only it may beat it
    status: SessionStatus
    progress_percent: float | None
    current_step: str | None
    step_index: int | None
    step_count: int | None
    created_at: datetime
    last_beat_at: datetime
    beats: int
    acked_through: int  # every instruction numbered up to this one is acknowledged
    last_seq: int  # the number of the newest instruction; posting moves only this
    # ``version`` is moved by beats, and by the staleness watch when it moves (about once a
    # stale-after period), never by posting, which so never conflicts with a beat.
    # When the timer that watches it for staleness is due; None while none is armed (a beat
    # then arms one).
    watch_due: datetime | None = None
    # Set once, by its agent's end_session: an ended session is never stale and takes no
    # more beats or instructions.
    ended_at: datetime | None = None
    outcome: SessionOutcome | None = None
    progress_points: list[tuple[int, float]] = Field(default_factory=list)

    def progress_over_time(self) -> list[tuple[datetime, float]]:
        """Each change of the reported percentage, oldest first (the latest PROGRESS_POINTS)."""
        return [
            (self.created_at + timedelta(seconds=s), percent) for s, percent in self.progress_points
        ]

    def _progressed(self, percent: float | None, now: datetime) -> list[tuple[int, float]]:
        points = self.progress_points
        if percent is None or (points and points[-1][1] == percent):
            return points
        elapsed = int((now - self.created_at).total_seconds())
        return [*points, (elapsed, percent)][-PROGRESS_POINTS:]

    def stale(self, now: datetime) -> bool:
        if self.ended_at is not None:
            return False
        return now - self.last_beat_at > timedelta(seconds=STALE_AFTER_SECONDS)

    @property
    def stale_at(self) -> datetime:
        """When it goes stale if it is not beaten again."""
        return self.last_beat_at + timedelta(seconds=STALE_AFTER_SECONDS, milliseconds=1)

    @classmethod
    def begun(
        cls,
        namespace: str,
        session_id: str,
        owner: str,
        reported: dict[str, Any],
        acked_through: int,
        now: datetime,
    ) -> Session:
        """The session its owner's first beat creates: active unless the beat says otherwise."""
        percent = reported.get("progress_percent")
        return cls(
            namespace=namespace,
            session_id=session_id,
            owner=owner,
            **{**reported, "status": reported.get("status") or "active"},
            created_at=now,
            last_beat_at=now,
            beats=1,
            acked_through=acked_through,
            last_seq=0,
            version=1,
            progress_points=[] if percent is None else [(0, percent)],
        )

    def beaten(self, reported: dict[str, Any], acked_through: int, now: datetime) -> Session:
        """A later beat: what it leaves out (None) keeps its last reported value."""
        self.require_open("takes no more beats; name a new session to start other work")
        changes = {name: value for name, value in reported.items() if value is not None}
        return self.changed(
            **changes,
            last_beat_at=now,
            beats=self.beats + 1,
            acked_through=acked_through,
            progress_points=self._progressed(reported.get("progress_percent"), now),
        )

    def ended(self, outcome: SessionOutcome, now: datetime) -> Session:
        """The session's end: its watch is let go (a timer still armed finds no watch to
        move and stops), and it is never stale again."""
        self.require_open("cannot end again")
        return self.changed(ended_at=now, outcome=outcome, watch_due=None)

    def require_open(self, what: str) -> None:
        """Refuses a change to a session that has ended: ``what`` it would have been."""
        if self.ended_at is not None:
            raise conflict(
                f"the session ended ({self.outcome}) at {iso(self.ended_at)} and {what}",
                ended_at=iso(self.ended_at),
                outcome=self.outcome,
            )


class Instruction(Record):
    namespace: str
    session_id: str
    seq: int
    id: str
    body: str
    posted_by: str  # principal id of the person or operator
    posted_at: datetime
    state: InstructionState
    delivery_count: int
    last_delivered_at: datetime | None = None
    acknowledged_at: datetime | None = None

    @classmethod
    def posted(cls, session: Session, body: str, posted_by: str, now: datetime) -> Instruction:
        """The session's next instruction, numbered after its newest."""
        seq = session.last_seq + 1
        return cls(
            namespace=session.namespace,
            session_id=session.session_id,
            seq=seq,
            id=new_instruction_id(seq),
            body=body,
            posted_by=posted_by,
            posted_at=now,
            state="pending",
            delivery_count=0,
        )

    def handed_out(self, now: datetime) -> Instruction:
        return self.model_copy(
            update={
                "state": "delivered",
                "delivery_count": self.delivery_count + 1,
                "last_delivered_at": now,
            }
        )

    def acknowledged(self, now: datetime) -> Instruction:
        return self.model_copy(update={"state": "acknowledged", "acknowledged_at": now})


def new_instruction_id(seq: int) -> str:
    """An id that names its sequence number, so acknowledging it is one keyed read."""
    return numbered_id("ins", seq)


def instruction_seq(instruction_id: str) -> int | None:
    return number_in("ins", instruction_id)
