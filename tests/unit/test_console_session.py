"""The console's Signer: session cookies that hold only while unaltered and unexpired, their
renewal within the idle and absolute limits, and CSRF tokens bound to one session."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta

import pytest

from vigil.clock import ManualClock
from vigil.console.session import (
    IDLE_SECONDS,
    MAX_SECONDS,
    REISSUE_BELOW_SECONDS,
    ConsoleSession,
    Signer,
    fingerprint,
)
from vigil.identity.records import Principal, hash_secret, issue_secret

KEY = b"k" * 32
PERSON = "per_aaaaaaaaaaaaaaaa"


def principal(secret: str | None = None) -> Principal:
    secret = secret or issue_secret("acme", PERSON)
    at = ManualClock().now()
    return Principal.registered(
        "acme", "person", "pat", "worker", hash_secret(secret), None, at, PERSON
    )


@pytest.fixture
def signer() -> Signer:
    return Signer(KEY)


@pytest.fixture
def session(signer: Signer, clock: ManualClock) -> ConsoleSession:
    return signer.issue(principal(), clock.now())


def later(clock: ManualClock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)


def payload_of(cookie: str) -> list[object]:
    payload = cookie.partition(".")[0]
    decoded: list[object] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return decoded


def encoded_payload(values: list[object]) -> str:
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def signed(signer: Signer, values: list[object]) -> str:
    """A cookie of any payload at all, under ``signer``'s key: what only the deployment can
    make, to see what decode makes of a shape it never issues."""
    payload = encoded_payload(values)
    return f"{payload}.{signer._mac('session', payload)}"


# -- issue, encode, decode ----------------------------------------------------------------
def test_a_session_round_trips_through_its_cookie(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    assert session.namespace == "acme"
    assert session.principal_id == PERSON
    assert session.signed_in_at == int(clock.now().timestamp())
    assert session.expires_at == session.signed_in_at + IDLE_SECONDS
    assert signer.decode(signer.encode(session), clock.now()) == session
    assert signer.decode(signer.encode(session), later(clock, IDLE_SECONDS - 1)) == session


def test_every_session_has_its_own_id(signer: Signer, clock: ManualClock) -> None:
    who = principal()
    assert len({signer.issue(who, clock.now()).session_id for _ in range(50)}) == 50


def test_the_cookie_carries_no_secret_and_no_secret_hash(
    signer: Signer, clock: ManualClock
) -> None:
    secret = issue_secret("acme", PERSON)
    who = principal(secret)
    cookie = signer.encode(signer.issue(who, clock.now()))
    decoded = json.dumps(payload_of(cookie))
    assert secret not in decoded
    assert secret.rsplit(".", 1)[1] not in decoded
    assert who.secret_hash not in decoded
    assert fingerprint(who) in decoded


def test_a_session_holds_only_for_its_principal_while_its_secret_stands(
    signer: Signer, clock: ManualClock
) -> None:
    who = principal()
    session = signer.issue(who, clock.now())
    assert session.holds_for(who)
    assert not session.holds_for(who.rotated(hash_secret("another"), clock.now()))
    assert not session.holds_for(who.revoked(clock.now()))
    assert not session.holds_for(who.model_copy(update={"namespace": "globex"}))
    assert not session.holds_for(who.model_copy(update={"id": "per_bbbbbbbbbbbbbbbb"}))


@pytest.mark.parametrize("position", [0, 5, -1])
def test_a_tampered_payload_is_refused(
    signer: Signer, session: ConsoleSession, clock: ManualClock, position: int
) -> None:
    payload, _, mac = signer.encode(session).partition(".")
    changed = list(payload)
    changed[position] = "A" if changed[position] != "A" else "B"
    assert signer.decode("".join(changed) + "." + mac, clock.now()) is None


def test_a_payload_changed_to_another_principal_or_a_later_expiry_is_refused(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    cookie = signer.encode(session)
    mac = cookie.partition(".")[2]
    values = payload_of(cookie)
    for index, value in ((1, "per_bbbbbbbbbbbbbbbb"), (4, session.expires_at + MAX_SECONDS)):
        forged = [*values]
        forged[index] = value
        assert signer.decode(f"{encoded_payload(forged)}.{mac}", clock.now()) is None


@pytest.mark.parametrize(
    "mac",
    ["", "x", "A" * 43, "é" * 43, "\x00"],
    ids=["empty", "short", "wrong", "non-ascii", "nul"],
)
def test_a_tampered_mac_is_refused(
    signer: Signer, session: ConsoleSession, clock: ManualClock, mac: str
) -> None:
    payload = signer.encode(session).partition(".")[0]
    assert signer.decode(f"{payload}.{mac}", clock.now()) is None


@pytest.mark.parametrize("value", ["", ".", "no-dot", "é.é", "a.b.c", "%%%.%%%"])
def test_garbage_is_no_session(signer: Signer, clock: ManualClock, value: str) -> None:
    assert signer.decode(value, clock.now()) is None


def test_a_cookie_signed_under_another_key_is_refused(
    session: ConsoleSession, clock: ManualClock
) -> None:
    other = Signer(b"o" * 32).encode(session)
    assert Signer(KEY).decode(other, clock.now()) is None
    assert Signer(KEY).decode(Signer(KEY).encode(session), clock.now()) == session


def test_a_mac_of_a_csrf_token_does_not_sign_a_session(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    """Each MAC names its purpose: a CSRF token over a text is no session signature of it."""
    payload = signer.encode(session).partition(".")[0]
    assert signer.decode(f"{payload}.{signer.csrf_token(payload)}", clock.now()) is None


def test_a_well_signed_payload_of_the_wrong_shape_is_refused(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    at = int(clock.now().timestamp())
    for values in (
        ["acme", "per_a", "f", at, at + 60],  # one field short
        ["acme", "per_a", "f", str(at), at + 60, "s"],  # a time that is no number
        ["acme", "per_a", "f", at, float(at + 60), "s"],
    ):
        assert signer.decode(signed(signer, values), clock.now()) is None
    # The same construction with the right shape does decode: the refusals above are the
    # shape's, not the construction's.
    good = signer.decode(signed(signer, ["acme", "per_a", "f", at, at + 60, "s"]), clock.now())
    assert good == ConsoleSession("acme", "per_a", "f", at, at + 60, "s")


# -- expiry --------------------------------------------------------------------------------
def test_an_idle_session_expires_after_its_idle_time(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    cookie = signer.encode(session)
    assert signer.decode(cookie, later(clock, IDLE_SECONDS - 1)) == session
    assert signer.decode(cookie, later(clock, IDLE_SECONDS)) is None
    assert signer.decode(cookie, later(clock, IDLE_SECONDS + 3600)) is None


def test_no_session_outlives_max_seconds_whatever_its_expiry_says(
    signer: Signer, clock: ManualClock
) -> None:
    """A cookie that says it holds longer than MAX_SECONDS after sign-in (one we never issue)
    still ends at MAX_SECONDS."""
    at = int(clock.now().timestamp())
    long = ConsoleSession("acme", "per_a", "f", at, at + 2 * MAX_SECONDS, "s")
    cookie = signer.encode(long)
    assert signer.decode(cookie, later(clock, MAX_SECONDS - 1)) == long
    assert signer.decode(cookie, later(clock, MAX_SECONDS)) is None


def test_a_session_in_use_is_renewed_until_max_seconds_and_then_ends(
    signer: Signer, clock: ManualClock
) -> None:
    session = signer.issue(principal(), clock.now())
    start = session.signed_in_at
    renewals = 0
    while True:
        clock.advance(10 * 60)  # a click every ten minutes
        decoded = signer.decode(signer.encode(session), clock.now())
        if decoded is None:
            break
        renewed = signer.renewed(decoded, clock.now())
        if renewed is not None:
            renewals += 1
            assert renewed.expires_at <= start + MAX_SECONDS
            assert renewed.session_id == session.session_id
            assert renewed.signed_in_at == start
            session = renewed
    assert renewals > 1
    assert int(clock.now().timestamp()) >= start + MAX_SECONDS
    assert int(clock.now().timestamp()) < start + MAX_SECONDS + 10 * 60
    assert session.expires_at == start + MAX_SECONDS


# -- renewal -------------------------------------------------------------------------------
def test_renewal_waits_until_the_threshold(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    used = IDLE_SECONDS - REISSUE_BELOW_SECONDS  # how long until a cookie is worth reissuing
    assert signer.renewed(session, clock.now()) is None
    assert signer.renewed(session, later(clock, used - 1)) is None
    renewed = signer.renewed(session, later(clock, used + 1))
    assert renewed is not None
    assert renewed.expires_at == session.signed_in_at + used + 1 + IDLE_SECONDS
    assert renewed == ConsoleSession(
        session.namespace,
        session.principal_id,
        session.fingerprint,
        session.signed_in_at,
        renewed.expires_at,
        session.session_id,
    )


def test_renewal_never_goes_beyond_max_seconds(signer: Signer, clock: ManualClock) -> None:
    at = int(clock.now().timestamp())
    # Signed in almost MAX_SECONDS ago, with its idle time nearly used up.
    near = ConsoleSession("acme", "per_a", "f", at - MAX_SECONDS + 600, at + 60, "s")
    renewed = signer.renewed(near, clock.now())
    assert renewed is not None
    assert renewed.expires_at == near.signed_in_at + MAX_SECONDS == at + 600
    # At the cap, there is nothing more to give.
    capped = ConsoleSession("acme", "per_a", "f", at - MAX_SECONDS + 60, at + 60, "s")
    assert signer.renewed(capped, clock.now()) is None


# -- CSRF ----------------------------------------------------------------------------------
def test_a_csrf_token_holds_for_its_session_only(signer: Signer, clock: ManualClock) -> None:
    who = principal()
    one = signer.issue(who, clock.now())
    two = signer.issue(who, clock.now())
    token = signer.csrf_token(one.session_id)
    assert signer.csrf_holds(one.session_id, token)
    assert not signer.csrf_holds(two.session_id, token)
    assert not signer.csrf_holds(one.session_id, signer.csrf_token(two.session_id))
    assert not signer.csrf_holds(one.session_id, Signer(b"o" * 32).csrf_token(one.session_id))


@pytest.mark.parametrize("token", [None, "", "x", "é" * 43, "\x00"])
def test_a_missing_or_malformed_csrf_token_is_refused(
    signer: Signer, session: ConsoleSession, token: str | None
) -> None:
    assert not signer.csrf_holds(session.session_id, token)


def test_a_csrf_token_survives_renewal(
    signer: Signer, session: ConsoleSession, clock: ManualClock
) -> None:
    renewed = signer.renewed(session, later(clock, IDLE_SECONDS - 60))
    assert renewed is not None
    assert signer.csrf_holds(renewed.session_id, signer.csrf_token(session.session_id))


# -- the key -------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 16, 31])
def test_a_key_under_256_bits_is_refused(size: int) -> None:
    with pytest.raises(ValueError, match="256 bits"):
        Signer(b"k" * size)


def test_a_key_of_256_bits_or_more_is_taken() -> None:
    for size in (32, 64):
        signer = Signer(b"k" * size)
        assert signer.csrf_holds("s", signer.csrf_token("s"))
