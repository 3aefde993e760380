"""Where the authorization server keeps its clients, codes and grants."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.audit.store import AuditStore
from vigil.grants.records import Client, Code, Grant
from vigil.identity.store import IdentityStore
from vigil.kit.uow import Write


class OAuthStore(ABC):
    @abstractmethod
    def add_client(self, client: Client) -> None:
        """Keeps a client registered here, now; ConditionFailed if its id is taken."""

    @abstractmethod
    def get_client(self, client_id: str) -> Client | None: ...

    @abstractmethod
    def add_code(self, code: Code) -> None:
        """Keeps a consent's code, now, until it expires."""

    @abstractmethod
    def get_code(self, code_hash: str) -> Code | None:
        """The code, redeemed or not, until it expires."""

    @abstractmethod
    def redeem_code(self, code: Code) -> Write:
        """Marks the code redeemed if it is stored and not redeemed yet."""

    @abstractmethod
    def get_grant(self, namespace: str, grant_id: str) -> Grant | None: ...

    @abstractmethod
    def get_grants(self, namespace: str, grant_ids: list[str]) -> list[Grant]:
        """The grants among ``grant_ids`` (at most 100), in no particular order."""

    @abstractmethod
    def list_grants(self, namespace: str, start_after: str | None, limit: int) -> list[Grant]:
        """The namespace's grants in id order, beginning after ``start_after``."""

    @abstractmethod
    def add_grant(self, grant: Grant) -> Write:
        """Creates the grant; fails if its id is taken."""

    @abstractmethod
    def save_grant(self, grant: Grant) -> Write:
        """Replaces the grant if the stored version is ``grant.version - 1``."""


class OAuthPorts(AuditStore, IdentityStore, OAuthStore, ABC):
    """What the authorization server writes together: a grant, its principal's list of live
    grants, and the audit trail."""
