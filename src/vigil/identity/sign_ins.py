"""Signing in to the console, as the server keeps it: a session is live only while the
server holds it, and attempts to sign in are limited across every instance of the function.

A session is kept (``SignInStore``) from sign-in until its end, which moves with the cookie's
as the cookie is renewed; signing out deletes it, so a copy of the cookie, wherever it went,
stands for nothing after. Attempts are counted before the secret is looked at, in fixed
windows (``AttemptWindow``): per source address (an IPv6 address by its /64, which one host
commonly holds whole), and per principal the text names, whether or not that principal
exists, so that the answer never tells which secrets do.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime

from vigil.errors import throttled
from vigil.identity.records import AttemptWindow, parse_secret
from vigil.identity.store import SignInStore

ATTEMPTS_PER_ADDRESS = 10
# Higher than an address's: a person who mistypes from one address meets that address's limit
# first, and whoever spends a principal's attempts to keep its person out needs several.
ATTEMPTS_PER_PRINCIPAL = 30


def attempt_counters(source_address: str | None, secret: str) -> list[tuple[str, int]]:
    """What one attempt with ``secret`` from ``source_address`` counts against, and the limit
    of each: its address, then the principal the secret names, if its form names one."""
    counters = [(f"address#{_address_key(source_address)}", ATTEMPTS_PER_ADDRESS)]
    named = parse_secret(secret)
    if named is not None:
        counters.append((f"principal#{named[0]}#{named[1]}", ATTEMPTS_PER_PRINCIPAL))
    return counters


def _address_key(source_address: str | None) -> str:
    try:
        address = ipaddress.ip_address(source_address or "")
    except ValueError:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def count_attempt(
    store: SignInStore, source_address: str | None, secret: str, now: datetime
) -> None:
    """Counts an attempt to sign in; ``throttled``, saying how long to wait, if one of its
    counters is at its limit in this window (those after it are then not counted)."""
    window = AttemptWindow.at(now)
    for counter, limit in attempt_counters(source_address, secret):
        if not store.count_sign_in_attempt(counter, window, limit):
            wait = math.ceil((window.ends_at - now).total_seconds())
            raise throttled("too many attempts to sign in; try again later", max(wait, 1))
