"""Idempotency records: same key and input give the first result; another input is refused."""

from __future__ import annotations

import hashlib
import json
import secrets
from abc import ABC, abstractmethod
from datetime import datetime, timedelta
from typing import Any, Literal

from vigil.errors import ErrorCode, VigilError, unavailable
from vigil.kit.records import Record

# How long a claimed key stays locked while its first attempt runs; after that a retry may
# take it over (the first attempt crashed). Longer than the API function's timeout.
LOCK_SECONDS = 60
# How long a completed result is replayed.
RETAIN_SECONDS = 24 * 3600


class IdempotencyRecord(Record):
    namespace: str
    principal_id: str
    tool: str
    key: str
    fingerprint: str
    status: Literal["pending", "completed"]
    token: str
    locked_until: datetime
    expires_at: datetime
    result: dict[str, Any] | None = None

    def completed(self, result: dict[str, Any]) -> IdempotencyRecord:
        """This claim, completed with the result that every replay of its key returns."""
        return self.model_copy(update={"status": "completed", "result": result})


def fingerprint(tool: str, arguments: dict[str, Any]) -> str:
    canonical = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class IdempotencyStore(ABC):
    """Where idempotency keys are claimed. Completing a claim is part of a unit of work's
    commit (vigil.kit.uow), never a write of its own kind."""

    @abstractmethod
    def claim_idempotency(
        self, record: IdempotencyRecord, now: datetime
    ) -> IdempotencyRecord | None:
        """Stores a pending record unless a live one exists; returns the existing one if so.

        A pending record whose lock has lapsed is taken over (its attempt crashed).
        """

    @abstractmethod
    def release_idempotency(self, record: IdempotencyRecord) -> None:
        """Drops our pending claim after a failure, so a retry may run again."""


def claim(
    store: IdempotencyStore,
    namespace: str,
    principal_id: str,
    tool: str,
    key: str,
    arguments: dict[str, Any],
    now: datetime,
) -> tuple[IdempotencyRecord | None, dict[str, Any] | None]:
    """Claims ``key`` for this call: (our pending claim, None), or (None, the first call's
    result) to replay. The same key with other arguments is idempotency_mismatch; a first
    call still running is unavailable, to retry shortly."""
    record = IdempotencyRecord(
        namespace=namespace,
        principal_id=principal_id,
        tool=tool,
        key=key,
        fingerprint=fingerprint(tool, arguments),
        status="pending",
        token=secrets.token_hex(16),
        locked_until=now + timedelta(seconds=LOCK_SECONDS),
        expires_at=now + timedelta(seconds=RETAIN_SECONDS),
    )
    existing = store.claim_idempotency(record, now)
    if existing is None:
        return record, None
    if existing.fingerprint != record.fingerprint:
        raise VigilError(
            ErrorCode.IDEMPOTENCY_MISMATCH,
            "this idempotency key was used with other arguments; a new intent needs a new key",
        )
    if existing.status == "pending":
        raise unavailable(
            "the first call with this idempotency key is still running; retry shortly"
        )
    assert existing.result is not None
    return None, existing.result
