"""Webhooks signed as the Standard Webhooks specification says (https://www.standardwebhooks.com/),
so that a receiver verifies them with any of its libraries.

A secret is ``whsec_`` and the base64 of its key. Each attempt is signed at the time it is made:
``webhook-id`` (the event's id, the same on every attempt), ``webhook-timestamp`` (seconds since
the epoch) and ``webhook-signature``, ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``,
one per secret, space-separated: while a secret is rotated, the old and the new one both sign,
and a receiver that knows either accepts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime
from secrets import token_bytes

from vigil.notifications.events import Event

SECRET_PREFIX = "whsec_"  # noqa: S105 (the prefix every secret starts with)
SECRET_BYTES = 32
CONTENT_TYPE = "application/json"
# Which subscription an agent's event was delivered for (the MCP Events extension's header).
SUBSCRIPTION_HEADER = "x-mcp-subscription-id"


def new_secret() -> str:
    """A new signing secret: ``whsec_`` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(token_bytes(SECRET_BYTES)).decode()


def _key(secret: str) -> bytes:
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        # The secret itself is never part of an error.
        raise ValueError("a webhook secret is whsec_ and the base64 of a non-empty key")
    return key


def is_secret(text: str) -> bool:
    """Whether ``text`` is a signing secret: ``whsec_`` and the base64 of a non-empty key."""
    if not text.startswith(SECRET_PREFIX):
        return False
    try:
        _key(text)
    except ValueError:
        return False
    return True


def sign(secrets: Sequence[str], msg_id: str, timestamp: datetime, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of ``body`` sent as message ``msg_id`` at ``timestamp``
    (timezone-aware; sent as whole seconds), signed with each of ``secrets``."""
    if not secrets:
        raise ValueError("a webhook is signed with at least one secret")
    if timestamp.tzinfo is None:
        raise ValueError("the timestamp must be timezone-aware")
    seconds = str(int(timestamp.timestamp()))
    signed = f"{msg_id}.{seconds}.".encode() + body
    signatures = [
        "v1," + base64.b64encode(hmac.digest(_key(secret), signed, hashlib.sha256)).decode()
        for secret in secrets
    ]
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": seconds,
        "webhook-signature": " ".join(signatures),
    }


def webhook_request(
    event: Event, secrets: Sequence[str], now: datetime
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt to deliver ``event`` by webhook at ``now``: the
    event's JSON, its content type, and the signature headers with the event's id as the
    webhook-id (so a receiver sees each retry as the same message)."""
    body = event.model_dump_json().encode()
    return body, {"content-type": CONTENT_TYPE, **sign(secrets, event.id, now, body)}
