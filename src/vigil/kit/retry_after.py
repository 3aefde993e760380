"""An HTTP answer's Retry-After as whole seconds: what a receiver of Vigil's notifications asks
for, and what the door in front of a Vigil deployment asks of the stdio bridge. Only the
standard library, so that the bridge starts quickly."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

MAX_RETRY_AFTER_SECONDS = 24 * 3600


def retry_after_seconds(value: str | None, now: datetime) -> int | None:
    """A Retry-After header (delay-seconds, or an HTTP-date counted from ``now``) as whole
    seconds from now, between 0 and 24 h; None if absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        seconds = float(value) if len(value) <= 9 else MAX_RETRY_AFTER_SECONDS
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        seconds = (when - now).total_seconds()
    return min(max(math.ceil(seconds), 0), MAX_RETRY_AFTER_SECONDS)
