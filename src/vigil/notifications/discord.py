"""An event as a Discord webhook message (Execute Webhook): embeds that ping nobody.

``allowed_mentions`` parses nothing, so no text mentions a user, a role, @everyone or @here.
Every value from users or agents has each ASCII punctuation character escaped with a backslash,
which Discord shows as the character itself: no bold, link, heading, list, mention, emoji or
bare URL comes of it. The footer is the exception, as Discord reads no markdown there.

The bound action is a code block of its own, where nothing is markdown and only a run of three
backticks would end it early: each backtick is shown as ``\\u0060``, the same JSON. The action
is shown whole when it fits; else it is cut, and the message says so and points to the
console's page, which shows all of it.

Discord's limits: a title of 256 characters, a description of 4096, 25 fields of a 256
character name and a 1024 character value, a footer of 2048, and 6000 characters across the
titles, descriptions, field names and values and footers of all of a message's embeds. Each
text is cut with "…" to fit, never inside an escape.

The embed's title links to the console. Link buttons are sent too, but a webhook that no
application owns shows them only when it is executed with ``?with_components=true``; without
it Discord ignores them.
"""

from __future__ import annotations

import string
from typing import Any

from vigil.kit.events import ELLIPSIS, cut_escaped
from vigil.notifications.events import Event
from vigil.notifications.summary import summarise

MAX_TITLE = 256
MAX_DESCRIPTION = 4096
MAX_FIELDS = 25
MAX_FIELD_NAME = 256
MAX_FIELD_VALUE = 1024
MAX_FOOTER = 2048
MAX_TOTAL = 6000
MAX_URL = 2048
MAX_BUTTONS = 5
MAX_BUTTON_LABEL = 80
MAX_BUTTON_URL = 512
# What the facts may take of the 6000, so that the text and the action keep room.
MAX_FIELDS_TOTAL = 2000
# What the request's text keeps, at least, when the action would take it all.
MIN_TEXT = 1000
# A field this short sits beside others.
INLINE = 40
LINK_STYLE = 5  # a button that opens a URL
ACTION_ROW = 1
BUTTON = 2

RED, AMBER, GREEN, GREY = 0xCF222E, 0xBF8700, 0x1A7F37, 0x6E7781
COLOURS = {
    "switch.fired": RED,
    "switch.flapping": RED,
    "switch.ran_short": AMBER,
    "delivery.dead_lettered": RED,
    "request.opened": AMBER,
    "request.expiring": AMBER,
    "session.stale": AMBER,
    "request.answered": GREEN,
    "switch.recovered": GREEN,
    "switch.settled": GREEN,
    "alert.acknowledged": GREEN,
}

_ESCAPED = frozenset(string.punctuation)
_FENCE_OPEN, _FENCE_CLOSE = "```json\n", "\n```"
_BACKTICK = "\\u0060"
TOO_LONG = (
    "This action is longer than a Discord message shows whole: open the request's page, "
    "which shows all of it, before deciding."
)
BACKTICKS = f"Each backtick in it is shown as {_BACKTICK}, which is the same JSON."


def length(text: str) -> int:
    """``text``'s length as Discord counts it, at most: in UTF-16 code units."""
    return sum(2 if ord(char) > 0xFFFF else 1 for char in text)


def escape(text: str) -> str:
    """``text`` with each ASCII punctuation character escaped: shown as itself, never as
    markdown, a mention or a link."""
    return "".join(f"\\{char}" if char in _ESCAPED else char for char in text)


def fit(text: str, limit: int) -> str:
    """``text`` escaped, in at most ``limit`` characters as Discord counts them: cut with "…",
    never inside an escape."""
    return cut_escaped(text, limit, escape, length)


def _plain(text: str, limit: int) -> str:
    """``text`` unescaped (for a footer, where Discord reads no markdown), cut to ``limit``."""
    if length(text) <= limit:
        return text
    kept: list[str] = []
    room = limit - length(ELLIPSIS)
    for char in text:
        room -= length(char)
        if room < 0:
            break
        kept.append(char)
    return "".join(kept) + ELLIPSIS


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _code_block(action: str, room: int) -> tuple[str, bool]:
    """The action as a JSON code block in at most ``room`` characters, and whether it is
    whole."""
    inner = action.replace("`", _BACKTICK)
    frame = length(_FENCE_OPEN) + length(_FENCE_CLOSE)
    if length(inner) + frame <= room:
        return f"{_FENCE_OPEN}{inner}{_FENCE_CLOSE}", True
    kept: list[str] = []
    left = room - frame - length(ELLIPSIS)
    for char in inner:
        left -= length(char)
        if left < 0:
            break
        kept.append(char)
    return f"{_FENCE_OPEN}{''.join(kept)}{ELLIPSIS}{_FENCE_CLOSE}", False


def discord_message(event: Event, console_base: str | None) -> dict[str, Any]:
    """The Execute Webhook body for ``event``: an embed of what happened, another of the bound
    action if any, and links to the console under ``console_base`` (none without)."""
    summary = summarise(event, console_base)
    colour = COLOURS.get(event.type, GREY)
    main: dict[str, Any] = {
        "title": fit(_one_line(summary.title), MAX_TITLE),
        "color": colour,
        "timestamp": event.occurred_at.isoformat(),
        "footer": {"text": _plain(summary.footer, MAX_FOOTER)},
    }
    urls = [link.url for link in summary.links if length(link.url) <= MAX_URL]
    if urls:
        main["url"] = urls[0]
    used = length(main["title"]) + length(main["footer"]["text"])

    fields: list[dict[str, Any]] = []
    spent = 0
    for number, (label, value) in enumerate(summary.fields):
        name, shown = fit(label, MAX_FIELD_NAME), fit(value or "(none)", MAX_FIELD_VALUE)
        last = number == MAX_FIELDS - 1 and number < len(summary.fields) - 1
        if last or spent + length(name) + length(shown) > MAX_FIELDS_TOTAL:
            more = len(summary.fields) - number
            fields.append({"name": "More", "value": escape(f"{more} more on the console's page.")})
            spent += length(fields[-1]["name"]) + length(fields[-1]["value"])
            break
        fields.append({"name": name, "value": shown, "inline": length(shown) <= INLINE})
        spent += length(name) + length(shown)
    if fields:
        main["fields"] = fields
    used += spent

    embeds = [main]
    text = escape(summary.text) if summary.text else ""
    if summary.action is not None:
        heading = "Bound action"
        parts: list[str] = []
        if summary.action.warning is not None:
            parts.append(f"**Warning:** {escape(summary.action.warning)}")
        if "`" in summary.action.text:
            parts.append(escape(BACKTICKS))
        preamble = "".join(f"{part}\n" for part in parts)
        note = f"\n**{escape(TOO_LONG)}**"
        keep = min(length(text), MIN_TEXT)
        total = MAX_TOTAL - used - keep - length(heading)
        room = min(MAX_DESCRIPTION, total) - length(preamble)
        block, whole = _code_block(summary.action.text, room)
        if not whole:
            block, _ = _code_block(summary.action.text, room - length(note))
            block += note
        description = preamble + block
        embeds.append({"title": heading, "color": colour, "description": description})
        used += length(heading) + length(description)
    if summary.text:
        main["description"] = fit(summary.text, min(MAX_DESCRIPTION, MAX_TOTAL - used))

    message: dict[str, Any] = {"embeds": embeds, "allowed_mentions": {"parse": []}}
    buttons = [
        {
            "type": BUTTON,
            "style": LINK_STYLE,
            "label": _plain(link.label, MAX_BUTTON_LABEL),
            "url": link.url,
        }
        for link in summary.links
        if length(link.url) <= MAX_BUTTON_URL
    ][:MAX_BUTTONS]
    if buttons:
        message["components"] = [{"type": ACTION_ROW, "components": buttons}]
    return message
