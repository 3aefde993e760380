"""The overview: what needs a person's eye across the namespace, at a glance."""

from __future__ import annotations

from datetime import datetime, timedelta

from vigil.console.charts import lateness_day, request_ages
from vigil.console.components import (
    allowed,
    counted,
    listed,
    section,
    shown,
    table,
)
from vigil.console.frame import REFRESH_LISTINGS_MS
from vigil.console.html import Html, join, render
from vigil.console.pages.dead_letters import HERE as DEAD_LETTERS
from vigil.console.pages.pauses import PAUSE_HEADERS, pause_rows, pausing
from vigil.console.pages.requests import REQUEST_HEADERS, heading, oversees, request_rows
from vigil.console.pages.sessions import SESSION_HEADERS, session_rows
from vigil.console.pages.switches import (
    DEATH_HEADERS,
    SWITCH_HEADERS,
    death_rows,
    expiring,
    switch_rows,
)
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.kit.tooling import OPERATORS

# The overview shows this many of the newest deaths.
OVERVIEW_DEATHS = 20


def overview(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """Five listings: the armed switches, the pauses in force, the newest deaths (what
    fired), the stale sessions and the open requests; a switch that fired is shown by its
    death, which says when, how late and what was released."""
    now = responder.now()
    armed = responder.call(visit, "list_switches", state="armed")
    paused = responder.call(visit, "list_pauses")
    deaths = responder.call(visit, "list_deaths", limit=OVERVIEW_DEATHS)
    stale = responder.call(visit, "list_sessions", staleOnly=True)
    waiting = responder.call(visit, "request_status", waiting=True)
    # Overseers count every open request of the namespace; an agent, its own.
    everyone = {"everyone": True} if oversees(visit) else {}
    open_requests = responder.call(visit, "request_status", state="open", **everyone)
    me = visit.principal.id

    armed_list = listed(armed, "switches")
    pause_list = listed(paused, "pauses")
    names = responder.names(visit)
    soon = [s for s in armed_list if expiring(s, now) and not pausing(pause_list, s)]
    death_list = listed(deaths, "deaths")
    since = now - timedelta(days=1)
    day = [d for d in death_list if datetime.fromisoformat(d["fired_at"]) > since]
    fired = f"{len(day)}+" if day and len(day) == OVERVIEW_DEATHS else str(len(day))
    stale_list = listed(stale, "sessions")
    mine = listed(waiting, "requests")
    open_list = listed(open_requests, "requests")
    more = not isinstance(open_requests, str) and open_requests["next_cursor"] is not None
    opened = f"{len(open_list)}+" if more else str(len(open_list))
    # (result it depends on, count id, count, one, many): a count its role may not see is
    # left out with its section.
    figures = (
        (armed, "armed", len(armed_list), "armed", "armed"),
        (armed, "soon", len(soon), "expiring soon", "expiring soon"),
        (paused, "paused", len(pause_list), "pause in force", "pauses in force"),
        (deaths, "fired", fired, "fired in 24 h", "fired in 24 h"),
        (stale, "stale", len(stale_list), "stale session", "stale sessions"),
        (waiting, "waiting", len(mine), "request waiting for you", "requests waiting for you"),
        (open_requests, "open", opened, "request open", "requests open"),
    )
    counts = join(
        render(
            '<li><span class="count" id="count-{k}">{n}</span> {label}</li>',
            k=k,
            n=n,
            label=counted(n, one, many),
        )
        for result, k, n, one, many in figures
        if allowed(result)
    )
    sections = (
        (
            waiting,
            "Requests waiting for you",
            "waiting",
            lambda _: table(
                "Open requests you decide",
                REQUEST_HEADERS,
                request_rows(mine, me, now, names),
                "Nothing waits for you.",
            ),
        ),
        (
            armed,
            "Armed switches",
            "armed",
            lambda _: table(
                "Armed, soonest deadline first",
                SWITCH_HEADERS,
                switch_rows(
                    sorted(armed_list, key=lambda s: s["deadline"]), now, pause_list, names
                ),
                "No switch is armed.",
                "armed-switches",
            ),
        ),
        (
            paused,
            "Pauses",
            "pauses",
            lambda _: table(
                "Pauses in force: a held switch does not fire or alert",
                PAUSE_HEADERS,
                pause_rows(pause_list, now, names),
                "No switch is paused.",
                "pauses-in-force",
            ),
        ),
        (
            deaths,
            "Fired",
            "fired",
            lambda _: table(
                "Switches that fired, newest first",
                DEATH_HEADERS,
                death_rows(death_list, now, names),
                "No switch has fired.",
                "fired-switches",
            ),
        ),
        (
            deaths,
            "How late switches fired",
            "lateness",
            lambda _: lateness_day(
                [(datetime.fromisoformat(d["fired_at"]), d["lateness_seconds"]) for d in day],
                now,
                "lateness",
            ),
        ),
        (
            open_requests,
            "Open requests by age",
            "ages",
            lambda page: request_ages(
                [
                    (heading(r, None), datetime.fromisoformat(r["asked_at"]))
                    for r in page["requests"]
                ],
                now,
                "ages",
            ),
        ),
        (
            stale,
            "Stale sessions",
            "stale",
            lambda _: table(
                "Sessions with no recent beat",
                SESSION_HEADERS,
                session_rows(stale_list, now, names),
                "No session is stale.",
            ),
        ),
    )
    visible = [
        (result, title, ident, draw) for result, title, ident, draw in sections if allowed(result)
    ]
    narrowed = (
        Html('<p class="hint" id="narrowed">Only what your role may see is shown here.</p>')
        if len(visible) < len(sections)
        else Html("")
    )
    live = join(
        [
            narrowed,
            render('<ul class="summary" aria-label="At a glance">{c}</ul>', c=counts),
            *(section(title, ident, shown(result, draw)) for result, title, ident, draw in visible),
        ]
    )
    # Operators look after the deployment's health too: its dead-lettered timers.
    health = (
        render(
            '<p id="health"><a href="{href}">Dead letters</a>: timers that failed and wait to be '
            "sent back.</p>",
            href=DEAD_LETTERS,
        )
        if visit.principal.role in OPERATORS and responder.dead_letters() is not None
        else Html("")
    )
    return responder.live_page(
        request, "Overview", PREFIX, live, health, visit, REFRESH_LISTINGS_MS
    )
