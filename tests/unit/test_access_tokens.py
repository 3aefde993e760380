"""Access tokens: what one holds, for how long, for which resource, and under which key; a
token checked once is not checked again, but its expiry and its key still are."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vigil.grants.access import AccessClaims, issue, verify
from vigil.grants.records import ACCESS_TOKEN_SECONDS
from vigil.kit.keys import Keys

NOW = datetime(2026, 12, 7, tzinfo=UTC)
KEYS = Keys.fixed("k" * 40)
RESOURCE = "https://vigil.example/mcp"
CLAIMS = AccessClaims(
    "acme", "per_aaaaaaaaaaaaaaaa", "grt_aaaaaaaaaaaaaaaa", "vgc_x", frozenset({"vigil:people"})
)


def token(keys: Keys = KEYS) -> str:
    return issue(keys, issuer="https://vigil.example", resource=RESOURCE, claims=CLAIMS, now=NOW)


def test_a_token_holds_its_claims_for_its_resource_until_it_expires() -> None:
    made = token()
    assert verify(KEYS, made, RESOURCE, NOW) == CLAIMS
    last = NOW + timedelta(seconds=ACCESS_TOKEN_SECONDS - 1)
    assert verify(KEYS, made, RESOURCE, last) == CLAIMS
    assert verify(KEYS, made, RESOURCE, last + timedelta(seconds=1)) is None
    assert verify(KEYS, made, "https://other.example/mcp", NOW) is None
    assert verify(KEYS, made, None, NOW) is None


def test_a_token_checked_once_is_still_refused_under_another_key() -> None:
    made = token()
    assert verify(KEYS, made, RESOURCE, NOW) == CLAIMS
    assert verify(Keys.fixed("o" * 40), made, RESOURCE, NOW) is None


def test_text_that_is_not_a_token_is_none() -> None:
    for text in ("", "vgl.acme.per_x.y", "eyJ.a", "eyJa.b.c"):
        assert verify(KEYS, text, RESOURCE, NOW) is None
