"""The authorization server's records in memory."""

from __future__ import annotations

from vigil.grants.records import Client, Code, Grant
from vigil.grants.store import OAuthStore
from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed


class MemoryOAuth(MemoryBase, OAuthStore):
    def __init__(self) -> None:
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.grants: dict[tuple[str, str], Grant] = {}
        super().__init__()

    def add_client(self, client: Client) -> None:
        with self._lock:
            if client.client_id in self.clients:
                raise ConditionFailed(client.client_id)
            self.clients[client.client_id] = client.model_copy()

    def get_client(self, client_id: str) -> Client | None:
        with self._lock:
            found = self.clients.get(client_id)
            return found.model_copy() if found else None

    def add_code(self, code: Code) -> None:
        with self._lock:
            if code.code_hash in self.codes:
                raise ConditionFailed(code.code_hash)
            self.codes[code.code_hash] = code.model_copy()

    def get_code(self, code_hash: str) -> Code | None:
        with self._lock:
            found = self.codes.get(code_hash)
            return found.model_copy() if found else None

    def redeem_code(self, code: Code) -> MemoryWrite:
        def check() -> None:
            stored = self.codes.get(code.code_hash)
            if stored is None or stored.redeemed:
                raise ConditionFailed(code.code_hash)

        def apply() -> None:
            self.codes[code.code_hash] = code.model_copy(update={"redeemed": True})

        return MemoryWrite(check, apply, (item_bytes(code.code_hash, code),))

    def get_grant(self, namespace: str, grant_id: str) -> Grant | None:
        with self._lock:
            found = self.grants.get((namespace, grant_id))
            return found.model_copy() if found else None

    def get_grants(self, namespace: str, grant_ids: list[str]) -> list[Grant]:
        with self._lock:
            found = (self.grants.get((namespace, i)) for i in set(grant_ids))
            return [grant.model_copy() for grant in found if grant is not None]

    def list_grants(self, namespace: str, start_after: str | None, limit: int) -> list[Grant]:
        with self._lock:
            found = sorted(
                (g for (ns, gid), g in self.grants.items() if ns == namespace),
                key=lambda grant: grant.id,
            )
        if start_after is not None:
            found = [grant for grant in found if grant.id > start_after]
        return [grant.model_copy() for grant in found[:limit]]

    def add_grant(self, grant: Grant) -> MemoryWrite:
        return self._versioned(self.grants, (grant.namespace, grant.id), grant, None)

    def save_grant(self, grant: Grant) -> MemoryWrite:
        return self._versioned(self.grants, (grant.namespace, grant.id), grant, grant.version - 1)
