"""Where progress reports are kept, and what progress asks of the dead-man switches: who holds
a scope, so that only its holder's report becomes the scope's progress."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.identity.store import IdentityStore
from vigil.kit.uow import Write
from vigil.progress.records import ProgressReport


class ProgressStore(ABC):
    @abstractmethod
    def save_progress(self, report: ProgressReport, for_scope: bool) -> Write:
        """Stores ``report`` as its reporter's latest and, if ``for_scope`` (it names a scope
        whose holder made it), as the scope's latest. Fails, storing nothing, if either place
        holds a report made later."""

    @abstractmethod
    def latest_progress(self, namespace: str, principal_id: str) -> ProgressReport | None:
        """The latest report made by ``principal_id``, whatever its scope."""

    @abstractmethod
    def scope_progress(self, namespace: str, scope: str) -> ProgressReport | None:
        """The latest report made for ``scope``, by whoever made it."""


class ScopeHolders(ABC):
    """Who holds a scope: the principal that armed its dead-man switch, as long as the switch
    has not fired (the switches keep it)."""

    @abstractmethod
    def scope_holder(self, namespace: str, scope: str) -> str | None:
        """The principal holding ``scope``'s switch, armed or disarmed by it and not fired;
        None when no switch of the scope is held."""

    @abstractmethod
    def require_holder(self, namespace: str, scope: str, holder: str) -> Write:
        """Changes nothing, and holds only while ``scope``'s switch is held by ``holder``:
        armed or disarmed by it, not fired. Committed with other writes, it makes them depend
        on that."""


class ProgressPorts(IdentityStore, ProgressStore, ScopeHolders, ABC):
    """What progress's use cases use: the reports, who holds a scope, and the directory (to
    tell a principal with no report from no principal)."""
