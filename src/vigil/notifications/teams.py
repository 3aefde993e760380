"""An event as a message to a Microsoft Teams Workflows webhook: one Adaptive Card.

The card is version 1.4, the highest that the Workflows app's flow bot renders (a 1.5 card
shows as "We're sorry, this card couldn't be displayed"; microsoft/AdaptiveCards#8965).

No value of the event is ever markdown. Teams reads markdown in a TextBlock's text and in a
FactSet's titles and values, and its clients do not agree on backslash escapes; it reads none
in a TextRun ("Markdown is not supported"). So every text is a TextRun in a RichTextBlock, the
facts included (a two-column row each, where a FactSet would read them as markdown), and an
agent's ``[click](https://...)`` or ``**bold**`` shows as it was written. What a TextRun does
format, a date function (``{{DATE(2026-03-01T12:00:00Z)}}`` is shown as a local date), is
defused: a zero-width space between its braces in text, and in the action's JSON the first
brace written ``\\u007b``, the same JSON.

A Teams message holds at most 28 KB. The title, the facts, the footer and the links are
always shown; the bound action and the request's text share what is left: the action whole
when it fits, else cut and said to be, with the console's page to read it all.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vigil.kit.events import ELLIPSIS
from vigil.notifications.events import Event
from vigil.notifications.summary import summarise

CARD_VERSION = "1.4"
CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
# Teams' limit is 28 KB for the whole message; the card is kept under it with room to spare
# for what the flow wraps around it. Counted as sent: JSON, every non-ASCII character escaped.
MAX_MESSAGE_BYTES = 24_000
# What the facts may take of it, each value at most MAX_FACT characters; past that the rest
# are left to the console's page.
MAX_FACTS_BYTES = 6_000
MAX_FACT = 1_000
MAX_LABEL = 200
# The title's and the footer's, which are one line each.
MAX_LINE = 1_000
# What the request's text may take, and what it keeps when the action would take it all.
MAX_TEXT_BYTES = 8_000
MIN_TEXT_BYTES = 2_000
TOO_LONG = (
    "This action is longer than a Teams message shows whole: open the request's page, which "
    "shows all of it, before deciding."
)
DEFUSED = (
    "Each { written \\u007b in it is the same JSON: written so, Teams does not show it as a date."
)
_STYLES = {"primary": "positive", "danger": "destructive"}
# The date and time functions a TextRun formats (the Adaptive Cards SDK's text formatters).
_DATE_FUNCTION = re.compile(r"\{\{(?=(?:DATE|TIME)\(\d{4}-)")


def defuse(text: str) -> str:
    """``text`` with a zero-width space between the braces of each date or time function."""
    return _DATE_FUNCTION.sub("{\u200b{", text)


def defuse_json(text: str) -> str:
    """A JSON document's ``text`` with the first brace of each date or time function, always
    inside a string, written ``\\u007b``: the same JSON, shown as written."""
    return _DATE_FUNCTION.sub("\\\\u007b{", text)


def _size(value: Any) -> int:
    """How many bytes ``value`` takes in the JSON body as sent."""
    return len(json.dumps(value))


def fit(text: str, room: int) -> str:
    """``text``, or its longest beginning and "…", whose JSON string takes at most ``room``
    bytes (its quotes left out)."""
    if _size(text) - 2 <= room:
        return text
    budget = room - (_size(ELLIPSIS) - 2)
    kept: list[str] = []
    for char in text:
        budget -= _size(char) - 2
        if budget < 0:
            break
        kept.append(char)
    return "".join(kept) + ELLIPSIS


def _run(text: str, **style: Any) -> dict[str, Any]:
    # A TextRun is never read as markdown.
    return {"type": "TextRun", "text": text, **style}


def _rich(*runs: dict[str, Any], **block: Any) -> dict[str, Any]:
    return {"type": "RichTextBlock", "inlines": list(runs), **block}


def _fact(label: str, value: str) -> dict[str, Any]:
    """A label and its value side by side, as a FactSet shows them, in TextRuns."""
    return {
        "type": "ColumnSet",
        "spacing": "Small",
        "columns": [
            {"type": "Column", "width": 1, "items": [_rich(_run(label, weight="Bolder"))]},
            {"type": "Column", "width": 3, "items": [_rich(_run(value or "(none)"))]},
        ],
    }


def _message(body: list[dict[str, Any]], actions: list[dict[str, Any]]) -> dict[str, Any]:
    card: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": SCHEMA,
        "version": CARD_VERSION,
        "body": body,
    }
    if actions:
        card["actions"] = actions
    return {
        "type": "message",
        "attachments": [{"contentType": CONTENT_TYPE, "contentUrl": None, "content": card}],
    }


def teams_message(event: Event, console_base: str | None) -> dict[str, Any]:
    """The Workflows webhook's body for ``event``: a message with one Adaptive Card, with
    buttons that open the console under ``console_base`` (none without)."""
    summary = summarise(event, console_base)
    title = defuse(fit(summary.title, MAX_LINE))
    head = [_rich(_run(title, weight="Bolder", size="Large"))]
    facts: list[dict[str, Any]] = []
    for number, (label, value) in enumerate(summary.fields):
        fact = _fact(defuse(fit(label, MAX_LABEL)), defuse(fit(value, MAX_FACT)))
        if _size(facts) + _size(fact) > MAX_FACTS_BYTES:
            more = len(summary.fields) - number
            facts.append(_fact("More", f"{more} more facts are on the console's page."))
            break
        facts.append(fact)
    footnote = _run(defuse(fit(summary.footer, MAX_LINE)), isSubtle=True, size="Small")
    footer = [_rich(footnote, separator=True)]
    actions = [
        {
            "type": "Action.OpenUrl",
            "title": link.label,
            "url": link.url,
            **({"style": _STYLES[link.style]} if link.style else {}),
        }
        for link in summary.links
    ]

    # The text and the action are runs filled last, with what the rest leaves of the message.
    text_run = _run("")
    text_blocks = [_rich(text_run, spacing="Medium")] if summary.text else []
    action_run = _run("", fontType="Monospace")
    action_blocks: list[dict[str, Any]] = []
    shown = ""
    if summary.action is not None:
        shown = defuse_json(summary.action.text)
        action_blocks.append(_rich(_run("Bound action", weight="Bolder"), spacing="Medium"))
        notes = [] if summary.action.warning is None else [f"Warning: {summary.action.warning}"]
        if shown != summary.action.text:
            notes.append(DEFUSED)
        for note in notes:
            action_blocks.append(_rich(_run(defuse(note), color="Attention", weight="Bolder")))
        action_blocks.append(_rich(action_run))
    room = MAX_MESSAGE_BYTES - _size(
        _message([*head, *text_blocks, *facts, *action_blocks, *footer], actions)
    )
    text = defuse(summary.text) if summary.text else ""
    if summary.action is not None:
        # The action first, whole if it can be, with some of the text kept.
        keep = min(_size(text) - 2, MIN_TEXT_BYTES) if text else 0
        if _size(shown) - 2 > room - keep:
            too_long = _rich(_run(TOO_LONG, color="Attention", weight="Bolder"))
            action_blocks.append(too_long)
            room -= _size(too_long) + 2  # and the comma and space before it
            shown = fit(shown, room - keep)
        action_run["text"] = shown
        room -= _size(shown) - 2
    if text:
        text_run["text"] = fit(text, min(room, MAX_TEXT_BYTES))
    return _message([*head, *text_blocks, *facts, *action_blocks, *footer], actions)
