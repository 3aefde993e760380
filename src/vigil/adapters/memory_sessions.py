"""Sessions and instructions in memory."""

from __future__ import annotations

from vigil.adapters.memory_base import MemoryBase
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.sessions import Instruction, Session
from vigil.ports.sessions import SessionPort
from vigil.store import ConditionFailed

_SessionKey = tuple[str, str]


class MemorySessions(MemoryBase, SessionPort):
    def __init__(self) -> None:
        self.sessions: dict[_SessionKey, Session] = {}
        self.instructions: dict[_SessionKey, dict[int, Instruction]] = {}
        super().__init__()

    def get_session(self, namespace: str, session_id: str) -> Session | None:
        with self._lock:
            found = self.sessions.get((namespace, session_id))
            return found.model_copy() if found else None

    def record_beat(
        self,
        session: Session,
        delivered: list[Instruction],
        acknowledged: list[Instruction],
        completes: IdempotencyRecord | None = None,
    ) -> None:
        with self._lock:
            key = (session.namespace, session.session_id)
            current = self.sessions.get(key)
            if current is None:
                if session.version != 1:
                    raise ConditionFailed(session.session_id)
            elif current.version != session.version - 1:
                raise ConditionFailed(session.session_id)
            stored = self.instructions.get(key, {})
            for acked in acknowledged:
                found = stored.get(acked.seq)
                if found is None or found.id != acked.id or found.state != "delivered":
                    raise ConditionFailed(acked.id)
            for handed in delivered:
                found = stored.get(handed.seq)
                if (
                    found is None
                    or found.id != handed.id
                    or found.state == "acknowledged"
                    or found.delivery_count != handed.delivery_count - 1
                ):
                    raise ConditionFailed(handed.id)
            self._check_completion(completes)

            last_seq = 0 if current is None else current.last_seq
            self.sessions[key] = session.model_copy(update={"last_seq": last_seq})
            for changed in [*acknowledged, *delivered]:
                stored[changed.seq] = changed.model_copy()
            self._apply_completion(completes)

    def post_instruction(
        self, instruction: Instruction, completes: IdempotencyRecord | None = None
    ) -> None:
        with self._lock:
            key = (instruction.namespace, instruction.session_id)
            session = self.sessions.get(key)
            if session is None or session.last_seq != instruction.seq - 1:
                raise ConditionFailed(instruction.session_id)
            self._check_completion(completes)
            self.sessions[key] = session.model_copy(update={"last_seq": instruction.seq})
            self.instructions.setdefault(key, {})[instruction.seq] = instruction.model_copy()
            self._apply_completion(completes)

    def get_instructions(
        self, namespace: str, session_id: str, seqs: list[int]
    ) -> list[Instruction]:
        with self._lock:
            stored = self.instructions.get((namespace, session_id), {})
            return [stored[seq].model_copy() for seq in sorted(set(seqs)) if seq in stored]

    def open_instructions(
        self, namespace: str, session_id: str, after: int, through: int, limit: int
    ) -> list[Instruction]:
        with self._lock:
            stored = self.instructions.get((namespace, session_id), {})
            found = [
                stored[seq].model_copy()
                for seq in sorted(stored)
                if after < seq <= through and stored[seq].state != "acknowledged"
            ]
            return found[:limit]

    def list_instructions(
        self, namespace: str, session_id: str, after: int, limit: int
    ) -> list[Instruction]:
        with self._lock:
            stored = self.instructions.get((namespace, session_id), {})
            return [stored[seq].model_copy() for seq in sorted(stored) if seq > after][:limit]

    def list_sessions(self, namespace: str, after: str | None, limit: int) -> list[Session]:
        with self._lock:
            found = sorted(
                (s for (ns, sid), s in self.sessions.items() if ns == namespace),
                key=lambda s: s.session_id,
            )
            if after is not None:
                found = [s for s in found if s.session_id > after]
            return [s.model_copy() for s in found[:limit]]
