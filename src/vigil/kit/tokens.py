"""Signed tokens for links that leave Vigil (an email's decision link, a console link that
binds a Slack user): a few JSON fields and an HMAC-SHA256 over them, under a key derived from
the deployment's service key for the token's purpose alone. Anyone can read a token; nobody
without the key can change one, and a token made for one purpose opens for no other."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

from vigil.kit.keys import Keys

# A token longer than this is refused unread: a link's fields are a few ids and a time.
MAX_TOKEN = 1024


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _mac(keys: Keys, purpose: str, payload: str) -> str:
    key = keys.for_purpose(f"token:{purpose}")
    return _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def sign_token(keys: Keys, purpose: str, fields: Sequence[str | int]) -> str:
    payload = _b64(json.dumps(list(fields), separators=(",", ":")).encode())
    return f"{payload}.{_mac(keys, purpose, payload)}"


def open_token(keys: Keys, purpose: str, token: str) -> list[Any] | None:
    """The fields ``token`` was signed with for ``purpose``; None for any other text."""
    if len(token) > MAX_TOKEN or not token.isascii():
        return None
    payload, _, mac = token.partition(".")
    if not payload or not hmac.compare_digest(mac.encode(), _mac(keys, purpose, payload).encode()):
        return None
    try:
        fields = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, binascii.Error):
        return None
    return fields if isinstance(fields, list) else None
