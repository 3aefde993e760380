"""Every error a caller can see, with its stable code and its HTTP status.

Transports never invent errors of their own: they map a ``VigilError`` through ``HTTP_STATUS``
and everything else to ``unavailable`` without detail.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_ARGUMENT = "invalid_argument"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    VERSION_CONFLICT = "version_conflict"
    STALE_GENERATION = "stale_generation"
    IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
    LIMIT_EXCEEDED = "limit_exceeded"
    THROTTLED = "throttled"
    UNAVAILABLE = "unavailable"


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.VERSION_CONFLICT: 409,
    ErrorCode.STALE_GENERATION: 409,
    ErrorCode.IDEMPOTENCY_MISMATCH: 422,
    ErrorCode.LIMIT_EXCEEDED: 413,
    ErrorCode.THROTTLED: 429,
    ErrorCode.UNAVAILABLE: 503,
}

# Codes a retry of the same call may get past. A version_conflict is retryable only when it
# reports contention (``contended``): the call lost races, and the same call can win the next.
RETRYABLE = frozenset({ErrorCode.THROTTLED, ErrorCode.UNAVAILABLE})


class VigilError(Exception):
    """A failure the caller is meant to see. ``message`` must never carry secrets or AWS text."""

    def __init__(
        self, code: ErrorCode, message: str, *, retryable: bool | None = None, **details: Any
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.retryable = code in RETRYABLE if retryable is None else retryable

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code.value, "message": self.message}
        if self.details:
            body["details"] = self.details
        body["retryable"] = self.retryable
        return body


def invalid(message: str, **details: Any) -> VigilError:
    return VigilError(ErrorCode.INVALID_ARGUMENT, message, **details)


def unauthenticated() -> VigilError:
    # One message for every cause, so a probe learns nothing about which part was wrong.
    return VigilError(ErrorCode.UNAUTHENTICATED, "a valid credential is required")


def forbidden(message: str = "the caller's role does not allow this") -> VigilError:
    return VigilError(ErrorCode.FORBIDDEN, message)


def insufficient_scope(tool: str, scope: str) -> VigilError:
    """A token's grant does not cover ``tool``; ``scope`` is every scope a new grant needs
    (the ones it has, and one that covers the tool): RFC 6750's insufficient_scope."""
    return VigilError(
        ErrorCode.FORBIDDEN,
        f"this sign-in's grant does not cover {tool}: sign in again, granting {scope}",
        scope=scope,
    )


def not_found(what: str) -> VigilError:
    return VigilError(ErrorCode.NOT_FOUND, f"{what} does not exist or is not visible to the caller")


def conflict(message: str, **details: Any) -> VigilError:
    return VigilError(ErrorCode.VERSION_CONFLICT, message, **details)


def contended(message: str, **details: Any) -> VigilError:
    """A version_conflict that a retry of the same call may get past: the call lost races."""
    return VigilError(ErrorCode.VERSION_CONFLICT, message, retryable=True, **details)


def unavailable(message: str = "the service is temporarily unavailable; retry later") -> VigilError:
    return VigilError(ErrorCode.UNAVAILABLE, message)


def throttled(message: str, retry_after_seconds: int) -> VigilError:
    """Too many of something in too short a time; the same may be tried again after the wait."""
    return VigilError(ErrorCode.THROTTLED, message, retry_after_seconds=retry_after_seconds)


def limit_exceeded_body(limit: int) -> VigilError:
    """A request body over what any call can need: refused before it is read."""
    return VigilError(
        ErrorCode.LIMIT_EXCEEDED,
        f"the request body is over {limit} bytes",
        quota="request_body_bytes",
        limit=limit,
    )
