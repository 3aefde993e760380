"""Leases."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.leases import Lease


class LeasePort(ABC):
    @abstractmethod
    def get_lease(self, namespace: str, resource: str) -> Lease | None: ...

    @abstractmethod
    def put_lease(
        self, lease: Lease, expected_version: int | None, completes: IdempotencyRecord | None = None
    ) -> None:
        """Stores ``lease`` if the stored version is ``expected_version`` (None: no lease yet).

        Keeps the scope index consistent in the same atomic step: a held lease with a scope is
        listed by ``scope_leases``; a released one, or one whose scope changed, is not.
        Raises ConditionFailed otherwise.
        """

    @abstractmethod
    def scope_leases(self, namespace: str, scope: str) -> list[Lease]:
        """The held leases of a scope, read consistently (the dead-man switch releases them)."""

    @abstractmethod
    def unscoped_leases_held_by(self, namespace: str, holder: str) -> int:
        """How many held leases ``holder`` has without a scope: the switch's blind spot.

        May lag by a moment (it reads an index); it is reported, never acted on."""
