"""Linking one's account on a surface (a Slack user, an email address) to oneself: the page a
link from that surface opens (it changes nothing), and its form, which links the account to
the signed-in person unless another person linked it first.

The link's token says which account; the console's sign-in says who: both together make the
link, so a link forwarded to someone else links that someone, once, and only if nobody has
linked the account before (``notifications.accounts``)."""

from __future__ import annotations

from collections.abc import Mapping

from vigil.console.components import problem
from vigil.console.html import render
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.accounts import link_account, opened_link
from vigil.notifications.records import AccountLink, AccountSurface

_NAMED = {"slack": "Slack user", "email": "email address"}
_TITLE = "Link your account"


def _opened(
    responder: Responder, token: str, visit: Visit
) -> tuple[AccountSurface, str] | HttpResponse:
    opened = opened_link(responder.app.keys, token, responder.now())
    if opened is None:
        return responder.page(
            _TITLE, problem("This link is not one of ours, or it has expired."), visit, status=404
        )
    namespace, surface, account = opened
    if namespace != visit.principal.namespace or visit.principal.kind != "person":
        return responder.refused(403, "This link is for a person of another namespace.", visit)
    return surface, account


def link(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    token = request.query.get("token", "")
    opened = _opened(responder, token, visit)
    if isinstance(opened, HttpResponse):
        return opened
    surface, account = opened
    body = render(
        "<p>Link the {what} <code>{account}</code> to you, {name}? Then what you decide from "
        "there is decided as you, as if you decided here.</p>"
        '<form method="post" action="{action}">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="token" value="{token}">'
        '<button type="submit">Link it to me</button> <a href="{back}">Cancel</a></form>',
        what=_NAMED[surface],
        account=account,
        name=visit.principal.name,
        action=f"{PREFIX}/link",
        csrf=visit.csrf,
        token=token,
        back=PREFIX,
    )
    return responder.page(_TITLE, body, visit)


def bind(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    opened = _opened(responder, form.get("token", ""), visit)
    if isinstance(opened, HttpResponse):
        return opened
    surface, account = opened
    me = visit.principal
    linked = link_account(
        responder.app.store,
        AccountLink(
            namespace=me.namespace,
            surface=surface,
            account=account,
            principal_id=me.id,
            linked_at=responder.now(),
        ),
    )
    if linked != me.id:
        return responder.page(
            _TITLE,
            problem(f"This {_NAMED[surface]} is linked to another person already."),
            visit,
            status=409,
        )
    body = render(
        "<p>Linked: the {what} <code>{account}</code> decides as you.</p>",
        what=_NAMED[surface],
        account=account,
    )
    return responder.page("Linked", body, visit)
