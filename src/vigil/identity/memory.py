"""Namespaces, principals and the console's sign-ins in memory."""

from __future__ import annotations

from datetime import datetime

from vigil.identity.records import AttemptWindow, Namespace, Principal, SignInSession
from vigil.identity.store import IdentityStore, SignInStore
from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.principals import Kind
from vigil.kit.uow import ConditionFailed

SignInKey = tuple[str, str, str]


def _sign_in_key(session: SignInSession) -> SignInKey:
    return (session.namespace, session.principal_id, session.session_id)


class MemoryIdentity(MemoryBase, IdentityStore, SignInStore):
    def __init__(self) -> None:
        self.namespaces: dict[str, Namespace] = {}
        self.principals: dict[tuple[str, str], Principal] = {}
        self.sign_ins: dict[SignInKey, datetime] = {}  # each live session's end
        self.sign_in_attempts: dict[tuple[str, datetime], int] = {}
        super().__init__()

    def add_namespace(self, namespace: Namespace) -> MemoryWrite:
        def check() -> None:
            if namespace.name in self.namespaces:
                raise ConditionFailed(namespace.name)

        def apply() -> None:
            self.namespaces[namespace.name] = namespace.model_copy()

        return MemoryWrite(check, apply, (item_bytes(namespace.name, namespace),))

    def get_namespace(self, name: str) -> Namespace | None:
        with self._lock:
            found = self.namespaces.get(name)
            return found.model_copy() if found else None

    def get_principal(
        self, namespace: str, principal_id: str, *, consistent: bool = True
    ) -> Principal | None:
        with self._lock:
            found = self.principals.get((namespace, principal_id))
            return found.model_copy() if found else None

    def get_principals(self, namespace: str, principal_ids: list[str]) -> list[Principal]:
        with self._lock:
            found = (self.principals.get((namespace, i)) for i in set(principal_ids))
            return [p.model_copy() for p in found if p is not None]

    def add_principal(self, principal: Principal) -> MemoryWrite:
        key = (principal.namespace, principal.id)
        return self._versioned(self.principals, key, principal, None)

    def save_principal(self, principal: Principal) -> MemoryWrite:
        key = (principal.namespace, principal.id)
        return self._versioned(self.principals, key, principal, principal.version - 1)

    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        with self._lock:
            found = sorted(
                (p for (ns, _), p in self.principals.items() if ns == namespace and p.kind == kind),
                key=lambda p: p.id,
            )
        if start_after is not None:
            found = [p for p in found if p.id > start_after]
        return [p.model_copy() for p in found[:limit]]

    def open_sign_in(self, session: SignInSession) -> None:
        with self._lock:
            if _sign_in_key(session) in self.sign_ins:
                raise ConditionFailed(session.session_id)
            self.sign_ins[_sign_in_key(session)] = session.ends_at

    def sign_in_live(self, session: SignInSession, now: datetime) -> bool:
        with self._lock:
            ends_at = self.sign_ins.get(_sign_in_key(session))
            return ends_at is not None and ends_at > now

    def extend_sign_in(self, session: SignInSession, now: datetime) -> bool:
        with self._lock:
            if not self.sign_in_live(session, now):
                return False
            self.sign_ins[_sign_in_key(session)] = session.ends_at
            return True

    def end_sign_in(self, session: SignInSession) -> None:
        with self._lock:
            self.sign_ins.pop(_sign_in_key(session), None)

    def count_sign_in_attempt(self, counter: str, window: AttemptWindow, limit: int) -> bool:
        with self._lock:
            counted = self.sign_in_attempts.get((counter, window.starts_at), 0)
            if counted >= limit:
                return False
            self.sign_in_attempts[(counter, window.starts_at)] = counted + 1
            return True
