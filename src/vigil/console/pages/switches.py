"""The switches' pages: the listing with the pauses in force, one switch with its pauses,
leases and deaths; the forms that pause a prefix and end a pause (operators'), and the one
that acknowledges a fired switch's alert; and the rows other pages show switches, deaths and
leases in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from vigil.console.charts import switch_day
from vigil.console.components import (
    allowed,
    badge,
    countdown,
    counted,
    facts,
    link,
    listed,
    named,
    next_page,
    parse_time,
    relative,
    section,
    shown,
    span,
    switch_state,
    table,
    verbatim,
    when,
)
from vigil.console.frame import REFRESH_LISTINGS_MS
from vigil.console.html import Html, esc, join, render
from vigil.console.pages.pauses import (
    PAUSE_DEFAULTS,
    PAUSE_HEADERS,
    RESUME_HEADER,
    pause_arguments,
    pause_confirmation,
    pause_form,
    pause_rows,
    paused_by,
    pausing,
)
from vigil.console.responder import (
    PREFIX,
    Responder,
    Visit,
    idempotency_key,
    integer,
    reason,
    redirect,
)
from vigil.errors import HTTP_STATUS, VigilError
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.switches.records import expiring_soon

SWITCH_HEADERS = ("Scope", "State", "Fires", "Holder", "Generation", "Last beat")
DEATH_HEADERS = ("Scope", "Generation", "Holder", "Fired", "Lateness", "Leases released", "Done")
LEASE_HEADERS = ("Resource", "Holder", "Generation", "Expires")


# -- handlers ----------------------------------------------------------------------------------
def switches(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    live, filters = _listing(responder, visit, request.query)
    rest = _pause_form(responder, visit, PAUSE_DEFAULTS, None, idempotency_key())
    return responder.live_page(
        request, "Switches", f"{PREFIX}/switches", live, rest, visit, lead=filters
    )


def _listing(responder: Responder, visit: Visit, query: Mapping[str, str]) -> tuple[Html, Html]:
    """The switches' page: its live part (the switches chosen by ``query``, and the pauses in
    force, each with the button that ends it for an operator) and its filters."""
    now = responder.now()
    state = query.get("state") or None
    prefix = query.get("scope_prefix") or None
    arguments = {"state": state, "scope_prefix": prefix, "cursor": query.get("cursor")}
    found = responder.call(visit, "list_switches", **{k: v for k, v in arguments.items() if v})
    paused = responder.call(visit, "list_pauses")
    pause_list = listed(paused, "pauses")
    names = responder.names(visit)
    states = join(
        render(
            '<option value="{v}"{sel}>{t}</option>',
            v=v,
            t=t,
            sel=Html(" selected") if v == (state or "") else Html(""),
        )
        for v, t in (
            ("", "any"),
            ("armed", "armed"),
            ("disarmed", "disarmed"),
            ("expired", "fired"),
            ("failed", "fired, marked failed"),
        )
    )
    filters = render(
        '<form method="get" action="/console/switches" class="filters">'
        '<label for="state">State</label><select id="state" name="state">{states}</select>'
        '<label for="scope_prefix">Scope starts with</label>'
        '<input id="scope_prefix" name="scope_prefix" value="{prefix}">'
        '<button type="submit">Show</button></form>',
        states=states,
        prefix=prefix or "",
    )

    def draw(page: Mapping[str, Any]) -> Html:
        more = Html("")
        if page["next_cursor"]:
            query = {k: v for k, v in arguments.items() if v and k != "cursor"}
            more = next_page("/console/switches", {**query, "cursor": page["next_cursor"]})
        switches = page["switches"]
        return join([switches_table("Switches", switches, now, pause_list, names), more])

    live = shown(found, draw)
    if allowed(paused):
        csrf = visit.csrf if responder.may(visit, "resume_switches") else None
        headers = PAUSE_HEADERS + ((RESUME_HEADER,) if csrf else ())
        rows = pause_rows(pause_list, now, names, csrf)
        live = join(
            [
                live,
                section(
                    "Pauses in force",
                    "pauses",
                    table(
                        "The pauses in force, by scope prefix",
                        headers,
                        rows,
                        "No switch is paused.",
                    ),
                ),
            ]
        )
    return live, filters


def _pause_form(
    responder: Responder,
    visit: Visit,
    values: Mapping[str, str],
    refusal: str | None,
    key: str,
) -> Html:
    """The form that pauses a prefix, for those who may."""
    if not responder.may(visit, "pause_switches"):
        return Html("")
    return pause_form(visit.csrf, values, refusal, key)


def switch(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    scope = request.query.get("scope", "")
    if not scope:
        return responder.unnamed("switch", "/console/switches", visit)
    packet = responder.call(visit, "resume_packet", scope=scope)
    deaths = responder.call(visit, "list_deaths")
    paused = responder.call(visit, "list_pauses")
    if isinstance(packet, str):
        return responder.not_found(scope or "Switch", packet, visit)
    names = responder.names(visit)
    over = pausing(listed(paused, "pauses"), packet)
    history = [d for d in listed(deaths, "deaths") if d["scope"] == scope]
    death = packet["death"]
    progress = packet["last_progress"]
    live = join(
        [
            facts(
                [
                    ("State", switch_state(packet["state"])),
                    (
                        "Fires",
                        countdown(packet["deadline"], now) if packet["state"] == "armed" else "—",
                    ),
                    ("Paused", paused_by(over, now)),
                    ("Holder", named(packet["holder"], packet["agent_id"], names)),
                    ("Generation", packet["generation"]),
                    ("Armed", when(packet["armed_at"])),
                    ("Last beat", relative(packet["last_beat_at"], now)),
                    (
                        ("Schedule", packet["schedule"])
                        if packet.get("schedule")
                        else ("Window", span(packet["expect_within_seconds"]))
                    ),
                    *(
                        [("Run", render("started {t}", t=relative(packet["run_started_at"], now)))]
                        if packet.get("run_started_at")
                        else []
                    ),
                    ("On expiry", actions_in_words(packet["on_expiry"])),
                    (
                        "Depends on",
                        link("/console/switch", packet["depends_on"], scope=packet["depends_on"])
                        if packet.get("depends_on")
                        else "Nothing",
                    ),
                ]
            ),
            section("Its last 24 hours", "day", _day(packet, history, now)),
            section(
                "Pauses over this switch",
                "paused",
                table(
                    "Pauses in force whose prefix begins this scope",
                    PAUSE_HEADERS,
                    pause_rows(over, now, names),
                    "No pause covers this switch.",
                ),
            ),
            section(
                "Last progress",
                "progress",
                verbatim(progress)
                if progress
                else Html('<p class="empty">No progress reported.</p>'),
            ),
            section(
                "Leases held now",
                "held",
                leases_table("Held leases of this scope", packet["held_leases"], now, names),
            ),
            section(
                "Latest death",
                "death",
                death_facts(death, now, names)
                if death
                else Html('<p class="empty">This switch has not died.</p>'),
            ),
            section(
                "Leases its death released",
                "released",
                table(
                    "Released leases",
                    ("Resource", "Generation"),
                    [[r["resource"], r["generation"]] for r in packet["released_leases"] or []],
                    "None released.",
                ),
            ),
            section(
                "Deaths",
                "history",
                table(
                    "Recent deaths of this scope, newest first",
                    DEATH_HEADERS,
                    death_rows(history, now, names),
                    "No recent death.",
                ),
            ),
        ]
    )
    alert = death.get("alert_id") if death else None
    acknowledge = (
        section("Its alert", "alert", acknowledge_form(alert, scope, visit.csrf))
        if alert
        else Html("")
    )
    return responder.live_page(
        request, scope, f"{PREFIX}/switches", live, acknowledge, visit, REFRESH_LISTINGS_MS
    )


def _day(packet: Mapping[str, Any], deaths: Iterable[Mapping[str, Any]], now: datetime) -> Html:
    """The picture of a switch's day: its beats (the last of each half hour, and the last of
    all), when it was armed, its recent deaths, and its deadline while armed."""
    beats = [datetime.fromisoformat(at) for at in packet["recent_beats"]]
    last_beat = parse_time(packet["last_beat_at"])
    if last_beat is not None:
        # The day's entries keep the minute; the last beat is known to the millisecond.
        beats = [b for b in beats if b != last_beat.replace(second=0, microsecond=0)]
        beats.append(last_beat)
    return switch_day(
        beats=beats,
        armed_at=parse_time(packet["armed_at"]),
        deaths=[(datetime.fromisoformat(d["fired_at"]), d["lateness_seconds"]) for d in deaths],
        deadline=parse_time(packet["deadline"]) if packet["state"] == "armed" else None,
        now=now,
        ident="day",
    )


def pause(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Pausing a prefix: the form's first submission shows what it would hold and asks again
    (or, if the tool would refuse it, says why on the switches' page); the confirmation
    pauses."""
    now = responder.now()
    back = f"{PREFIX}/switches"
    arguments = pause_arguments(form, now)
    if form.get("confirm") != "yes":
        refusal = responder.check(visit, "pause_switches", arguments)
        if refusal is None:
            return _confirm_pause(responder, visit, arguments, now)
    else:
        done = responder.attempt(visit, "pause_switches", arguments)
        if not isinstance(done, VigilError):
            return redirect(back)
        refusal = done
    if not responder.may(visit, "pause_switches"):
        return responder.not_done(refusal, back, visit)
    live, filters = _listing(responder, visit, {})
    values = {**PAUSE_DEFAULTS, **form}
    key = arguments["idempotency_key"] or idempotency_key()
    rest = _pause_form(responder, visit, values, reason(refusal), key)
    status = HTTP_STATUS[refusal.code]
    return responder.whole_page("Switches", back, live, rest, visit, status=status, lead=filters)


def _confirm_pause(
    responder: Responder, visit: Visit, arguments: Mapping[str, Any], now: datetime
) -> HttpResponse:
    prefix = arguments["scope_prefix"]
    armed = responder.call(visit, "list_switches", scope_prefix=prefix, state="armed")
    more = not isinstance(armed, str) and armed["next_cursor"] is not None
    body = pause_confirmation(arguments, listed(armed, "switches"), more, now, visit.csrf)
    title = f"Pause every switch under “{prefix}”?"
    return responder.page(title, body, visit, here=f"{PREFIX}/switches")


def resume(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Ending a pause, at the version the page showed."""
    arguments = {
        "scope_prefix": form.get("scope_prefix", ""),
        "version": integer(form.get("version")),
        "idempotency_key": form.get("idempotency_key") or None,
    }
    return responder.act(visit, "resume_switches", arguments, f"{PREFIX}/switches")


def acknowledge(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    back = f"{PREFIX}/switch?{urlencode({'scope': form.get('scope', '')})}"
    arguments = {"event_id": form.get("event_id", "")}
    return responder.act(visit, "acknowledge_alert", arguments, back)


# -- what they show ----------------------------------------------------------------------------
def switch_rows(
    switches: Iterable[Mapping[str, Any]],
    now: datetime,
    pauses: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
) -> list[list[Any]]:
    """A row per switch; an armed switch under a pause in ``pauses`` says so beside its
    deadline (past it, the pause holds it)."""
    return [
        [
            link("/console/switch", s["scope"], scope=s["scope"]),
            join([switch_state(s["state"]), badge("flapping")], " ")
            if s.get("flapping_since")
            else switch_state(s["state"]),
            _fires(s, now, pauses),
            named(s["holder"], s["agent_id"], names),
            s["generation"],
            relative(s["last_beat_at"], now),
        ]
        for s in switches
    ]


def _fires(switch: Mapping[str, Any], now: datetime, pauses: Sequence[Mapping[str, Any]]) -> Html:
    if switch["state"] != "armed":
        return Html("—")
    if pausing(pauses, switch):
        return join([countdown(switch["deadline"], now), badge("paused")], " ")
    return countdown(switch["deadline"], now)


def switches_table(
    caption: str,
    switches: Iterable[Mapping[str, Any]],
    now: datetime,
    pauses: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
) -> Html:
    return table(caption, SWITCH_HEADERS, switch_rows(switches, now, pauses, names), "None.")


def expiring(switch: Mapping[str, Any], now: datetime) -> bool:
    deadline = parse_time(switch.get("deadline"))
    return deadline is not None and expiring_soon(deadline, switch["expect_within_seconds"], now)


def death_rows(
    deaths: Iterable[Mapping[str, Any]], now: datetime, names: Mapping[str, str]
) -> list[list[Any]]:
    return [
        [
            link("/console/switch", d["scope"], scope=d["scope"]),
            d["generation"],
            named(d["holder"], d["agent_id"], names),
            relative(d["fired_at"], now),
            f"{d['lateness_seconds']:.3f} s",
            "—" if d["released_count"] is None else d["released_count"],
            actions_in_words(d["completed"]),
        ]
        for d in deaths
    ]


def actions_in_words(actions: Iterable[str]) -> str:
    """A switch's actions as words ("mark failed"), which wrap between them on a narrow
    screen, never inside an action's name."""
    return ", ".join(action.replace("_", " ") for action in actions) or "—"


def death_facts(death: Mapping[str, Any], now: datetime, names: Mapping[str, str]) -> Html:
    """A death as people ask about it: when it fired and how late, whose it was, and what
    each of its actions did (or has still to do)."""
    done = set(death["completed"])
    said: list[Html] = []
    if "release_leases" in death["actions"]:
        said.append(_released(death) if "release_leases" in done else Html("Releasing its leases."))
    if death["marked_failed"]:
        said.append(Html("Its work was marked failed."))
    if "queue_alert" in done:
        said.append(_alerted(death["alert_address"], names))
    if death["alert_id"]:
        said.append(render("The namespace's channels were told (alert {a}).", a=death["alert_id"]))
    if death.get("folded_into"):
        parent = death["folded_into"]
        said.append(
            render(
                "It was told in the alert of {p}, which it depends on and which was dead.",
                p=link("/console/switch", parent, scope=parent),
            )
        )
    pending = [action for action in death["actions"] if action not in done]
    if pending:
        said.append(render("Still to do: {a}.", a=actions_in_words(pending)))
    return facts(
        [
            ("Holder", named(death["holder"], death["agent_id"], names)),
            ("Generation", death["generation"]),
            ("Deadline", when(death["deadline"])),
            *(
                [("Run started", join([when(death["run_started_at"]), ", not finished in time"]))]
                if death.get("run_started_at")
                else []
            ),
            (
                "Fired",
                join(
                    [
                        relative(death["fired_at"], now),
                        f", late by {death['lateness_seconds']:.3f} s",
                    ]
                ),
            ),
            ("Down for", _downtime(death, now)),
            (
                "What it did",
                render("<ul>{items}</ul>", items=join(render("<li>{s}</li>", s=s) for s in said))
                if said
                else "Nothing: it was given no action.",
            ),
        ]
    )


def _downtime(death: Mapping[str, Any], now: datetime) -> Html:
    """How long the switch was down: from the deadline it missed to the beat that armed it
    again; or since that deadline, while nothing has."""
    if death.get("recovered_at") is None:
        return render("{d}, and counting: not beaten since", d=span(_since(death, now)))
    return join(
        [
            Html(span(death["downtime_seconds"])),
            Html(": beaten again "),
            relative(death["recovered_at"], now),
        ]
    )


def _since(death: Mapping[str, Any], now: datetime) -> float:
    return (now - datetime.fromisoformat(death["deadline"])).total_seconds()


def _released(death: Mapping[str, Any]) -> Html:
    count = death["released_count"]
    named_leases = ", ".join(
        f"{lease['resource']} (generation {lease['generation']})" for lease in death["released"]
    )
    more = count - len(death["released"])
    text = f"Released {count} {counted(count, 'lease', 'leases')}"
    if named_leases:
        text += f": {named_leases}" + (f" and {more} more (below)" if more > 0 else "")
    text += "."
    unscoped = (death["blind_spot"] or {}).get("unscoped_leases_held") or 0
    if unscoped:
        text += (
            f" {unscoped} {counted(unscoped, 'lease', 'leases')} of the holder without a scope "
            f"{counted(unscoped, 'was', 'were')} left alone."
        )
    return esc(text)


def _alerted(address: str | None, names: Mapping[str, str]) -> Html:
    """Who the alert was queued for: the agent behind its notify address, and its box."""
    if address is None:
        return Html("The alert could not be queued: its address is no longer registered.")
    agent, _, box = address.removeprefix("agent:").partition("/")
    return render(
        "An alert was queued for {who}{box}.",
        who=named(agent, None, names),
        box=f" (mailbox {box})" if box else "",
    )


def leases_table(
    caption: str, leases: Iterable[Mapping[str, Any]], now: datetime, names: Mapping[str, str]
) -> Html:
    rows = [
        [
            lease["resource"],
            named(lease["holder"], lease.get("holder_label"), names),
            lease["generation"],
            countdown(lease["expires_at"], now),
        ]
        for lease in leases
    ]
    return table(caption, LEASE_HEADERS, rows, "This scope holds no lease.")


def acknowledge_form(alert_id: str, scope: str, csrf: str) -> Html:
    """Acknowledging a fired switch's alert: its repeats stop, and it does not escalate."""
    return render(
        '<form method="post" action="/console/alerts/acknowledge">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="event_id" value="{alert}">'
        '<input type="hidden" name="scope" value="{scope}">'
        "<p>Its alert ({alert}) repeats or escalates on the channels whose rules ask for it "
        "until a person acknowledges it.</p>"
        '<button type="submit">Acknowledge the alert</button></form>',
        csrf=csrf,
        alert=alert_id,
        scope=scope,
    )
