"""What every tool shares: strict input models, the call context and idempotency."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from vigil.clock import Clock
from vigil.domain.idempotency import (
    LOCK_SECONDS,
    RETAIN_SECONDS,
    IdempotencyRecord,
    fingerprint,
)
from vigil.domain.identity import Caller
from vigil.errors import ErrorCode, VigilError, unavailable
from vigil.ports.mailboxes import MailboxQueues
from vigil.store import Store
from vigil.timers import Alarms

IdempotencyKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description=(
            "Retry key for this mutation. Reuse it, with the same arguments, to retry an outcome "
            "you did not see; a new intent needs a new key."
        ),
    ),
]


class StrictInput(BaseModel):
    """Inputs reject unknown fields and coercions: a wrong type is an error, not a guess."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)
    # The field that carries the retry key; a schema from elsewhere may spell it otherwise.
    idempotency_field: ClassVar[str] = "idempotency_key"


def idempotency_field(model: type[BaseModel]) -> str:
    return model.idempotency_field if issubclass(model, StrictInput) else "idempotency_key"


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


@dataclass
class Context:
    """Everything a tool needs for one call, and nothing ambient."""

    store: Store
    clock: Clock
    caller: Caller
    queues: MailboxQueues | None = None
    alarms: Alarms | None = None
    claim: IdempotencyRecord | None = None
    claim_used: bool = field(default=False)

    def completion(self, stored_result: BaseModel) -> IdempotencyRecord | None:
        """The completed idempotency record to write atomically with the tool's own write."""
        if self.claim is None:
            return None
        self.claim_used = True
        return self.claim.model_copy(
            update={"status": "completed", "result": stored_result.model_dump(mode="json")}
        )


def claim_key(
    ctx: Context, tool: str, key: str, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """Claims ``key`` for this call, or returns the first call's stored result to replay."""
    now = ctx.clock.now()
    record = IdempotencyRecord(
        namespace=ctx.caller.namespace,
        principal_id=ctx.caller.principal_id,
        tool=tool,
        key=key,
        fingerprint=fingerprint(tool, arguments),
        status="pending",
        token=secrets.token_hex(16),
        locked_until=now + timedelta(seconds=LOCK_SECONDS),
        expires_at=now + timedelta(seconds=RETAIN_SECONDS),
    )
    existing = ctx.store.claim_idempotency(record, now)
    if existing is None:
        ctx.claim = record
        return None
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
    return existing.result


Scope = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="A unit of work, the scope of a dead-man switch, e.g. permit-review-2026-08.",
    ),
]
