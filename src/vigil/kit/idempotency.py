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
from vigil.kit.sealing import Sealed, seal, unseal

# How long a claimed key stays locked while its first attempt runs; after that a retry may
# take it over (the first attempt crashed). Longer than the API function's timeout.
LOCK_SECONDS = 60
# How long a completed result is replayed.
RETAIN_SECONDS = 24 * 3600
# How long a call that replaced its caller's credential stays replayable with the replaced one.
HANDOVER_SECONDS = 600


class Handover(Record):
    """The full result of a call that replaced the credential it was made with (a rotation of
    one's own secret), sealed under that credential: a retry after a lost answer can only be
    made with it, and gets this result back until ``until``, and nothing else (vigil.app)."""

    until: datetime
    sealed: Sealed


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
    handover: Handover | None = None

    def completed(
        self, result: dict[str, Any], handover: Handover | None = None
    ) -> IdempotencyRecord:
        """This claim, completed with the result that every replay of its key returns, and the
        handover of a call that replaced its caller's credential."""
        return self.model_copy(
            update={"status": "completed", "result": result, "handover": handover}
        )

    def _handover_context(self, successor_hash: str) -> str:
        # Bound to this key of this caller, to this call (the fingerprint), and to the
        # credential that replaced the caller's: once that is replaced in turn, or the
        # principal is gone, nothing opens.
        parts = (self.namespace, self.principal_id, self.tool, self.key, self.fingerprint)
        return "\n".join(("vigil handover 1", *parts, successor_hash))

    def handing_over(
        self, credential: str, result: dict[str, Any], successor_hash: str, until: datetime
    ) -> Handover:
        """``result`` sealed under ``credential``, which the call replaced with the credential
        whose digest is ``successor_hash``, for a retry made with it until ``until``."""
        text = json.dumps(result, separators=(",", ":"))
        return Handover(
            until=until, sealed=seal(credential, text, self._handover_context(successor_hash))
        )

    def handed_over(
        self, credential: str, successor_hash: str, now: datetime
    ) -> dict[str, Any] | None:
        """The result this record hands over to ``credential``: None unless it holds a handover
        still open at ``now``, sealed under ``credential``, whose successor is still the
        principal's credential (``successor_hash``, its digest now)."""
        if self.handover is None or self.handover.until <= now:
            return None
        text = unseal(credential, self.handover.sealed, self._handover_context(successor_hash))
        return None if text is None else dict(json.loads(text))


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

    @abstractmethod
    def read_idempotency(
        self, namespace: str, principal_id: str, tool: str, key: str
    ) -> IdempotencyRecord | None:
        """The record of ``key``, as stored, whatever its state; it writes nothing."""


def mismatch() -> VigilError:
    return VigilError(
        ErrorCode.IDEMPOTENCY_MISMATCH,
        "this idempotency key was used with other arguments; a new intent needs a new key",
    )


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
        raise mismatch()
    if existing.status == "pending":
        raise unavailable(
            "the first call with this idempotency key is still running; retry shortly"
        )
    assert existing.result is not None
    return None, existing.result
