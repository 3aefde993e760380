"""The Slack format: valid Block Kit for the blocks it uses (checked by a validator of Slack's
published rules, below), every user or agent value escaped, and buttons that only link to the
console."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.notifications_support import (
    ACTION,
    CONSOLE,
    DISGUISED,
    HOSTILE,
    NAMESPACE,
    T0,
    approval,
    death,
    opened,
    sample,
    samples,
)
from vigil.notifications.events import EVENT_TYPES, Event, EventType, make_event
from vigil.notifications.slack import escape, fit, slack_message
from vigil.requests.events import RequestData
from vigil.switches.events import SwitchFired

# -- Block Kit's rules, for the blocks, elements and text objects this format uses --------------

MAX_BLOCKS = 50
TEXT_KEYS = {"plain_text": {"type", "text", "emoji"}, "mrkdwn": {"type", "text", "verbatim"}}
BLOCK_KEYS = {
    "header": {"type", "text", "block_id"},
    "section": {"type", "text", "fields", "block_id"},
    "context": {"type", "elements", "block_id"},
    "actions": {"type", "elements", "block_id"},
    "input": {"type", "label", "element", "block_id", "optional", "hint", "dispatch_action"},
}
TEXT_INPUT_KEYS = {"type", "action_id", "multiline", "max_length", "min_length", "placeholder"}
BUTTON_KEYS = {"type", "text", "action_id", "url", "value", "style"}


def check_text(obj: Any, limit: int, types: tuple[str, ...] = ("plain_text", "mrkdwn")) -> None:
    assert isinstance(obj, dict)
    assert obj.get("type") in types, obj
    assert set(obj) <= TEXT_KEYS[obj["type"]], obj
    assert isinstance(obj["text"], str)
    assert 1 <= len(obj["text"]) <= limit, (len(obj["text"]), limit)


def validate(message: dict[str, Any]) -> None:
    assert set(message) == {"text", "blocks"}
    assert isinstance(message["text"], str)
    assert message["text"]
    blocks = message["blocks"]
    assert isinstance(blocks, list)
    assert 1 <= len(blocks) <= MAX_BLOCKS
    action_ids: list[str] = []
    for block in blocks:
        kind = block.get("type")
        assert kind in BLOCK_KEYS, kind
        assert set(block) <= BLOCK_KEYS[kind], block
        if kind == "header":
            check_text(block["text"], 150, ("plain_text",))
        elif kind == "section":
            assert "text" in block or "fields" in block
            if "text" in block:
                check_text(block["text"], 3000)
            if "fields" in block:
                assert 1 <= len(block["fields"]) <= 10
                for item in block["fields"]:
                    check_text(item, 2000)
        elif kind == "context":
            assert 1 <= len(block["elements"]) <= 10
            for item in block["elements"]:
                check_text(item, 3000)
        elif kind == "input":
            # Block Kit's input block: a label of at most 2,000 characters, one element; a
            # plain-text input holds at most 3,000.
            check_text(block["label"], 2000, ("plain_text",))
            element = block["element"]
            assert element["type"] == "plain_text_input"
            assert set(element) <= TEXT_INPUT_KEYS, element
            assert 1 <= element.get("max_length", 3000) <= 3000
            action_ids.append(element["action_id"])
        else:
            assert 1 <= len(block["elements"]) <= 25
            for button in block["elements"]:
                assert button["type"] == "button"
                assert set(button) <= BUTTON_KEYS
                check_text(button["text"], 75, ("plain_text",))
                # A button links (url) or acts (value), never both.
                assert ("url" in button) != ("value" in button), button
                if "url" in button:
                    assert 1 <= len(button["url"]) <= 3000
                    assert button["url"].startswith(("https://", "http://"))
                else:
                    assert 1 <= len(button["value"]) <= 2000
                assert 1 <= len(button["action_id"]) <= 255
                assert button.get("style", "primary") in ("primary", "danger")
                action_ids.append(button["action_id"])
    assert len(action_ids) == len(set(action_ids)), action_ids


def strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for inner_key, inner in value.items():
            yield from strings(inner, inner_key)
    elif isinstance(value, list):
        for inner in value:
            yield from strings(inner, key)
    elif isinstance(value, str):
        yield key, value


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def shown(message: dict[str, Any]) -> str:
    return "\n".join(text for key, text in strings(message) if key == "text")


# -- the format ------------------------------------------------------------------------------------


@pytest.mark.parametrize("event", samples(), ids=lambda event: event.type)
def test_every_event_makes_a_valid_message_with_nothing_unescaped(event: Event) -> None:
    message = slack_message(event, CONSOLE)
    validate(message)
    for key, text in strings(message):
        if key == "url":
            continue
        assert "<" not in text, (key, text)
        assert ">" not in text, (key, text)
        assert not re.search(r"&(?!amp;|lt;|gt;)", text), (key, text)
    if isinstance(event.data, RequestData):  # the hostile body is shown, as text
        assert escape(HOSTILE) in [block.get("text", {}).get("text") for block in message["blocks"]]


def test_the_switch_message_names_the_scope_and_links_to_its_page() -> None:
    message = slack_message(sample("switch.fired"), CONSOLE)
    assert message["blocks"][0]["text"]["text"] == "Switch fired: deploy &lt;prod&gt; &amp; co"
    assert message["text"] == "Switch fired: deploy &lt;prod&gt; &amp; co"
    text = shown(message)
    assert "*Late by*\n1.25 s" in text
    assert "7 lease(s): db/1 (gen 1)" in text
    assert "and 2 more" in text
    assert NAMESPACE in text
    [button] = buttons(message)
    assert button["url"] == f"{CONSOLE}/console/switch?scope=deploy+%3Cprod%3E+%26+co"


def test_an_open_approval_offers_approve_and_deny_as_links_to_the_console() -> None:
    event = sample("request.opened")
    message = slack_message(event, CONSOLE)
    page = f"{CONSOLE}/console/request?id=req_cccccccccccccccc"
    assert [(b["action_id"], b["url"], b.get("style")) for b in buttons(message)] == [
        ("approve", page, "primary"),
        ("deny", page, "danger"),
    ]
    # A link is all a button is: nothing Slack could send back acts on the request.
    assert all("value" not in button for button in buttons(message))
    # The action as it is redeemed: canonical, its keys sorted.
    action = json.dumps(ACTION, indent=2, sort_keys=True)
    assert f"```{escape(action)}```" in shown(message)


def test_a_disguised_action_is_shown_escaped_under_its_warning() -> None:
    message = slack_message(opened(approval(action=DISGUISED)), CONSOLE)
    validate(message)
    text = shown(message)
    assert "\u200b" not in text
    assert "\u202e" not in text
    assert '"op\\u200b": "drop-database"' in text
    assert '"file": "\\u202egnp.hs"' in text
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in text
    assert text.index("outside printable ASCII") < text.index("drop-database")


def test_a_decided_request_only_links_to_its_page() -> None:
    message = slack_message(sample("request.answered"), CONSOLE)
    assert [b["action_id"] for b in buttons(message)] == ["open"]
    assert message["blocks"][0]["text"]["text"].startswith("Approval approved: &lt;!channel&gt;")
    assert "*Answered by*\nper_bbbbbbbbbbbbbbbb" in shown(message)


def test_a_withdrawn_request_says_so_and_offers_nothing_to_decide() -> None:
    """The message that follows the one asking: its title says withdrawn, and an interactive
    channel offers no decision on it, only the request's page."""
    message = slack_message(sample("request.withdrawn"), CONSOLE, interactive=True)
    assert message["blocks"][0]["text"]["text"].startswith("Approval withdrawn: ")
    assert [b["action_id"] for b in buttons(message)] == ["open"]
    assert "*State*\nwithdrawn" in shown(message)


def test_a_session_links_to_its_page_and_a_dead_letter_to_none() -> None:
    [button] = buttons(slack_message(sample("session.stale"), CONSOLE))
    assert button["url"] == f"{CONSOLE}/console/session?id=ses+%3C1%3E+%26+more"
    assert buttons(slack_message(sample("delivery.dead_lettered"), CONSOLE)) == []


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_without_a_console_there_are_no_links(event_type: EventType) -> None:
    message = slack_message(sample(event_type, console_base=None), None)
    validate(message)
    assert buttons(message) == []


def test_values_at_their_largest_still_fit_slacks_limits() -> None:
    data = RequestData(
        request_id="req_" + "c" * 16,
        kind="approval",
        state="open",
        requester="agt_" + "a" * 16,
        audience=["per_" + "b" * 16] * 50,
        body="<" * 5000,
        choices=["&" * 200] * 20,
        action={f"k{n}": "<" * 2000 for n in range(4)},
        expires_at=T0,
        outcome=None,
        answered_by=None,
    )
    event = make_event(
        "request.opened", data, namespace=NAMESPACE, occurred_at=T0, console_base=None
    )
    message = slack_message(event, CONSOLE + "/" + "p" * 3000)
    validate(message)
    assert buttons(message) == []  # a link longer than Slack takes is left out
    body = message["blocks"][1]["text"]["text"]
    assert body.endswith("…")
    assert body.removesuffix("…").replace("&lt;", "") == ""


def test_a_long_scope_is_cut_in_the_header_never_inside_an_entity() -> None:
    data = SwitchFired.of(death(scope="&" * 200))
    event = make_event("switch.fired", data, namespace=NAMESPACE, occurred_at=T0, console_base=None)
    message = slack_message(event, None)
    validate(message)
    header = message["blocks"][0]["text"]["text"]
    assert header.startswith("Switch fired: &amp;")
    assert header.endswith("…")
    assert header.removeprefix("Switch fired: ").removesuffix("…").replace("&amp;", "") == ""


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("plain", 10, "plain"),
        ("a<b>&c", 20, "a&lt;b&gt;&amp;c"),
        ("a&b", 7, "a&amp;b"),
        ("a&b", 6, "a…"),
        ("a&bc", 7, "a&amp;…"),
        ("abcdef", 4, "abc…"),
    ],
)
def test_fit_escapes_and_cuts_between_characters(text: str, limit: int, expected: str) -> None:
    assert fit(text, limit) == expected
    assert len(fit(text, limit)) <= limit


def test_the_hostile_text_is_shown_as_text() -> None:
    assert escape(HOSTILE) == (
        "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; \"quoted\" 'single' "
        "&lt;b&gt;bold&lt;/b&gt;"
    )


# -- buttons that decide, on a channel given its Slack app's signing secret -----------------------


def question(choices: list[str]) -> Event:
    asked = approval().model_copy(update={"kind": "question", "action": None, "choices": choices})
    return opened(asked)


def test_an_interactive_channels_open_approval_gets_approve_and_deny() -> None:
    message = slack_message(opened(approval()), CONSOLE, interactive=True)
    validate(message)
    acting = {b["action_id"]: b["value"] for b in buttons(message) if "value" in b}
    assert acting == {"vigil.approve": "req_cccccccccccccccc", "vigil.deny": "req_cccccccccccccccc"}
    assert [b["url"] for b in buttons(message) if "url" in b]  # the request's page stays


def test_each_choice_of_a_question_is_a_button_escaped_and_cut_to_fit() -> None:
    choices = [f"<@U{n}> & " + "x" * 190 for n in range(20)]
    message = slack_message(question(choices), CONSOLE, interactive=True)
    validate(message)
    acting = [b for b in buttons(message) if "value" in b]
    assert [b["action_id"] for b in acting] == [f"vigil.choice.{n}" for n in range(20)]
    assert acting[0]["text"]["text"].startswith("&lt;@U0&gt; &amp; ")


def test_only_an_open_request_on_an_interactive_channel_gets_buttons_that_act() -> None:
    decided = approval().model_copy(update={"state": "approved"})
    for message in (
        slack_message(opened(approval()), CONSOLE),
        slack_message(opened(decided), CONSOLE, interactive=True),
        slack_message(question([]), CONSOLE, interactive=True),
    ):
        validate(message)
        assert not [b for b in buttons(message) if "value" in b]
