"""How the console shows an approval's action: escaped so that nothing in it passes for
something else, under a warning when it holds such characters, on its page and in the list."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

from vigil.console.components import exact_action
from vigil.console.pages.requests import request_rows
from vigil.kit.canonical import shown_json

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DISGUISED = {"op": "deploy", "op\u200b": "drop-database", "file": "\u202egnp.hs"}
WARNING = "it holds characters outside printable ASCII"


def approval(action: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": "req_cccccccccccccccc",
        "kind": "approval",
        "state": "open",
        "requester": "agt_aaaaaaaaaaaaaaaa",
        "audience": ["per_bbbbbbbbbbbbbbbb"],
        "body": "May I deploy?",
        "action": action,
        "expires_at": "2026-03-01T13:00:00+00:00",
        "history": [],
    }


def test_a_disguised_action_is_shown_escaped_under_its_warning() -> None:
    shown = exact_action(DISGUISED)
    assert "\u200b" not in shown
    assert "\u202e" not in shown
    assert html.escape('"op\\u200b": "drop-database"', quote=True) in shown
    assert html.escape('"file": "\\u202egnp.hs"', quote=True) in shown
    assert shown.index(WARNING) < shown.index("drop-database")
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in shown


def test_a_plain_action_is_shown_canonically_without_a_warning() -> None:
    shown = exact_action({"version": "1.2.3", "op": "deploy"})
    text = shown_json({"op": "deploy", "version": "1.2.3"}).text
    assert html.escape(text, quote=True) in shown
    assert WARNING not in shown


def test_the_list_flags_a_request_whose_action_is_disguised() -> None:
    me = "per_bbbbbbbbbbbbbbbb"
    (flagged,) = request_rows([approval(DISGUISED)], me, NOW, {})
    (plain,) = request_rows([approval({"op": "deploy"})], me, NOW, {})
    (bare,) = request_rows([approval(None)], me, NOW, {})
    assert "hidden or lookalike characters" in flagged[0]
    assert "hidden or lookalike characters" not in plain[0]
    assert "hidden or lookalike characters" not in bare[0]
