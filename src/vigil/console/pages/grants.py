"""Sign-ins: the OAuth grants given to apps (MCP hosts), and revoking them. Each principal sees
and revokes its own; an operator sees and revokes every grant of the namespace. Revoking one
ends its tokens at once (vigil.grants.records), and is audited."""

from __future__ import annotations

from collections.abc import Mapping

from vigil.console.components import badge, named, next_page, problem, relative, table
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit, redirect
from vigil.grants.records import Grant
from vigil.kit.http import HttpRequest, HttpResponse

HERE = f"{PREFIX}/grants"
REVOKE = f"{PREFIX}/grants/revoke"
_PAGE = 50


def grants(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    me = visit.principal
    store = responder.app.store
    now = responder.now()
    after = request.query.get("after") or None
    if me.role == "operator":
        found = store.list_grants(me.namespace, after, _PAGE + 1)
        more = len(found) > _PAGE
        found = found[:_PAGE]
        intro = "Every app signed in to this namespace with OAuth, and as whom."
    else:
        found = sorted(store.get_grants(me.namespace, list(me.grants)), key=lambda g: g.id)
        more = False
        intro = "The apps you signed in to with OAuth. Revoke one you no longer use."
    holders = {
        p.id: p.name for p in store.get_principals(me.namespace, [g.principal_id for g in found])
    }
    rows = [
        (
            render('{name} <small class="meta id">{host}</small>', name=g.client_name, host=g.host),
            named(g.principal_id, None, holders),
            " ".join(g.scopes),
            relative(g.used_at.isoformat(), now),
            badge("active" if g.status == "active" else "revoked"),
            _revoke_form(g, visit) if g.status == "active" else Html(""),
        )
        for g in found
    ]
    body = join(
        [
            render("<p>{intro}</p>", intro=intro),
            table(
                "Sign-ins",
                ("App", "As", "Scopes", "Last used", "State", ""),
                rows,
                "No app is signed in.",
            ),
            next_page(HERE, {"after": found[-1].id}) if more and found else Html(""),
        ]
    )
    return responder.page("Sign-ins", body, visit, here=HERE)


def _revoke_form(grant: Grant, visit: Visit) -> Html:
    return render(
        '<form method="post" action="{action}" class="inline">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<button type="submit" class="secondary">Revoke</button></form>',
        action=REVOKE,
        csrf=visit.csrf,
        id=grant.id,
    )


def revoke(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    from vigil.oauth.server import end_grant

    me = visit.principal
    grant_id = form.get("id", "")
    grant = responder.app.store.get_grant(me.namespace, grant_id) if len(grant_id) < 40 else None
    if grant is None or (grant.principal_id != me.id and me.role != "operator"):
        return responder.page(
            "Sign-ins", problem(f"There is no sign-in {grant_id} of yours."), visit, status=404
        )
    # Ended already (by its holder, an operator, or a reused refresh token): nothing to do.
    end_grant(responder.app.store, grant, "revoked", me.id, responder.now())
    return redirect(HERE)
