"""Where namespaces and principals are kept, and what identity's use cases read and write;
where the console's sign-ins are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from vigil.audit.store import AuditStore
from vigil.identity.records import AttemptWindow, Namespace, Principal, SignInSession
from vigil.kit.principals import Kind
from vigil.kit.uow import Write


class IdentityStore(ABC):
    @abstractmethod
    def add_namespace(self, namespace: Namespace) -> Write:
        """Creates the namespace; fails if it exists."""

    @abstractmethod
    def get_namespace(self, name: str) -> Namespace | None: ...

    @abstractmethod
    def get_principal(
        self, namespace: str, principal_id: str, *, consistent: bool = True
    ) -> Principal | None:
        """The principal, or None; ``consistent=False`` reads for half the price and may not
        yet show the latest write (DynamoDB's eventual consistency, typically under a second)."""

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


class SignInStore(ABC):
    """The console's sessions and the attempts to sign in, kept where every instance of the
    function sees them. Each method is one conditional write or one read of its own, made at
    once: a sign-in is no tool call, so it has no unit of work to join."""

    @abstractmethod
    def open_sign_in(self, session: SignInSession) -> None:
        """Keeps ``session`` live until its end; ConditionFailed if its id is taken."""

    @abstractmethod
    def sign_in_live(self, session: SignInSession, now: datetime) -> bool:
        """Whether ``session`` was opened, not ended, and its end is after ``now``."""

    @abstractmethod
    def extend_sign_in(self, session: SignInSession, now: datetime) -> bool:
        """Moves a live session's end to ``session.ends_at``; False, changing nothing, if it
        is not live at ``now``."""

    @abstractmethod
    def end_sign_in(self, session: SignInSession) -> None:
        """Ends ``session`` (nothing to do if it has ended already)."""

    @abstractmethod
    def count_sign_in_attempt(self, counter: str, window: AttemptWindow, limit: int) -> bool:
        """Counts one attempt of ``counter`` in ``window``; False, counting nothing, if
        ``limit`` attempts were counted in it already."""
