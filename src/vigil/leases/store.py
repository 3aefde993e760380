"""Where leases are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.kit.uow import Count, Write
from vigil.leases.records import Lease


def scope_counts(
    namespace: str, before: str | None, after: str | None, limit: int | None
) -> tuple[Count, ...]:
    """How a lease moving from held in scope ``before`` to held in scope ``after`` (None: not
    held in a scope) changes the scopes' counts of held leases; joining a scope holds only
    within ``limit``."""
    if before == after:
        return ()
    counts = []
    if after is not None:
        counts.append(Count(f"NS#{namespace}#SCOPE#{after}", "COUNT", "held", 1, limit))
    if before is not None:
        counts.append(Count(f"NS#{namespace}#SCOPE#{before}", "COUNT", "held", -1))
    return tuple(counts)


class LeaseStore(ABC):
    @abstractmethod
    def get_lease(self, namespace: str, resource: str) -> Lease | None: ...

    @abstractmethod
    def save_lease(
        self, lease: Lease, expected_version: int | None, scope_limit: int | None = None
    ) -> Write:
        """Stores ``lease`` if the stored version is ``expected_version`` (None: no lease yet).

        Keeps the scope index consistent in the same atomic step: a held lease with a scope is
        listed by ``scope_leases``; a released one, or one whose scope changed, is not. Each
        scope's count of held leases (``scope_held``) moves with it; a lease joining a scope
        holds only while that count stays within ``scope_limit``.
        """

    @abstractmethod
    def scope_held(self, namespace: str, scope: str) -> int:
        """How many leases are held with ``scope``, lapsed ones included, as counted."""

    @abstractmethod
    def scope_leases(
        self, namespace: str, scope: str, after: str | None = None, limit: int | None = None
    ) -> list[Lease]:
        """The held leases of a scope in resource order, read consistently: those after the
        resource ``after``, at most ``limit`` of them (a dead-man switch releases them a batch
        at a time, resume_packet lists them a page at a time)."""

    @abstractmethod
    def unscoped_leases_held_by(self, namespace: str, holder: str) -> int:
        """How many held leases ``holder`` has without a scope: the switch's blind spot.

        May lag by a moment (it reads an index); it is reported, never acted on."""
