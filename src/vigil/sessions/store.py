"""Where sessions and the instructions posted to them are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from vigil.kit.uow import Committer, Write
from vigil.sessions.records import Instruction, Session


class SessionStore(ABC):
    @abstractmethod
    def get_session(self, namespace: str, session_id: str) -> Session | None: ...

    @abstractmethod
    def save_beat(
        self, session: Session, delivered: list[Instruction], acknowledged: list[Instruction]
    ) -> Write:
        """Stores one beat. ``session`` is created, with its entry in the namespace's list,
        when its version is 1 and it does not exist; otherwise it replaces the stored one if
        that is at version ``session.version - 1``, leaving ``last_seq`` as it is stored.
        Each of ``acknowledged`` becomes acknowledged if it is stored as delivered; each of
        ``delivered`` is stored with its state, count and time if its stored count is one less
        and it is not acknowledged. The commit fails if any of that does not hold.

        Atomic, except that a beat too large for one transaction applies its acknowledgments
        first: they can only be repeated, never undone, so a failure after them leaves nothing
        that a retry would do differently."""

    @abstractmethod
    def save_instruction(self, instruction: Instruction) -> Write:
        """Stores ``instruction`` and raises its session's ``last_seq`` to ``instruction.seq``,
        atomically, if the session exists with ``last_seq`` one less; the commit fails
        otherwise (another post took the number first)."""

    @abstractmethod
    def get_instructions(
        self, namespace: str, session_id: str, seqs: list[int]
    ) -> list[Instruction]:
        """The stored instructions among numbers ``seqs`` (at most 100), read consistently."""

    @abstractmethod
    def open_instructions(
        self, namespace: str, session_id: str, after: int, through: int, limit: int
    ) -> list[Instruction]:
        """Up to ``limit`` instructions numbered after ``after`` and up to ``through`` that are
        not acknowledged, in number order, read consistently."""

    @abstractmethod
    def list_instructions(
        self, namespace: str, session_id: str, after: int, limit: int
    ) -> list[Instruction]:
        """Up to ``limit`` instructions in any state, numbered after ``after``, in order."""

    @abstractmethod
    def list_sessions(self, namespace: str, after: str | None, limit: int) -> list[Session]:
        """Up to ``limit`` sessions of the namespace in session id order, beginning after
        ``after``, read consistently."""


class WatchPorts(Committer, SessionStore, ABC):
    """What a session's watch reads and writes: the session, and its moved watch."""


class Audience(Protocol):
    def wanted(self, namespace: str, event_type: str) -> bool:
        """Whether anyone is told of ``namespace``'s events of ``event_type`` that have no
        scope."""
        ...
