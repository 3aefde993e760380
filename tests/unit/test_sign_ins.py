"""The limit on attempts to sign in to the console: what an attempt counts against, and how
long an address or a principal over its limit waits, as the clock moves."""

from __future__ import annotations

import pytest

from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.identity.records import ATTEMPT_WINDOW_SECONDS, AttemptWindow, issue_secret
from vigil.identity.sign_ins import (
    ATTEMPTS_PER_ADDRESS,
    ATTEMPTS_PER_PRINCIPAL,
    attempt_counters,
    count_attempt,
)
from vigil.stores.memory import MemoryStore

PAT = issue_secret("acme", "per_aaaaaaaaaaaaaaaa")


@pytest.mark.parametrize(
    ("address", "counted_as"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        (None, "unknown"),
        ("not an address", "unknown"),
    ],
)
def test_an_attempt_counts_against_its_address_and_an_ipv6_one_by_its_64(
    address: str | None, counted_as: str
) -> None:
    assert attempt_counters(address, "anything")[0] == (
        f"address#{counted_as}",
        ATTEMPTS_PER_ADDRESS,
    )


def test_an_attempt_counts_against_the_principal_its_secret_names_existing_or_not() -> None:
    assert attempt_counters("192.0.2.7", PAT)[1:] == [
        ("principal#acme#per_aaaaaaaaaaaaaaaa", ATTEMPTS_PER_PRINCIPAL)
    ]
    assert attempt_counters("192.0.2.7", "not a secret")[1:] == []


def test_over_the_limit_an_attempt_waits_for_the_windows_end() -> None:
    store = MemoryStore()
    clock = ManualClock()
    window = AttemptWindow.at(clock.now())
    clock.advance((window.starts_at - clock.now()).total_seconds() + 100)
    for _ in range(ATTEMPTS_PER_ADDRESS):
        count_attempt(store, "192.0.2.7", PAT, clock.now())
    with pytest.raises(VigilError) as refused:
        count_attempt(store, "192.0.2.7", PAT, clock.now())
    assert refused.value.code is ErrorCode.THROTTLED
    assert refused.value.details == {"retry_after_seconds": ATTEMPT_WINDOW_SECONDS - 100}
    # Refused by its address, the attempt did not count against the principal.
    counted = store.sign_in_attempts[("principal#acme#per_aaaaaaaaaaaaaaaa", window.starts_at)]
    assert counted == ATTEMPTS_PER_ADDRESS
    clock.advance(ATTEMPT_WINDOW_SECONDS - 101)
    with pytest.raises(VigilError):
        count_attempt(store, "192.0.2.7", PAT, clock.now())
    clock.advance(1)
    count_attempt(store, "192.0.2.7", PAT, clock.now())
