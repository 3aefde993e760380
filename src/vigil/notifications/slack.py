"""An event as a Slack incoming-webhook message (Block Kit).

Its buttons are links to the console, never actions: Slack cannot tell who pressed a button of
an incoming webhook's message, so a person approves or denies on the console, signed in, where
the exact action is shown. Every value that comes from users or agents is escaped (``&``, ``<``
and ``>``, which Slack parses as links and mentions), mrkdwn text is ``verbatim`` (no automatic
links), and every text fits Block Kit's limits, cut with "…" where it would not.
"""

from __future__ import annotations

from typing import Any

from vigil.kit.events import ELLIPSIS
from vigil.notifications.events import Event
from vigil.notifications.summary import summarise

# Block Kit's limits for what is used here.
MAX_HEADER = 150
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_BUTTON_TEXT = 75
MAX_BUTTON_URL = 3000
MAX_CONTEXT_TEXT = 2000  # a context element's text is at most that of a section; kept shorter
MAX_FALLBACK = 3000

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(text: str) -> str:
    """``text`` with Slack's control characters as the entities Slack shows as text."""
    return "".join(_ESCAPES.get(char, char) for char in text)


def fit(text: str, limit: int) -> str:
    """``text`` escaped, in at most ``limit`` characters: cut with "…", never inside an
    entity."""
    escaped = escape(text)
    if len(escaped) <= limit:
        return escaped
    kept: list[str] = []
    size = 0
    for char in text:
        piece = _ESCAPES.get(char, char)
        if size + len(piece) > limit - len(ELLIPSIS):
            break
        kept.append(piece)
        size += len(piece)
    return "".join(kept) + ELLIPSIS


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": False}


def slack_message(event: Event, console_base: str | None) -> dict[str, Any]:
    """The incoming-webhook payload for ``event``: ``text`` (the notification's fallback) and
    ``blocks``; with buttons linking to the console under ``console_base`` (none without)."""
    summary = summarise(event, console_base)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(fit(summary.title, MAX_HEADER))}
    ]
    if summary.text:
        blocks.append({"type": "section", "text": _mrkdwn(fit(summary.text, MAX_SECTION_TEXT))})
    fields = [
        _mrkdwn(f"*{label}*\n" + fit(value, MAX_FIELD - len(label) - 3))
        for label, value in summary.fields
    ]
    for start in range(0, len(fields), MAX_FIELDS):
        blocks.append({"type": "section", "fields": fields[start : start + MAX_FIELDS]})
    if summary.action is not None:
        heading, fence = "*Bound action*\n", "```"
        if summary.action.warning is not None:
            # A block of its own, so that a long action cut to fit never cuts its warning.
            label = "*Warning*: "
            warning = fit(summary.action.warning, MAX_SECTION_TEXT - len(label))
            blocks.append({"type": "section", "text": _mrkdwn(label + warning)})
        room = MAX_SECTION_TEXT - len(heading) - 2 * len(fence)
        blocks.append(
            {
                "type": "section",
                "text": _mrkdwn(f"{heading}{fence}{fit(summary.action.text, room)}{fence}"),
            }
        )
    blocks.append({"type": "context", "elements": [_mrkdwn(fit(summary.footer, MAX_CONTEXT_TEXT))]})
    buttons = [
        {
            "type": "button",
            "action_id": link.id,
            "text": _plain(fit(link.label, MAX_BUTTON_TEXT)),
            "url": link.url,
            **({"style": link.style} if link.style else {}),
        }
        for link in summary.links
        if len(link.url) <= MAX_BUTTON_URL
    ]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    return {"text": fit(summary.title, MAX_FALLBACK), "blocks": blocks}
