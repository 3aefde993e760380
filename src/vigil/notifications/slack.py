"""An event as a Slack incoming-webhook message (Block Kit).

Its buttons link to the console; a channel given its Slack app's signing secret also gets, on an
open approval or question with choices, buttons that act (``ACTION_PREFIX``...): Slack posts
each click, signed, to the interactions route (``vigil.transports.slack_interactions``), which
decides as the Vigil person the clicking Slack user linked from the console. Every value that
comes from users or agents is escaped (``&``, ``<`` and ``>``, which Slack parses as links and
mentions), mrkdwn text is ``verbatim`` (no automatic links), and every text fits Block Kit's
limits, cut with "…" where it would not.
"""

from __future__ import annotations

from typing import Any

from vigil.kit.events import cut_escaped
from vigil.notifications.events import Event
from vigil.notifications.summary import summarise
from vigil.requests.events import RequestData

# Block Kit's limits for what is used here.
MAX_HEADER = 150
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_BUTTON_TEXT = 75
MAX_BUTTON_URL = 3000
MAX_CONTEXT_TEXT = 2000  # a context element's text is at most that of a section; kept shorter
MAX_FALLBACK = 3000
MAX_ACTIONS = 25

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}

# The action ids of the buttons that decide; a question's choices are numbered after CHOICE.
ACTION_PREFIX = "vigil."
APPROVE = f"{ACTION_PREFIX}approve"
DENY = f"{ACTION_PREFIX}deny"
CHOICE = f"{ACTION_PREFIX}choice."
# The field of an approval's message where a denial's reason is typed: Slack sends what it holds
# with the click (the payload's state), so a Deny carries it with no dialog and no bot token.
REASON = f"{ACTION_PREFIX}reason"
MAX_REASON = 500


def escape(text: str) -> str:
    """``text`` with Slack's control characters as the entities Slack shows as text."""
    return "".join(_ESCAPES.get(char, char) for char in text)


def fit(text: str, limit: int) -> str:
    """``text`` escaped, in at most ``limit`` characters: cut with "…", never inside an
    entity."""
    return cut_escaped(text, limit, escape)


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": False}


def decision_buttons(data: RequestData) -> list[dict[str, Any]]:
    """The buttons that decide an open approval (Approve, Deny) or question (each choice),
    each naming the request; none for anything else."""
    if data.state != "open":
        return []
    if data.kind == "approval":
        return [
            _action(APPROVE, "Approve", data.request_id, "primary"),
            _action(DENY, "Deny", data.request_id, "danger"),
        ]
    if data.kind == "question" and data.choices:
        return [
            _action(f"{CHOICE}{n}", choice, data.request_id, None)
            for n, choice in enumerate(data.choices)
        ]
    return []


def _action(action_id: str, label: str, value: str, style: str | None) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action_id,
        "text": _plain(fit(label, MAX_BUTTON_TEXT)),
        "value": value,
        **({"style": style} if style else {}),
    }


_ACTION_HEADING, _FENCE = "*Bound action*\n", "```"
# The characters of a bound action's text (escaped) that one section shows whole.
ACTION_ROOM = MAX_SECTION_TEXT - len(_ACTION_HEADING) - 2 * len(_FENCE)
TOO_LONG = (
    "This action is longer than a Slack message shows whole, so it is not decided here: "
    "open the request's page, which shows all of it, to decide."
)


def shows_whole(action: Any) -> bool:
    """Whether a Slack message shows ``action`` (a request's bound action, as stored) whole:
    what a person approves is what they were shown, so a message that would cut it offers
    no decision, and a click on one is refused."""
    from vigil.kit.canonical import shown_json

    return action is None or len(escape(shown_json(action).text)) <= ACTION_ROOM


def slack_message(
    event: Event, console_base: str | None, *, interactive: bool = False
) -> dict[str, Any]:
    """The incoming-webhook payload for ``event``: ``text`` (the notification's fallback) and
    ``blocks``; with buttons linking to the console under ``console_base`` (none without), and
    for an ``interactive`` channel the buttons that decide an open request."""
    summary = summarise(event, console_base)
    whole = summary.action is None or len(escape(summary.action.text)) <= ACTION_ROOM
    deciding = (
        decision_buttons(event.data)
        if interactive and whole and isinstance(event.data, RequestData)
        else []
    )
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
        heading, fence = _ACTION_HEADING, _FENCE
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
        if not whole:
            blocks.append({"type": "section", "text": _mrkdwn(f"*{TOO_LONG}*")})
    blocks.append({"type": "context", "elements": [_mrkdwn(fit(summary.footer, MAX_CONTEXT_TEXT))]})
    links = [
        {
            "type": "button",
            "action_id": link.id,
            "text": _plain(fit(link.label, MAX_BUTTON_TEXT)),
            "url": link.url,
            **({"style": link.style} if link.style and not deciding else {}),
        }
        for link in summary.links
        if len(link.url) <= MAX_BUTTON_URL
    ]
    # Buttons that decide replace the links that only lead to the console's decision; one link
    # to the request's page stays, and an actions block holds at most 25 elements.
    buttons = [*deciding, *links[: 1 if deciding else None]][:MAX_ACTIONS]
    if any(button.get("action_id") == DENY for button in deciding):
        blocks.append(
            {
                "type": "input",
                "block_id": REASON,
                "optional": True,
                "label": _plain("Reason, if you deny (the asker reads it)"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON,
                    "multiline": True,
                    "max_length": MAX_REASON,
                },
            }
        )
    if buttons:
        blocks.append({"type": "actions", "block_id": "vigil", "elements": buttons})
    return {"text": fit(summary.title, MAX_FALLBACK), "blocks": blocks}
