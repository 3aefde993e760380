"""Linking one's account on a surface (a Slack user, an email address) to oneself: the page a
link from that surface opens (it changes nothing), and its form, which links the account to
the signed-in person unless another person linked it first.

The link's token says which account; the console's sign-in says who: both together make the
link, so a link forwarded to someone else links that someone, once, and only if nobody has
linked the account before (``notifications.accounts``)."""

from __future__ import annotations

from collections.abc import Mapping

from vigil.console.components import problem
from vigil.console.html import Html, render
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.accounts import link_account, opened_link, unlink_account
from vigil.notifications.records import AccountLink, AccountSurface

_NAMED = {"slack": "Slack user", "email": "email address"}
_SURFACES: dict[str, AccountSurface] = {"slack": "slack", "email": "email"}
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


# -- an operator ending a link --------------------------------------------------------------
PEOPLE = f"{PREFIX}/people"
UNLINK = f"{PEOPLE}/unlink"


def unlink_form(csrf: str) -> Html:
    """The operator's form that ends an account's link (a departed person's Slack user or
    address), naming the account as the audit trail does: ``slack:<team>/<user>`` or
    ``email:<address>``. Its first answer shows whom it is linked to and asks again."""
    return render(
        '<section aria-labelledby="unlink-title" id="unlink"><h2 id="unlink-title">Unlink an '
        "account</h2><p>A Slack user or an email address decides as the person who linked it. "
        "To end that (someone left), name it as the Audit page does.</p>"
        '<form method="post" action="{action}" class="post">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<label for="unlink-account">Account</label>'
        '<input id="unlink-account" name="account" required maxlength="300" '
        'placeholder="slack:T0123/U0456 or email:dana@example.com">'
        '<button type="submit">Unlink…</button></form></section>',
        action=UNLINK,
        csrf=csrf,
    )


def unlink(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Ends a link, an operator's power: the first post shows whom the account is linked to
    and asks again; only the confirmation, bound to that person, ends it (audited)."""
    title = "Unlink an account"
    if visit.principal.role != "operator":
        return responder.refused(403, "Only operators unlink accounts.", visit)
    named, _, account = form.get("account", "").strip().partition(":")
    surface = _SURFACES.get(named)
    if surface is None or not account:
        why = "Name the account as slack:<team>/<user> or email:<address>."
        return responder.page(title, problem(why), visit, status=400)
    namespace = visit.principal.namespace
    store = responder.app.store
    linked = store.linked_account(namespace, surface, account)
    if linked is None:
        why = f"No one is linked to the {_NAMED[surface]} {account}."
        return responder.page(title, problem(why), visit, status=404)
    person = store.get_principal(namespace, linked)
    name = person.name if person is not None else linked
    if form.get("confirm") != "yes":
        body = render(
            "<p>The {what} <code>{account}</code> decides as <strong>{name}</strong> "
            '<span class="id">{id}</span>. Unlink it? It then decides nothing until a person '
            "links it again.</p>"
            '<form method="post" action="{action}" class="post">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<input type="hidden" name="account" value="{named}">'
            '<input type="hidden" name="principal_id" value="{id}">'
            '<input type="hidden" name="confirm" value="yes">'
            '<div class="decision"><button type="submit" class="deny">Yes, unlink</button>'
            '<a href="{back}">Cancel</a></div></form>',
            what=_NAMED[surface],
            account=account,
            name=name,
            id=linked,
            action=UNLINK,
            csrf=visit.csrf,
            named=f"{surface}:{account}",
            back=PEOPLE,
        )
        return responder.page(f"Unlink {account}?", body, visit, here=PEOPLE)
    ended = unlink_account(
        store,
        namespace,
        surface,
        account,
        form.get("principal_id", ""),
        visit.principal.id,
        responder.now(),
    )
    if not ended:
        why = "It changed meanwhile: it is no longer linked to whom you were shown."
        return responder.changed(why, PEOPLE, visit)
    said = render(
        "<p>The {what} <code>{account}</code> no longer decides as {name}.</p>"
        '<p><a href="{back}">Back to people and agents</a></p>',
        what=_NAMED[surface],
        account=account,
        name=name,
        back=PEOPLE,
    )
    return responder.page("Unlinked", said, visit, here=PEOPLE)
