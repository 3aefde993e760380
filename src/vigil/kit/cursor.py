"""Opaque page cursors: one encoding and one error for every tool that pages.

A cursor is URL-safe base64 of a small JSON object that names the listing it belongs to
(``k``) and whatever that listing needs to continue. A cursor of another listing, or another
query of the same listing, is refused, so a caller cannot page one query with another's place.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from vigil.errors import VigilError, invalid


def encode_cursor(listing: str, /, **fields: Any) -> str:
    raw = json.dumps({"k": listing, **fields}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def bad_cursor() -> VigilError:
    return invalid("the cursor is not one this tool returned for this query")


def decode_cursor(cursor: str, listing: str, /, **query: Any) -> dict[str, Any]:
    """The fields of a cursor of ``listing`` whose query fields equal ``query``."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, TypeError):
        raise bad_cursor() from None
    if not isinstance(decoded, dict) or decoded.get("k") != listing:
        raise bad_cursor()
    if any(decoded.get(name) != value for name, value in query.items()):
        raise bad_cursor()
    fields: dict[str, Any] = decoded
    return fields


def cursor_position(cursor: str, listing: str, expected: type, /, **query: Any) -> Any:
    """The position (``a``) a cursor continues after; it must be of type ``expected``."""
    after = decode_cursor(cursor, listing, **query).get("a")
    if not isinstance(after, expected) or isinstance(after, bool):
        raise bad_cursor()
    if isinstance(after, int) and after < 0:
        raise bad_cursor()
    return after
