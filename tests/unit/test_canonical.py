"""Canonical JSON, and JSON as a person is shown it: nothing outside printable ASCII passes for
something else, and what is shown is what is redeemed."""

from __future__ import annotations

import json

from vigil.kit.canonical import NAMED_CHARACTERS, canonical, shown_json

# Two "op" keys on screen (one ends in a zero-width space) and a file that reads as ".png"
# (a right-to-left override turns "gnp.hs" around).
DISGUISED = {"op": "deploy", "op\u200b": "drop-database", "file": "\u202egnp.hs"}


def test_canonical_json_sorts_keys_drops_whitespace_and_writes_whole_numbers_as_integers() -> None:
    assert canonical({"b": 1.0, "a": ["é", {"d": 2, "c": None}]}) == (
        '{"a":["é",{"c":null,"d":2}],"b":1}'.encode()
    )
    assert canonical({"n": 1.5}) != canonical({"n": 1})


def test_a_disguised_action_is_shown_escaped_and_flagged() -> None:
    shown = shown_json(DISGUISED)
    assert shown.text == (
        '{\n  "file": "\\u202egnp.hs",\n  "op": "deploy",\n  "op\\u200b": "drop-database"\n}'
    )
    assert shown.warning is not None
    assert "U+200B ZERO WIDTH SPACE" in shown.warning
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in shown.warning
    assert "\u200b" not in shown.warning + shown.text
    assert "\u202e" not in shown.warning + shown.text


def test_lookalikes_and_controls_are_escaped_and_named() -> None:
    shown = shown_json({"op": "d\u0435ploy", "note": "\x1b[8m\x7f", "fullwidth": "\uff44"})
    assert '"op": "d\\u0435ploy"' in shown.text
    assert '"note": "\\u001b[8m\\u007f"' in shown.text
    assert shown.text.isascii()
    assert shown.warning is not None
    for name in (
        "U+0435 CYRILLIC SMALL LETTER IE",
        "U+001B (a control character)",
        "U+007F (a control character)",
        "U+FF44 FULLWIDTH LATIN SMALL LETTER D",
    ):
        assert name in shown.warning


def test_plain_ascii_is_shown_as_itself_without_a_warning() -> None:
    shown = shown_json({"version": "1.2.3", "op": "deploy", "count": 2.0})
    assert shown.text == json.dumps({"count": 2, "op": "deploy", "version": "1.2.3"}, indent=2)
    assert shown.warning is None


def test_what_is_shown_is_what_is_redeemed() -> None:
    for value in (DISGUISED, {"b": [1.0, {"z": "é", "a": None}], "a": "\U0001f600\n"}):
        assert canonical(json.loads(shown_json(value).text)) == canonical(value)


def test_a_warning_names_a_bounded_number_of_characters() -> None:
    many = {"text": "".join(chr(0x0430 + n) for n in range(NAMED_CHARACTERS + 5))}
    warning = shown_json(many).warning
    assert warning is not None
    assert warning.count("U+") == NAMED_CHARACTERS
    assert warning.endswith(" and 5 more.")
