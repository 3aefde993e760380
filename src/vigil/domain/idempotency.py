"""Idempotency records: same key and input give the first result; another input is refused."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from vigil.domain import Record

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


def fingerprint(tool: str, arguments: dict[str, Any]) -> str:
    canonical = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()
