"""Sessions and instructions in memory."""

from __future__ import annotations

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed
from vigil.sessions.records import Instruction, Session
from vigil.sessions.store import SessionStore

_SessionKey = tuple[str, str]


class MemorySessions(MemoryBase, SessionStore):
    def __init__(self) -> None:
        self.sessions: dict[_SessionKey, Session] = {}
        self.instructions: dict[_SessionKey, dict[int, Instruction]] = {}
        super().__init__()

    def get_session(self, namespace: str, session_id: str) -> Session | None:
        with self._lock:
            found = self.sessions.get((namespace, session_id))
            return found.model_copy() if found else None

    def save_beat(
        self, session: Session, delivered: list[Instruction], acknowledged: list[Instruction]
    ) -> MemoryWrite:
        key = (session.namespace, session.session_id)

        def check() -> None:
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

        def apply() -> None:
            current = self.sessions.get(key)
            last_seq = 0 if current is None else current.last_seq
            self.sessions[key] = session.model_copy(update={"last_seq": last_seq})
            stored = self.instructions.setdefault(key, {})
            for changed in [*acknowledged, *delivered]:
                stored[changed.seq] = changed.model_copy()

        return MemoryWrite(
            check,
            apply,
            (
                item_bytes(key, session),
                *((item_bytes(key),) if session.version == 1 else ()),  # the listing entry
                *(item_bytes(key, i) for i in delivered),
            ),
            ahead=tuple(item_bytes(key, i) for i in acknowledged),
        )

    def save_instruction(self, instruction: Instruction) -> MemoryWrite:
        key = (instruction.namespace, instruction.session_id)

        def check() -> None:
            session = self.sessions.get(key)
            if session is None or session.last_seq != instruction.seq - 1:
                raise ConditionFailed(instruction.session_id)

        def apply() -> None:
            self.sessions[key] = self.sessions[key].model_copy(update={"last_seq": instruction.seq})
            self.instructions.setdefault(key, {})[instruction.seq] = instruction.model_copy()

        return MemoryWrite(check, apply, (item_bytes(key), item_bytes(key, instruction)))

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
