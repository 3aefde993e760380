"""Pauses of switches, as the pages show them (which pauses hold a switch, their rows, how
they end), and as operators set and end them from the switches' page: the form that pauses a
prefix, the page that confirms it by listing the armed switches it would hold, and the button
that ends a pause at the version shown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from vigil.clock import iso
from vigil.console.components import (
    badge,
    countdown,
    link,
    named,
    problem,
    relative,
    section,
    when,
)
from vigil.console.html import Html, join, render
from vigil.console.responder import idempotency_key
from vigil.switches.records import pause_reaches

PAUSE_HEADERS = ("Scopes beginning with", "Ends", "Set by", "Set", "Reason")
# The column of the button that ends a pause, for an operator.
RESUME_HEADER = "End it now"
# How long a pause from the console lasts at most, in hours, as its form offers it; "" is
# no set time, for a pause that ends only at each switch's next beat.
PAUSE_HOURS = (
    ("1", "1 hour"),
    ("4", "4 hours"),
    ("12", "12 hours"),
    ("24", "1 day"),
    ("72", "3 days"),
    ("168", "7 days"),
    ("", "no set time"),
)
# What the pause form holds when the switches' page is opened.
PAUSE_DEFAULTS = {"scope_prefix": "", "for_hours": "1", "until_next_beat": "", "reason": ""}


# -- which pauses, and their rows ----------------------------------------------------------------
def pausing(
    pauses: Iterable[Mapping[str, Any]], switch: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """The pauses of ``pauses`` (in force, as list_pauses returns them) whose prefix begins
    the switch's scope; one until the next beat covers it only while it is not beaten since."""
    return [pause for pause in pauses if pause_reaches(pause, switch)]


def pause_rows(
    pauses: Iterable[Mapping[str, Any]],
    now: datetime,
    names: Mapping[str, str],
    csrf: str | None = None,
) -> list[list[Any]]:
    """A row per pause; with the visitor's ``csrf`` (an operator's), the button that ends it
    in a last column (under RESUME_HEADER)."""
    return [
        [
            link("/console/switches", pause["scope_prefix"], scope_prefix=pause["scope_prefix"]),
            pause_end(pause, now),
            named(pause["paused_by"], None, names),
            relative(pause["paused_at"], now),
            pause["reason"] or "—",
            *([resume_form(pause, csrf)] if csrf is not None else []),
        ]
        for pause in pauses
    ]


def pause_end(pause: Mapping[str, Any], now: datetime) -> Html:
    parts = []
    if pause["until"] is not None:
        parts.append(countdown(pause["until"], now))
    if pause["until_next_beat"]:
        parts.append(Html("at each switch's next beat"))
    return join(parts, " or ")


def paused_by(pauses: Sequence[Mapping[str, Any]], now: datetime) -> Html:
    """One line on a switch's page: which pause holds it, or that none does."""
    if not pauses:
        return Html("no")
    return join(
        (
            render(
                "{badge} under {prefix}, ending {end}",
                badge=badge("paused"),
                prefix=pause["scope_prefix"],
                end=pause_end(pause, now),
            )
            for pause in pauses
        ),
        "; ",
    )


# -- setting and ending them ---------------------------------------------------------------------
def resume_form(pause: Mapping[str, Any], csrf: str) -> Html:
    """Ending a pause, named by its prefix at the version on the page: if it changed since
    (ended and set again), the form ends nothing."""
    return render(
        '<form method="post" action="/console/switches/resume" class="inline">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="scope_prefix" value="{prefix}">'
        '<input type="hidden" name="version" value="{version}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<button type="submit" aria-label="Resume {prefix}">Resume</button></form>',
        csrf=csrf,
        prefix=pause["scope_prefix"],
        version=pause["version"],
        key=idempotency_key(),
    )


def pause_form(csrf: str, values: Mapping[str, str], refusal: str | None, key: str) -> Html:
    """The form that pauses a prefix, holding ``values`` (what was sent, after a refusal,
    said above it) under the idempotency key ``key``."""
    hours = join(
        render(
            '<option value="{value}"{chosen}>{label}</option>',
            value=value,
            label=label,
            chosen=Html(" selected") if value == values.get("for_hours", "") else Html(""),
        )
        for value, label in PAUSE_HOURS
    )
    return section(
        "Pause switches",
        "pause",
        render(
            "{refusal}"
            '<form method="post" action="/console/switches/pause" class="post">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<input type="hidden" name="idempotency_key" value="{key}">'
            '<label for="pause-prefix">Every switch whose scope begins with</label>'
            '<input id="pause-prefix" name="scope_prefix" value="{prefix}" required>'
            '<label for="pause-hours">For at most</label>'
            '<select id="pause-hours" name="for_hours">{hours}</select>'
            '<div class="check"><input type="checkbox" id="pause-beat" name="until_next_beat" '
            'value="yes"{beat}><label for="pause-beat">or until each switch beats again, '
            "if sooner</label></div>"
            '<label for="pause-reason">Reason (optional, for the people watching)</label>'
            '<input id="pause-reason" name="reason" value="{reason}">'
            '<p class="hint">A paused switch past its deadline neither fires nor alerts. You '
            "confirm on the next page, which lists the armed switches it would hold.</p>"
            '<button type="submit">Pause</button></form>',
            refusal=problem(refusal) if refusal else Html(""),
            csrf=csrf,
            key=key,
            prefix=values.get("scope_prefix", ""),
            hours=hours,
            beat=Html(" checked") if values.get("until_next_beat") == "yes" else Html(""),
            reason=values.get("reason", ""),
        ),
    )


def pause_arguments(form: Mapping[str, str], now: datetime) -> dict[str, Any]:
    """``pause_switches``'s arguments from the pause form: its end ``for_hours`` from now, or,
    from the confirmation, the ``until`` it showed, so the pause ends when the person read."""
    if form.get("confirm") == "yes":
        until = form.get("until") or None
    else:
        # A number of hours the form does not offer comes only from a forged form: it goes to
        # the tool as it is, and is refused there.
        hours = form.get("for_hours", "")
        offered = {value for value, _ in PAUSE_HOURS if value}
        until = iso(now + timedelta(hours=int(hours))) if hours in offered else hours or None
    return {
        "scope_prefix": form.get("scope_prefix", ""),
        "until": until,
        "until_next_beat": form.get("until_next_beat") == "yes",
        "reason": form.get("reason") or None,
        "idempotency_key": form.get("idempotency_key") or None,
    }


def pause_confirmation(
    arguments: Mapping[str, Any],
    held: Sequence[Mapping[str, Any]],
    more: bool,
    now: datetime,
    csrf: str,
) -> Html:
    """The second step of pausing: the armed switches it would hold now (``held``, the first
    page of them: ``more`` says there are others), when it ends, and the form that pauses,
    carrying that end."""
    prefix = arguments["scope_prefix"]
    others = (
        render(
            "<li>{a}</li>",
            a=link("/console/switches", "and more", state="armed", scope_prefix=prefix),
        )
        if more
        else ""
    )
    switches = (
        render(
            '<ul class="plain">{items}{others}</ul>',
            items=join(
                render("<li>{a}</li>", a=link("/console/switch", s["scope"], scope=s["scope"]))
                for s in held
            ),
            others=others,
        )
        if held
        else Html('<p class="empty">No switch under it is armed now; any armed later is held.</p>')
    )
    ends = pause_end(
        {"until": arguments["until"], "until_next_beat": arguments["until_next_beat"]}, now
    )
    return render(
        '<dl class="facts"><dt>Ends</dt><dd>{ends}{at}</dd><dt>Reason</dt><dd>{reason}</dd></dl>'
        '<section aria-labelledby="held-title" id="held">'
        '<h2 id="held-title">Armed switches it would hold</h2>{switches}</section>'
        '<form method="post" action="/console/switches/pause" class="reply">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="scope_prefix" value="{prefix}">'
        '<input type="hidden" name="until" value="{until}">'
        '<input type="hidden" name="until_next_beat" value="{beat}">'
        '<input type="hidden" name="reason" value="{reason_value}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<input type="hidden" name="confirm" value="yes">'
        '<div class="decision"><button type="submit" class="deny">Yes, pause</button>'
        '<a href="/console/switches">Cancel</a></div></form>',
        ends=ends,
        at=render(" ({at})", at=when(arguments["until"])) if arguments["until"] else "",
        reason=arguments["reason"] or "—",
        switches=switches,
        csrf=csrf,
        prefix=prefix,
        until=arguments["until"] or "",
        beat="yes" if arguments["until_next_beat"] else "",
        reason_value=arguments["reason"] or "",
        key=arguments["idempotency_key"] or idempotency_key(),
    )
