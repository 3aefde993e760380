"""Slack's request signature as Vigil checks it, judged against Slack's own verifier
(``slack_sdk.signature.SignatureVerifier``): every request one accepts, the other accepts, and
every request one refuses, the other refuses; a signature over other bytes, under another
secret, or older (or newer) than five minutes opens nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk.signature import SignatureVerifier

from vigil.transports.slack_interactions import slack_signed

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
OTHER_SECRET = "0123456789abcdef0123456789abcdef"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
BODY = b"payload=%7B%22type%22%3A%22block_actions%22%7D"


class FixedClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> float:
        return self.at.timestamp()


def headers_by_slack(secret: str, body: bytes, at: datetime) -> dict[str, str]:
    timestamp = str(int(at.timestamp()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return {"x-slack-request-timestamp": timestamp, "x-slack-signature": signature}


CASES = [
    ("signed now", SECRET, BODY, NOW, True),
    ("signed 4 min 59 s ago", SECRET, BODY, NOW - timedelta(seconds=299), True),
    ("signed 5 min 1 s ago: a replay", SECRET, BODY, NOW - timedelta(seconds=301), False),
    ("signed 5 min 1 s ahead", SECRET, BODY, NOW + timedelta(seconds=301), False),
    ("another secret", OTHER_SECRET, BODY, NOW, False),
]


@pytest.mark.parametrize(
    ("case", "secret", "body", "at", "valid"), CASES, ids=[c[0] for c in CASES]
)
def test_ours_agrees_with_slacks_verifier(
    case: str, secret: str, body: bytes, at: datetime, valid: bool
) -> None:
    headers = headers_by_slack(secret, body, at)
    slacks = SignatureVerifier(SECRET, clock=FixedClock(NOW))  # type: ignore[arg-type]
    assert slacks.is_valid_request(BODY, headers) is valid
    assert slack_signed([SECRET], headers, BODY, NOW) is valid


def test_a_body_changed_after_signing_is_refused() -> None:
    headers = headers_by_slack(SECRET, BODY, NOW)
    changed = BODY.replace(b"block_actions", b"block_actionz")
    assert not SignatureVerifier(SECRET, clock=FixedClock(NOW)).is_valid_request(changed, headers)  # type: ignore[arg-type]
    assert not slack_signed([SECRET], headers, changed, NOW)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-slack-request-timestamp": "soon", "x-slack-signature": "v0=00"},
        {"x-slack-request-timestamp": str(int(NOW.timestamp())), "x-slack-signature": "v1=00"},
        {"x-slack-request-timestamp": str(int(NOW.timestamp())), "x-slack-signature": "v0=é"},
        {"x-slack-request-timestamp": "1" * 400, "x-slack-signature": "v0=00"},
    ],
)
def test_malformed_headers_are_refused_without_an_error(headers: dict[str, str]) -> None:
    assert not slack_signed([SECRET], headers, BODY, NOW)


def test_any_of_the_secrets_given_may_have_signed() -> None:
    headers = headers_by_slack(SECRET, BODY, NOW)
    assert slack_signed([OTHER_SECRET, SECRET], headers, BODY, NOW)
    assert not slack_signed([], headers, BODY, NOW)
