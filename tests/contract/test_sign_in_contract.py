"""The console's sign-ins: the in-memory fake and the DynamoDB adapter (on moto) honour one
contract: a session is live from its opening until its end or until it is ended, its end moves
only while it is live, and a counter of attempts stops at its limit within its window."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vigil.clock import ManualClock
from vigil.identity.records import AttemptWindow, SignInSession
from vigil.kit.uow import ConditionFailed
from vigil.store import Store

PERSON = "per_aaaaaaaaaaaaaaaa"


def session(clock: ManualClock, seconds: int = 3600, session_id: str = "s1") -> SignInSession:
    ends_at = clock.now().replace(microsecond=0) + timedelta(seconds=seconds)
    return SignInSession("acme", PERSON, session_id, ends_at)


def test_a_session_is_live_from_its_opening_until_its_end(store: Store, clock: ManualClock) -> None:
    opened = session(clock)
    assert not store.sign_in_live(opened, clock.now())
    store.open_sign_in(opened)
    assert store.sign_in_live(opened, clock.now())
    assert store.sign_in_live(opened, opened.ends_at - timedelta(seconds=1))
    assert not store.sign_in_live(opened, opened.ends_at)


def test_a_session_is_its_namespaces_principals_and_ids_alone(
    store: Store, clock: ManualClock
) -> None:
    opened = session(clock)
    store.open_sign_in(opened)
    for other in (
        SignInSession("globex", PERSON, "s1", opened.ends_at),
        SignInSession("acme", "per_bbbbbbbbbbbbbbbb", "s1", opened.ends_at),
        SignInSession("acme", PERSON, "s2", opened.ends_at),
    ):
        assert not store.sign_in_live(other, clock.now())


def test_a_session_id_is_never_opened_twice(store: Store, clock: ManualClock) -> None:
    store.open_sign_in(session(clock))
    with pytest.raises(ConditionFailed):
        store.open_sign_in(session(clock, seconds=7200))
    assert not store.sign_in_live(session(clock), session(clock).ends_at)


def test_an_ended_session_is_not_live_and_cannot_be_extended(
    store: Store, clock: ManualClock
) -> None:
    opened = session(clock)
    store.open_sign_in(opened)
    store.end_sign_in(opened)
    store.end_sign_in(opened)  # ending it again changes nothing
    assert not store.sign_in_live(opened, clock.now())
    assert not store.extend_sign_in(session(clock, seconds=7200), clock.now())
    assert not store.sign_in_live(opened, clock.now())


def test_a_live_session_is_extended_and_an_expired_one_is_not(
    store: Store, clock: ManualClock
) -> None:
    opened = session(clock, seconds=600)
    store.open_sign_in(opened)
    clock.advance(300)
    extended = session(clock, seconds=3600)
    assert store.extend_sign_in(extended, clock.now())
    assert store.sign_in_live(opened, opened.ends_at + timedelta(seconds=1))
    assert not store.sign_in_live(opened, extended.ends_at)
    clock.advance(3600)
    assert not store.extend_sign_in(session(clock, seconds=3600), clock.now())
    assert not store.sign_in_live(opened, clock.now())


def test_a_counter_stops_at_its_limit_within_its_window(store: Store, clock: ManualClock) -> None:
    window = AttemptWindow.at(clock.now())
    assert [store.count_sign_in_attempt("address#192.0.2.1", window, 3) for _ in range(5)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    # Another counter, or the same in the next window, starts again.
    assert store.count_sign_in_attempt("address#192.0.2.2", window, 3)
    later = AttemptWindow.at(window.ends_at)
    assert later.starts_at == window.ends_at
    assert store.count_sign_in_attempt("address#192.0.2.1", later, 3)
