"""Where namespaces and principals are kept, and what identity's use cases read and write."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.audit.store import AuditStore
from vigil.identity.records import Namespace, Principal
from vigil.kit.principals import Kind
from vigil.kit.uow import Write


class IdentityStore(ABC):
    @abstractmethod
    def add_namespace(self, namespace: Namespace) -> Write:
        """Creates the namespace; fails if it exists."""

    @abstractmethod
    def get_namespace(self, name: str) -> Namespace | None: ...

    @abstractmethod
    def get_principal(self, namespace: str, principal_id: str) -> Principal | None: ...

    @abstractmethod
    def get_principals(self, namespace: str, principal_ids: list[str]) -> list[Principal]:
        """The principals among ``principal_ids`` (at most 100), read consistently, in no
        particular order; an id that names nobody is left out."""

    @abstractmethod
    def add_principal(self, principal: Principal) -> Write:
        """Creates the principal; fails if its id is taken."""

    @abstractmethod
    def save_principal(self, principal: Principal) -> Write:
        """Replaces the principal if the stored version is ``principal.version - 1``."""

    @abstractmethod
    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        """Principals of one kind in id order, beginning after ``start_after``."""


class IdentityPorts(AuditStore, IdentityStore, ABC):
    """What identity's use cases use: the directory, and the audit trail that records an
    operator's changes to other principals."""
