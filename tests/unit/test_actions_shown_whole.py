"""Where a bound action cannot be shown whole, no decision is offered; where a decision is
offered, the action is shown whole: an email carries all of it (and its links open the page
that shows it again before anything is decided), and `vigil approve` prints all of it,
never cut, however narrow the terminal (the terminal wraps; nothing is cropped)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.notifications_support import approval, opened
from vigil.notifications.email import email_message
from vigil.notifications.slack import ACTION_ROOM, shows_whole
from vigil.people.render import request_text

LONG_ACTION = {
    "op": "transfer",
    **{f"note_{n}": "routine " * 150 for n in range(3)},
    "zz_to": "an account of mallory's",
}


def test_slack_shows_whole_only_what_fits_its_section() -> None:
    assert shows_whole(None)
    assert shows_whole({"op": "deploy"})
    assert not shows_whole(LONG_ACTION)
    assert len(json.dumps(LONG_ACTION, indent=2)) > ACTION_ROOM


def test_an_email_carries_the_whole_action_its_last_member_too() -> None:
    _, text, html = email_message(opened(approval(action=LONG_ACTION)), "https://vigil.example")
    assert "an account of mallory" in text
    assert text.count("routine") == 450
    assert "an account of mallory" in html


def test_vigil_approve_prints_the_whole_action() -> None:
    request = {
        "kind": "approval",
        "id": "req_aaaaaaaaaaaaaaaa",
        "requester": "agt_aaaaaaaaaaaaaaaa",
        "asked_at": "2026-12-07T00:00:00Z",
        "expires_at": "2026-12-08T00:00:00Z",
        "body": "May I?",
        "choices": None,
        "action": LONG_ACTION,
    }
    shown = request_text(request, datetime(2026, 12, 7, tzinfo=UTC))
    assert shown.count("routine") == 450
    assert "an account of mallory" in shown
    assert "…" not in shown
