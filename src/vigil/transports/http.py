"""HTTP primitives shared by the transports: a response type and header helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class HttpResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    cookies: list[str] = field(default_factory=list)  # Set-Cookie values, one each

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> HttpResponse:
        return cls(
            status,
            # ASCII with escapes: valid whatever a caller echoed into it, a lone surrogate too.
            json.dumps(payload, separators=(",", ":")).encode(),
            {"content-type": "application/json", **(headers or {})},
        )


@dataclass
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    request_id: str | None = None
    query: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)

    def bearer(self) -> str | None:
        value = self.headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None
