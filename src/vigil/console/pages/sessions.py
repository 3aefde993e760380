"""The agents' sessions: the listing, and one session (its status, progress and step, and its
instructions with the form that posts a new one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from vigil.console.charts import progress_bar, progress_over_time
from vigil.console.components import (
    badge,
    facts,
    link,
    named,
    next_page,
    relative,
    section,
    shown,
    table,
    views,
    when,
)
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit, idempotency_key
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.sessions.records import MAX_BODY_BYTES

SESSION_HEADERS = ("Session", "Agent", "Status", "Progress", "Step", "Last beat", "Liveness")
INSTRUCTION_HEADERS = ("Instruction", "State", "Posted by", "Posted", "Deliveries", "Acknowledged")


# -- handlers ----------------------------------------------------------------------------------
def sessions(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    stale_only = request.query.get("stale") == "1"
    arguments: dict[str, Any] = {"staleOnly": stale_only}
    if request.query.get("cursor"):
        arguments["cursor"] = request.query["cursor"]
    found = responder.call(visit, "list_sessions", **arguments)
    names = responder.names(visit)
    filters = views(
        "/console/sessions",
        "Which sessions",
        {"0": "All sessions", "1": "Stale only"},
        "1" if stale_only else "0",
        "stale",
    )

    def draw(page: Mapping[str, Any]) -> Html:
        more = Html("")
        if page["nextCursor"]:
            query = {"cursor": page["nextCursor"], **({"stale": "1"} if stale_only else {})}
            more = next_page("/console/sessions", query)
        rows = session_rows(page["sessions"], now, names)
        return join([table("Sessions", SESSION_HEADERS, rows, "No sessions."), more])

    return responder.live_page(
        request, "Sessions", f"{PREFIX}/sessions", shown(found, draw), Html(""), visit, lead=filters
    )


def session(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    session_id = request.query.get("id", "")
    if not session_id:
        return responder.unnamed("session", "/console/sessions", visit)
    found = responder.call(visit, "list_instructions", sessionId=session_id)
    if isinstance(found, str):
        return responder.not_found("Session", found, visit)
    names = responder.names(visit)
    live = join(
        [
            section(
                "Where it stands",
                "status",
                join(
                    [
                        status_facts(found["session"], now, names),
                        progress_bar(found["session"]["progressPercent"], "progress"),
                        progress_over_time(
                            [
                                (datetime.fromisoformat(p["at"]), p["percent"])
                                for p in found["session"]["progressHistory"]
                            ],
                            now,
                            "progress-history",
                        ),
                    ]
                ),
            ),
            section(
                "Instructions",
                "instruction-list",
                table(
                    "Instructions, oldest first",
                    INSTRUCTION_HEADERS,
                    instruction_rows(found["instructions"], now, names),
                    "No instruction yet.",
                    "instructions",
                ),
            ),
        ]
    )
    form = render(
        '<form method="post" action="/console/sessions/instructions" class="post">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="session_id" value="{session}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<label for="body">New instruction</label>'
        '<textarea id="body" name="body" rows="3" required data-limit="{limit}" '
        'aria-describedby="body-limit"></textarea>'
        '<p class="hint" id="body-limit">Up to {limit} bytes of UTF-8 (8 KiB): a longer one '
        'is refused, never cut. <span class="usage" data-usage-of="body" aria-live="polite">'
        "</span></p>"
        '<p class="hint">The agent receives it on its next session_heartbeat.</p>'
        '<button type="submit">Post instruction</button></form>',
        csrf=visit.csrf,
        session=session_id,
        key=idempotency_key(),
        limit=MAX_BODY_BYTES,
    )
    return responder.live_page(
        request, f"Session {session_id}", f"{PREFIX}/sessions", live, form, visit
    )


def post_instruction(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """The form's ``body`` posted to the session its ``session_id`` names, under the
    idempotency key the form was rendered with; back to that session's page."""
    target = form.get("session_id", "")
    arguments = {
        "sessionId": target,
        "body": form.get("body", ""),
        "idempotencyKey": form.get("idempotency_key") or None,
    }
    back = f"{PREFIX}/session?{urlencode({'id': target})}"
    return responder.act(visit, "post_instruction", arguments, back)


# -- what they show ----------------------------------------------------------------------------
def session_rows(
    sessions: Iterable[Mapping[str, Any]], now: datetime, names: Mapping[str, str]
) -> list[list[Any]]:
    return [
        [
            link("/console/session", s["sessionId"], id=s["sessionId"]),
            named(s["owner"], None, names),
            _status(s),
            "—" if s["progressPercent"] is None else f"{s['progressPercent']:g} %",
            _step(s),
            relative(s["lastBeatAt"], now),
            _liveness(s, now),
        ]
        for s in sessions
    ]


def status_facts(session: Mapping[str, Any], now: datetime, names: Mapping[str, str]) -> Html:
    """One session as its agent last reported it, and whether it still beats."""
    progress = session["progressPercent"]
    return facts(
        [
            ("Agent", named(session["owner"], None, names)),
            ("Status", _status(session)),
            ("Progress", "—" if progress is None else f"{progress:g} %"),
            ("Step", _step(session)),
            ("Last beat", relative(session["lastBeatAt"], now)),
            ("Liveness", _liveness(session, now)),
            ("Started", when(session["createdAt"])),
        ]
    )


def _status(session: Mapping[str, Any]) -> Html:
    """What its agent last reported, unless it has ended since: then, that it ended (the
    last status an ended session reported, "active" most often, is no longer true)."""
    if session["endedAt"] is not None:
        return badge("ended")
    return badge(session["status"])


def _liveness(session: Mapping[str, Any], now: datetime) -> Html:
    """Ended (and how, and when), stale or fresh: an ended session is never stale."""
    if session["endedAt"] is not None:
        return render(
            "{badge} {outcome}, {when}",
            badge=badge("ended"),
            outcome=session["outcome"],
            when=relative(session["endedAt"], now),
        )
    return badge("stale") if session["stale"] else Html("fresh")


def _step(session: Mapping[str, Any]) -> str:
    step = session.get("currentStep") or "—"
    if session.get("stepIndex") is not None and session.get("stepCount"):
        return f"{step} ({session['stepIndex']}/{session['stepCount']})"
    return str(step)


def instruction_rows(
    instructions: Iterable[Mapping[str, Any]], now: datetime, names: Mapping[str, str]
) -> list[list[Any]]:
    return [
        [
            render('<span class="body">{body}</span>', body=i["body"]),
            render(
                '<span class="badge state-{state}" data-instruction="{id}">{state}</span>',
                state=i["state"],
                id=i["id"],
            ),
            named(i["postedBy"], None, names),
            relative(i["postedAt"], now),
            i["deliveryCount"],
            relative(i["acknowledgedAt"], now) if i["acknowledgedAt"] else "—",
        ]
        for i in instructions
    ]
