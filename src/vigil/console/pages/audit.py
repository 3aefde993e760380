"""The audit trail, for operators: every change made with an operator's power or by the
deployer (and every vote, withdrawal, sign-in grant and linked account), newest first, filtered
by who made it, the kind of what changed, and what changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from vigil.audit.records import TargetKind
from vigil.console.components import ident, named, next_page, shown, table, when
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse

HERE = f"{PREFIX}/audit"
HEADERS = ("When", "Who", "What", "Kind", "Target", "Versions", "From")
# The filters the page passes on to list_audit_events, as its query names them.
FILTERS = ("actor", "target_kind", "target")


def audit(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    chosen = {name: request.query[name] for name in FILTERS if request.query.get(name)}
    arguments: dict[str, Any] = {"limit": 50, **chosen}
    if request.query.get("cursor"):
        arguments["cursor"] = request.query["cursor"]
    found = responder.call(visit, "list_audit_events", **arguments)
    names = responder.names(visit)

    def draw(page: Mapping[str, Any]) -> Html:
        rows = [
            (
                when(event["at"]),
                named(event["actor"], None, names) if event["actor"] else "the deployer",
                event["action"].replace("_", " "),
                event["target_kind"],
                _target(event, names),
                _versions(event),
                event["via"] or "",
            )
            for event in page["events"]
        ]
        caption = "Changes, newest first" + (" (filtered)" if chosen else "")
        listing = table(caption, HEADERS, rows, "No change matches.", "audit")
        more = Html("")
        if page["next_cursor"]:
            more = next_page(HERE, {**chosen, "cursor": page["next_cursor"]})
        return join([listing, more])

    return responder.live_page(
        request,
        "Audit trail",
        HERE,
        shown(found, draw),
        Html(""),
        visit,
        lead=_filters(chosen, names),
    )


def _target(event: Mapping[str, Any], names: Mapping[str, str]) -> Html:
    """What changed: a principal by its name, anything else by its id, scope or address."""
    if event["target_kind"] == "principal":
        return named(event["target"], None, names)
    return ident(event["target"])


def _versions(event: Mapping[str, Any]) -> str:
    before, after = event["before_version"], event["after_version"]
    if before is None and after is None:
        return ""
    return f"{'new' if before is None else before} → {'—' if after is None else after}"


def _filters(chosen: Mapping[str, str], names: Mapping[str, str]) -> Html:
    """The form that filters the trail: who (by name), which kind of target, which target."""
    people = sorted(names.items(), key=lambda item: (item[1].casefold(), item[0]))
    actor = chosen.get("actor", "")
    actors = join(
        [
            render('<option value="">anyone</option>'),
            *(
                render(
                    '<option value="{id}"{sel}>{name} ({id})</option>',
                    id=principal_id,
                    name=name,
                    sel=Html(" selected") if principal_id == actor else Html(""),
                )
                for principal_id, name in people
            ),
        ]
    )
    kinds = join(
        render(
            '<option value="{v}"{sel}>{t}</option>',
            v=value,
            t=value or "any",
            sel=Html(" selected") if value == chosen.get("target_kind", "") else Html(""),
        )
        for value in ("", *get_args(TargetKind))
    )
    return render(
        '<form method="get" action="{here}" class="filters">'
        '<label for="actor">Who</label><select id="actor" name="actor">{actors}</select>'
        '<label for="target_kind">Kind</label>'
        '<select id="target_kind" name="target_kind">{kinds}</select>'
        '<label for="target">Target</label>'
        '<input id="target" name="target" value="{target}" maxlength="200" '
        'placeholder="an id, a scope or an address">'
        '<button type="submit">Show</button></form>',
        here=HERE,
        actors=actors,
        kinds=kinds,
        target=chosen.get("target", ""),
    )
