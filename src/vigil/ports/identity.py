"""Namespaces, principals and idempotency records."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.identity import Kind, Namespace, Principal


class IdentityPort(ABC):
    # Namespaces
    @abstractmethod
    def create_namespace(self, namespace: Namespace) -> None:
        """Raises ConditionFailed if it exists."""

    @abstractmethod
    def get_namespace(self, name: str) -> Namespace | None: ...

    # Principals
    @abstractmethod
    def get_principal(self, namespace: str, principal_id: str) -> Principal | None: ...

    @abstractmethod
    def create_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        """Raises ConditionFailed if the id is taken or ``completes`` is no longer ours."""

    @abstractmethod
    def update_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        """Stores ``principal`` if the stored version is ``principal.version - 1``."""

    @abstractmethod
    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        """Principals of one kind in id order, beginning after ``start_after``."""

    # Idempotency
    @abstractmethod
    def claim_idempotency(
        self, record: IdempotencyRecord, now: datetime
    ) -> IdempotencyRecord | None:
        """Stores a pending record unless a live one exists; returns the existing one if so.

        A pending record whose lock has lapsed is taken over (its attempt crashed).
        """

    @abstractmethod
    def complete_idempotency(self, record: IdempotencyRecord) -> None:
        """Marks a claim completed with its result, for tools whose work wrote nothing else."""

    @abstractmethod
    def release_idempotency(self, record: IdempotencyRecord) -> None:
        """Drops our pending claim after a failure, so a retry may run again."""
