"""The OAuth consent page: an MCP host (ChatGPT, claude.ai, an editor) asks to act as the
signed-in person or agent; the page shows who asks (its name, and the host its answer goes
to, which a name cannot fake), what it asks for, and what it will be granted, and the person
chooses. Allowing sends the host a code for exactly what the page showed (vigil.oauth.server);
denying sends it ``access_denied``. Either way the answer carries ``iss`` (RFC 9207).

The request is checked when the page is shown and again when the form is sent: a form that
was tampered with, or a client whose document changed meanwhile, is refused then."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from vigil.console.components import facts, problem
from vigil.console.html import Html, join, render
from vigil.console.responder import CSP, PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.oauth import scopes as oauth_scopes

if TYPE_CHECKING:
    from vigil.console.session import Signer
    from vigil.oauth.endpoints import OAuthEndpoints

HERE = f"{PREFIX}/authorize"
_TITLE = "Allow access"
# The form's own fields, which are not the authorization request's.
_OWN = ("csrf", "decision", "shown")


def authorize(
    responder: Responder,
    request: HttpRequest,
    visit: Visit,
    signer: Signer,
    endpoints: Callable[[], OAuthEndpoints],
) -> HttpResponse:
    from authlib.oauth2.rfc6749.errors import InvalidScopeError, OAuth2Error

    from vigil.oauth import server as oauth

    if request.method == "POST":
        pairs = oauth.form_pairs(request.body)
        if pairs is None:
            return responder.refused(400, "The form is not one of ours.", visit)
        fields = dict(pairs)
        if not signer.csrf_holds(visit.session.session_id, fields.get("csrf")):
            return responder.refused(403, "This form has expired; start again from the app.", visit)
        pairs = [(name, value) for name, value in pairs if name not in _OWN]
    else:
        fields = {}
        pairs = list(request.query.items())
    server = endpoints().server(request)
    prepared = oauth.oauth_request(request, server.origin, pairs)
    principal = visit.principal
    try:
        grant = server.get_consent_grant(prepared, end_user=principal)
        server.check_resource(prepared, grant.redirect_uri)
    except OAuth2Error as error:
        if getattr(error, "redirect_uri", None):
            # The client and its redirect URI are known: it is told why, where it listens.
            return server.refusal(prepared, error)
        return responder.page(_TITLE, problem(_why(error)), visit, status=400)
    asked = oauth_scopes.parse(prepared.payload.scope)
    held = oauth_scopes.fitting(asked, principal.kind, principal.role)
    if not held:
        return server.refusal(prepared, InvalidScopeError(redirect_uri=grant.redirect_uri))
    if request.method == "POST" and fields.get("shown") != " ".join(held):
        # What the host would get is not what the page showed (the person's role changed
        # meanwhile): nothing is granted that was not shown; the page is shown again.
        request = HttpRequest("GET", request.path, request.headers, b"", query=dict(pairs))
    if request.method != "POST":
        page = _page(responder, visit, grant.client.client, grant.redirect_uri, pairs, asked, held)
        # The form's answer redirects to the host: the console's pages may send forms only to
        # themselves, and browsers hold a form's redirects to that too. This page's form may
        # go on to the host's redirect URI, and nowhere else.
        page.headers["content-security-policy"] = _form_action(grant.redirect_uri)
        return page
    allowed = fields.get("decision") == "allow"
    response = server.answer(prepared, grant, principal if allowed else None)
    response.headers["cache-control"] = "no-store"
    return response


def _why(error: Exception) -> str:
    description = getattr(error, "description", "") or getattr(error, "error", "")
    return f"This sign-in request cannot be used: {description}"


def _form_action(redirect_uri: str) -> str:
    """The console's policy, with ``redirect_uri``'s origin (or, for an app's own scheme, the
    scheme) among the places its form may lead."""
    parts = urlsplit(redirect_uri)
    target = f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"
    return CSP.replace("form-action 'self'", f"form-action 'self' {target}")


def _page(
    responder: Responder,
    visit: Visit,
    client: object,
    redirect_uri: str,
    pairs: list[tuple[str, str]],
    asked: tuple[str, ...],
    held: tuple[str, ...],
) -> HttpResponse:
    from vigil.grants.records import Client

    assert isinstance(client, Client)
    principal = visit.principal
    answer_host = urlsplit(redirect_uri).netloc or redirect_uri
    described = (
        f"its own description at {urlsplit(client.client_id).netloc}"
        if client.source == "metadata_document"
        else "registered here by itself (not checked by anyone)"
    )
    left_out = [
        f"{name} ({oauth_scopes.SCOPES[name].holders})" for name in asked if name not in held
    ]
    granted = join(
        render(
            "<li><strong>{name}</strong>: {title}</li>", name=n, title=oauth_scopes.SCOPES[n].title
        )
        for n in held
    )
    hidden = join(
        render('<input type="hidden" name="{n}" value="{v}">', n=name, v=value)
        for name, value in pairs
    )
    body = render(
        "<p><strong>{client}</strong> asks to act as <strong>{me}</strong> "
        "({kind}, namespace <code>{ns}</code>).</p>{facts}"
        "<p>If you allow it, it may:</p><ul>{granted}</ul>{left_out}"
        '<p class="hint">It keeps access until you revoke it on '
        '<a href="{grants}">Sign-ins</a>, or an operator does. Allow only an app you are '
        "using right now, whose answer address you recognise.</p>"
        '<form method="post" action="{action}">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="shown" value="{shown}">{hidden}'
        '<button type="submit" name="decision" value="allow">Allow</button> '
        '<button type="submit" name="decision" value="deny" class="secondary">Deny</button>'
        "</form>",
        client=client.name,
        me=principal.name,
        kind=principal.kind,
        ns=principal.namespace,
        facts=facts(
            [
                ("Answers go to", render("<code>{h}</code>", h=answer_host)),
                ("Client", render("<code>{c}</code>", c=client.client_id)),
                ("Described by", described),
            ]
        ),
        granted=granted,
        left_out=render('<p class="hint">Not granted: {why}.</p>', why=", ".join(left_out))
        if left_out
        else Html(""),
        grants=f"{PREFIX}/grants",
        action=HERE,
        csrf=visit.csrf,
        shown=" ".join(held),
        hidden=hidden,
    )
    return responder.page(_TITLE, body, visit)
