"""Webhook signatures, checked by the Standard Webhooks reference library (standardwebhooks on
PyPI) rather than by our own code: what it accepts, any receiver's library accepts."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from tests.notifications_support import sample
from vigil.notifications.webhooks import new_secret, sign, webhook_request

# The reference library checks the timestamp against the real clock (five minutes either way),
# so the messages here are signed at the real time.


def now() -> datetime:
    """The real time, read when a test runs: the reference library checks a timestamp against
    it (5 minutes' tolerance), and a whole suite runs longer than that after collection."""
    return datetime.now(UTC).replace(microsecond=0)


BODY = b'{"type":"switch.fired","note":"caf\xc3\xa9 & <b>"}'


def test_a_new_secret_is_whsec_and_32_random_bytes() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith("whsec_")
    assert len(base64.b64decode(first.removeprefix("whsec_"), validate=True)) == 32
    assert first != second


def test_the_reference_library_accepts_each_secret_during_a_rotation() -> None:
    at = now()
    old, new = new_secret(), new_secret()
    headers = sign([old, new], "evt_abc", at, BODY)
    assert headers["webhook-id"] == "evt_abc"
    assert headers["webhook-timestamp"] == str(int(at.timestamp()))
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        assert Webhook(secret).verify(BODY, headers) == json.loads(BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, headers)


def test_the_signature_covers_the_body_the_timestamp_and_the_id() -> None:
    at = now()
    secret = new_secret()
    headers = sign([secret], "evt_abc", at, BODY)
    webhook = Webhook(secret)
    with pytest.raises(WebhookVerificationError):
        webhook.verify(BODY.replace(b"&", b"+"), headers)
    later = str(int((at + timedelta(seconds=1)).timestamp()))
    with pytest.raises(WebhookVerificationError):
        webhook.verify(BODY, {**headers, "webhook-timestamp": later})
    with pytest.raises(WebhookVerificationError):
        webhook.verify(BODY, {**headers, "webhook-id": "evt_abd"})


def test_our_signature_is_the_reference_librarys_own() -> None:
    at = now()
    secret = new_secret()
    ours = sign([secret], "evt_abc", at, BODY)["webhook-signature"]
    assert ours == Webhook(secret).sign("evt_abc", at, BODY.decode())


def test_signing_refuses_no_secret_a_malformed_secret_and_a_naive_time() -> None:
    at = now()
    with pytest.raises(ValueError, match="at least one"):
        sign([], "evt_abc", at, BODY)
    with pytest.raises(ValueError, match="base64") as refused:
        sign(["whsec_not base64!"], "evt_abc", at, BODY)
    assert "not base64" not in str(refused.value)  # the secret is never in the error
    with pytest.raises(ValueError, match="base64"):
        sign(["whsec_"], "evt_abc", at, BODY)
    with pytest.raises(ValueError, match="timezone"):
        sign([new_secret()], "evt_abc", at.replace(tzinfo=None), BODY)


def test_a_webhook_request_is_the_events_json_signed_under_its_id() -> None:
    at = now()
    event = sample("request.opened")
    secret = new_secret()
    body, headers = webhook_request(event, [secret], at)
    assert headers["content-type"] == "application/json"
    assert headers["webhook-id"] == event.id
    assert Webhook(secret).verify(body, headers) == json.loads(event.model_dump_json())
    # A retry later is signed at its own time, under the same id.
    _, retried = webhook_request(event, [secret], at + timedelta(seconds=30))
    assert retried["webhook-id"] == event.id
    assert retried["webhook-timestamp"] != headers["webhook-timestamp"]
