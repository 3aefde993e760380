"""The namespace's notification channels, for operators: the listing with the form that
creates one, and one channel's page with the forms that test, disable or enable, rotate and
delete it (their handlers are in ``channel_actions``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from vigil.console.components import (
    badge,
    facts,
    ident,
    link,
    named,
    problem,
    relative,
    section,
    shown,
    table,
    when,
)
from vigil.console.frame import REFRESH_LISTINGS_MS
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit, idempotency_key, reason
from vigil.errors import HTTP_STATUS, VigilError
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.records import EVENT_TYPES, ROTATION_OVERLAP

CHANNEL_HEADERS = ("Name", "Kind", "Sends to", "Events", "State", "Changed", "Version")
HERE = f"{PREFIX}/channels"
# The creation form has a box per event type, each its own field (a form's field is read
# once): ``event:switch.fired`` and so on.
EVENT_FIELD = "event:"
EVENT_WORDS = {
    "switch.fired": "a dead-man switch fired (and, when it beats again, recovered)",
    "request.opened": "a request was asked (and, when it is, withdrawn)",
    "request.expiring": "a request is about to expire",
    "request.answered": "a request was answered or decided",
    "request.expired": "a request expired unanswered",
    "session.stale": "a session went stale",
    "delivery.dead_lettered": "a mailbox message was dead-lettered",
}
KINDS = (
    ("webhook", "Webhook (signed JSON POSTs)"),
    ("slack", "Slack incoming webhook"),
    ("teams", "Microsoft Teams (Workflows webhook)"),
    ("discord", "Discord webhook"),
    ("pagerduty", "PagerDuty (Events API v2)"),
    ("email", "Email"),
)
# The kinds whose URL is their credential: never written back into a form the tool refused.
SECRET_URLS = frozenset({"slack", "teams", "discord"})
# What the creation form holds when the page is opened.
CREATE_DEFAULTS = {"kind": "webhook", f"{EVENT_FIELD}switch.fired": "yes"}


# -- pages ---------------------------------------------------------------------------------------
def channels(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """Where each channel sends, which events and whether it is enabled; never a secret, and a
    Slack webhook only by its host. Operators create one below."""
    rest = _create_section(responder, visit, CREATE_DEFAULTS, None, idempotency_key())
    return responder.live_page(
        request, "Channels", HERE, _listing(responder, visit), rest, visit, REFRESH_LISTINGS_MS
    )


def channels_refused(
    responder: Responder, visit: Visit, form: Mapping[str, str], error: VigilError
) -> HttpResponse:
    """The channels' page answering a creation the tool refused: why, above the form as it
    was sent, under the same key (nothing was created, so the key is still free)."""
    key = form.get("idempotency_key") or idempotency_key()
    rest = _create_section(responder, visit, form, reason(error), key)
    live = _listing(responder, visit)
    status = HTTP_STATUS[error.code]
    return responder.whole_page(
        "Channels", HERE, live, rest, visit, REFRESH_LISTINGS_MS, status=status
    )


def channel(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """One channel: its rules, state, signing secrets (when made, never what) and who made
    it; and, for an operator, what can be done to it."""
    channel_id = request.query.get("id", "")
    if not channel_id:
        return responder.unnamed("channel", HERE, visit)
    found = find_channel(responder, visit, channel_id)
    if isinstance(found, str):
        return responder.not_found("Channel", found, visit)
    parts = [channel_facts(found, responder.now(), responder.names(visit))]
    if responder.may(visit, "set_channel_state"):
        parts.append(section("Act on it", "act", _actions(found, visit.csrf)))
    return responder.page(found["name"], join(parts), visit, here=HERE)


# -- what they read ------------------------------------------------------------------------------
def find_channel(responder: Responder, visit: Visit, channel_id: str) -> Mapping[str, Any] | str:
    """The channel ``channel_id`` as list_channels shows it (no tool reads one channel, and a
    namespace has at most 50), or why it cannot be had."""
    found = responder.call(visit, "list_channels")
    if isinstance(found, str):
        return found
    for each in found["channels"]:
        if each["id"] == channel_id:
            return dict(each)
    return "not_found: there is no such channel in your namespace."


def channel_path(channel_id: str) -> str:
    return f"{PREFIX}/channel?{urlencode({'id': channel_id})}"


# -- what they show ------------------------------------------------------------------------------
def _listing(responder: Responder, visit: Visit) -> Html:
    now = responder.now()
    return shown(
        responder.call(visit, "list_channels"),
        lambda page: table(
            "Notification channels",
            CHANNEL_HEADERS,
            channel_rows(page["channels"], now),
            "No channel yet.",
        ),
    )


def channel_rows(channels: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            link(f"{PREFIX}/channel", c["name"], id=c["id"]),
            c["kind"],
            c["target"],
            rules_text(c["rules"]),
            _state(c),
            relative(c["updated_at"], now),
            c["version"],
        ]
        for c in channels
    ]


def _state(channel: Mapping[str, Any]) -> Html:
    return render(
        "{state} {why}", state=badge(channel["state"]), why=channel["disabled_reason"] or ""
    )


def rules_text(rules: Iterable[Mapping[str, Any]]) -> str:
    return "; ".join(
        ", ".join(r["events"]) + (f" under {r['scope_prefix']}" if r["scope_prefix"] else "")
        for r in rules
    )


def channel_summary(c: Mapping[str, Any]) -> Html:
    """What a channel is, in four lines: for the pages that answer its forms."""
    return facts(
        [
            ("Kind", c["kind"]),
            ("Sends to", c["target"]),
            ("Events", rules_text(c["rules"])),
            ("State", _state(c)),
        ]
    )


def channel_facts(c: Mapping[str, Any], now: datetime, names: Mapping[str, str]) -> Html:
    pairs: list[tuple[str, Any]] = [
        ("Channel", ident(c["id"])),
        ("Kind", c["kind"]),
        ("Sends to", c["target"]),
        ("Events", render('<ul class="plain">{r}</ul>', r=join(_rule(r) for r in c["rules"]))),
        ("State", _state(c)),
    ]
    if c["kind"] == "webhook":
        pairs.append(("Signing secrets", _secrets(c["signing_secrets"], now)))
    pairs += [
        ("Created by", named(c["created_by"], None, names)),
        ("Created", when(c["created_at"])),
        ("Changed", relative(c["updated_at"], now)),
        ("Version", c["version"]),
    ]
    return facts(pairs)


def _rule(rule: Mapping[str, Any]) -> Html:
    """A rule in full: its events, and whether an alert is repeated or escalated (which only
    REST and MCP set, so the console says it where it shows the rule)."""
    said = rules_text([rule])
    if rule["repeat_every_minutes"] is not None:
        said += f"; repeated every {rule['repeat_every_minutes']} min until acknowledged"
    if rule["escalate_to"] is not None:
        said += f"; escalated after {rule['escalate_after_minutes']} min"
    return render("<li>{said}</li>", said=said)


def _secrets(secrets: Iterable[Mapping[str, Any]], now: datetime) -> Html:
    """When each signing secret was made, and until when a replaced one signs: never what
    it is."""
    return render(
        '<ul class="plain">{items}</ul>',
        items=join(
            render(
                "<li>made {made}{until}</li>",
                made=relative(s["created_at"], now),
                until=render(", signs until {at}", at=relative(s["until"], now))
                if s["until"]
                else " (the newest)",
            )
            for s in secrets
        ),
    )


# -- forms ---------------------------------------------------------------------------------------
def _create_section(
    responder: Responder,
    visit: Visit,
    values: Mapping[str, str],
    refusal: str | None,
    key: str,
) -> Html:
    """The form that creates a channel, for those who may, holding ``values`` under the
    idempotency key ``key``; a refusal is said above it. A Slack, Teams or Discord webhook's URL
    is its credential, and so is a PagerDuty routing key: neither is written back into a form
    the tool refused."""
    if not responder.may(visit, "create_channel"):
        return Html("")
    kinds = join(
        render(
            '<option value="{value}"{chosen}>{label}</option>',
            value=value,
            label=label,
            chosen=Html(" selected") if value == values.get("kind") else Html(""),
        )
        for value, label in KINDS
    )
    events = join(
        render(
            '<div class="check"><input type="checkbox" id="event-{event}" name="{field}" '
            'value="yes"{checked}><label for="event-{event}">{event}: {words}</label></div>',
            event=event,
            field=EVENT_FIELD + event,
            words=EVENT_WORDS[event],
            checked=Html(" checked") if values.get(EVENT_FIELD + event) else Html(""),
        )
        for event in EVENT_TYPES
    )
    return section(
        "New channel",
        "create",
        render(
            "{refusal}"
            '<form method="post" action="/console/channels/create" class="post">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<input type="hidden" name="idempotency_key" value="{key}">'
            '<label for="channel-name">Name</label>'
            '<input id="channel-name" name="name" value="{name}" required>'
            '<label for="channel-kind">Kind</label>'
            '<select id="channel-kind" name="kind">{kinds}</select>'
            '<label for="channel-url">URL (the webhook\'s; for PagerDuty, only to use its EU '
            "region: https://events.eu.pagerduty.com)</label>"
            '<input id="channel-url" name="url" type="url" value="{url}">'
            '<label for="channel-key">Routing key (a PagerDuty channel\'s: its Events API v2 '
            "integration's)</label>"
            '<input id="channel-key" name="routing_key" type="password" autocomplete="off">'
            '<label for="channel-email">Address (an email channel\'s)</label>'
            '<input id="channel-email" name="email" type="email" value="{email}">'
            "<fieldset><legend>Events it receives</legend>{events}</fieldset>"
            '<label for="channel-prefix">Only for scopes beginning with (optional)</label>'
            '<input id="channel-prefix" name="scope_prefix" value="{prefix}">'
            '<p class="hint">Repeats and escalation of alerts, and more than one rule, are set '
            "with the create_channel tool over REST or MCP.</p>"
            '<button type="submit">Create the channel</button></form>',
            refusal=problem(refusal) if refusal else Html(""),
            csrf=visit.csrf,
            key=key,
            name=values.get("name", ""),
            kinds=kinds,
            url=values.get("url", "") if values.get("kind") not in SECRET_URLS else "",
            email=values.get("email", ""),
            events=events,
            prefix=values.get("scope_prefix", ""),
        ),
    )


def create_arguments(form: Mapping[str, str]) -> dict[str, Any]:
    """``create_channel``'s arguments from the creation form: one rule, of the events ticked
    (in the form's order) and the scope prefix if one is given; the URL or the address,
    whichever is filled in, for the tool to say if it is the wrong one for the kind."""
    rule: dict[str, Any] = {
        "events": [name.removeprefix(EVENT_FIELD) for name in form if name.startswith(EVENT_FIELD)]
    }
    if form.get("scope_prefix"):
        rule["scope_prefix"] = form["scope_prefix"]
    arguments: dict[str, Any] = {
        "name": form.get("name", ""),
        "kind": form.get("kind", ""),
        "rules": [rule],
        "idempotency_key": form.get("idempotency_key") or None,
    }
    for target in ("url", "email", "routing_key"):
        if form.get(target):
            arguments[target] = form[target]
    return arguments


def _actions(c: Mapping[str, Any], csrf: str) -> Html:
    """A channel's buttons, each bound to the version on the page but the test, which changes
    nothing: if the channel changed since, they do nothing and say so."""
    bound = render(
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<input type="hidden" name="version" value="{version}">',
        csrf=csrf,
        id=c["id"],
        version=c["version"],
    )
    to = "enabled" if c["state"] == "disabled" else "disabled"
    rotate = (
        render(
            '<form method="post" action="/console/channels/rotate">{bound}'
            '<input type="hidden" name="idempotency_key" value="{key}">'
            '<button type="submit">Rotate the signing secret</button></form>',
            bound=bound,
            key=idempotency_key(),
        )
        if c["kind"] == "webhook"
        else Html("")
    )
    return render(
        '<div class="actions">'
        '<form method="post" action="/console/channels/test">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<button type="submit">Send a test</button></form>'
        '<form method="post" action="/console/channels/state">{bound}'
        '<input type="hidden" name="state" value="{to}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<button type="submit">{verb}</button></form>'
        "{rotate}"
        '<form method="post" action="/console/channels/delete">{bound}'
        '<button type="submit" class="deny">Delete</button></form></div>'
        '<p class="hint">A test sends one channel.test event now, even to a disabled channel. '
        "A new signing secret is shown once, and the one it replaces signs on for {overlap} "
        "hours. Deleting asks first.</p>",
        csrf=csrf,
        id=c["id"],
        bound=bound,
        to=to,
        key=idempotency_key(),
        verb="Enable" if to == "enabled" else "Disable",
        rotate=rotate,
        overlap=int(ROTATION_OVERLAP.total_seconds() // 3600),
    )
