"""Runs and leases: a scope's held leases, a run by its id, and who holds which switch."""

from __future__ import annotations

from vigil.console.components import (
    allowed,
    badge,
    countdown,
    facts,
    listed,
    named,
    section,
    shown,
    when,
)
from vigil.console.html import Html, join, render
from vigil.console.pages.switches import leases_table, switches_table
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse


def runs(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """There is no tool that lists every run or lease of a namespace: the page looks them up
    by scope or run id."""
    now = responder.now()
    scope = request.query.get("scope") or ""
    run_id = request.query.get("run_id") or ""
    parts = []
    names = responder.names(visit)
    if scope:
        packet = responder.call(visit, "resume_packet", scope=scope)
        parts.append(
            section(
                f"Leases of {scope}",
                "leases",
                shown(
                    packet,
                    lambda k: leases_table("Held leases", k["held_leases"], now, names),
                ),
            )
        )
    if run_id:
        run = responder.call(visit, "get_run", run_id=run_id)
        parts.append(
            section(
                f"Run {run_id}",
                "run",
                shown(
                    run,
                    lambda r: facts(
                        [
                            ("State", badge(r["state"])),
                            ("Holder", named(r["holder"], None, names)),
                            ("Generation", r["generation"]),
                            (
                                "Lease ends",
                                countdown(r["expires_at"], now)
                                if r["state"] == "running"
                                else when(r["expires_at"]),
                            ),
                            ("Outcome", r["outcome"] or "—"),
                            ("Started", when(r["started_at"])),
                            ("Finished", when(r["finished_at"])),
                        ]
                    ),
                ),
            )
        )
    armed = responder.call(visit, "list_switches", state="armed")
    if allowed(armed):
        pauses = listed(responder.call(visit, "list_pauses"), "pauses")
        parts.append(
            section(
                "Who holds which switch",
                "holders",
                shown(
                    armed,
                    lambda page: switches_table(
                        "Armed switches", page["switches"], now, pauses, names
                    ),
                ),
            )
        )
    forms = render(
        '<form method="get" action="/console/runs" class="filters">'
        '<label for="scope">Scope</label><input id="scope" name="scope" value="{scope}">'
        '<label for="run_id">Run id</label><input id="run_id" name="run_id" value="{run}">'
        '<button type="submit">Look up</button></form>',
        scope=scope,
        run=run_id,
    )
    return responder.live_page(
        request, "Runs and leases", f"{PREFIX}/runs", join(parts), Html(""), visit, lead=forms
    )
