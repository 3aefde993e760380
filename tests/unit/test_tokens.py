"""Signed tokens: what a link carries, readable by anyone, changed by no one; a token signed
for one purpose opens for no other, and one made under another key opens nothing."""

from __future__ import annotations

from vigil.kit.keys import Keys
from vigil.kit.tokens import open_token, sign_token

KEYS = Keys.fixed("one deployment's service key")
OTHER = Keys.fixed("another deployment's service key")


def test_a_token_opens_to_its_fields() -> None:
    token = sign_token(KEYS, "email-decision", ["acme", "req_x", "per_y", 1700000000])
    assert open_token(KEYS, "email-decision", token) == ["acme", "req_x", "per_y", 1700000000]


def test_another_purpose_or_key_opens_nothing() -> None:
    token = sign_token(KEYS, "email-decision", ["acme"])
    assert open_token(KEYS, "account-link", token) is None
    assert open_token(OTHER, "email-decision", token) is None


def test_a_changed_token_opens_nothing() -> None:
    token = sign_token(KEYS, "email-decision", ["acme", "per_y"])
    forged = sign_token(OTHER, "email-decision", ["acme", "per_z"])
    payload, _, mac = token.partition(".")
    other_payload = forged.partition(".")[0]
    assert open_token(KEYS, "email-decision", f"{other_payload}.{mac}") is None
    for text in ["", ".", "x", f"{payload}.", "%%%.%%%", f"{payload}.{mac}x", "é.é"]:
        assert open_token(KEYS, "email-decision", text) is None
