"""The page an email's decision link opens: the link's token names the request and the one
person whose decision it is (``notifications.email_links``); that person's console session,
and nothing else, lets it decide.

Opening it changes nothing, however often (mail scanners and previews open links), and needs no
sign-in: it shows the request and the exact action it binds (invisible characters made
visible). While the request is open, the link's person, signed in, gets the form that decides;
anyone else is asked to sign in as that person. Only that form, posted from this page (the
console's same-origin check) with the session's CSRF token, decides: ``reply`` called as the
link's person, at the version the page showed, with the same audience check as anywhere. So a
link forwarded to someone else, inside the audience or not, decides nothing: they cannot sign in
as its person. Once the request is final, the link shows who decided it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from vigil.console.components import exact_action, problem
from vigil.console.html import Html, join, render
from vigil.console.pages.requests import answer_controls, edit_notes
from vigil.console.responder import PREFIX, Responder, Visit, integer, read_form, reason
from vigil.console.session import Signer
from vigil.errors import HTTP_STATUS, ErrorCode, VigilError
from vigil.identity.display_names import names_of
from vigil.identity.records import Principal
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.email_links import DECIDE_PATH, opened_decision
from vigil.requests.views import VERBS, tally, vote_of

_TITLE = "Decide"


def decide(
    responder: Responder, request: HttpRequest, visit: Visit | None, signer: Signer
) -> HttpResponse:
    try:
        return _decide(responder, request, visit, signer)
    except VigilError as error:
        return responder.page(_TITLE, problem(reason(error)), None, status=HTTP_STATUS[error.code])


def _decide(
    responder: Responder, request: HttpRequest, visit: Visit | None, signer: Signer
) -> HttpResponse:
    form = read_form(request) if request.method == "POST" else dict(request.query)
    if form is None:
        return responder.refused(413, "The form is too large.")
    token = form.get("token", "")
    opened = opened_decision(responder.app.keys, token, responder.now())
    person = None
    if opened is not None:
        person = responder.app.store.get_principal(opened[0], opened[2])
    if opened is None or person is None or person.status != "active":
        why = "This link is not one of ours, or the time to decide has passed."
        return responder.page(_TITLE, problem(why), None, status=404)
    request_id = opened[1]
    found = _read(responder, request_id, person)
    if found is None or person.id not in found["audience"]:
        why = f"This link decides nothing: {person.name} is not among those who may decide."
        return responder.page(_TITLE, problem(why), None, status=403)
    # The link's person, signed in: the one visitor who may decide.
    own = visit if visit is not None and visit.principal.id == person.id else None
    if request.method != "POST":
        return responder.page(_TITLE, _shown(responder, found, person, token, own), None)
    if own is None or not signer.csrf_holds(own.session.session_id, form.get("csrf")):
        said = problem(f"Nothing was done: only {person.name}, signed in, decides with this link.")
        shown = _shown(responder, found, person, token, own)
        return responder.page(_TITLE, join([said, shown]), None, status=403)
    arguments: dict[str, Any] = {
        "id": request_id,
        "outcome": form.get("outcome", ""),
        "version": integer(form.get("version")),
    }
    if form.get("answer"):
        arguments["answer"] = form["answer"]
    try:
        done = responder.app.call_as("reply", arguments, person, via="email")
    except VigilError as error:
        again = _read(responder, request_id, person) or found
        said = problem(f"Nothing was done: {error.message}.")
        return responder.page(
            _TITLE,
            join([said, _shown(responder, again, person, token, own)]),
            None,
            status=HTTP_STATUS[error.code],
        )
    if done["state"] == "open":
        counted = {**found, "history": done["history"]}
        return responder.page("Voted", _voted(counted, person), None)
    return responder.page("Decided", _decided(responder, done, person), None)


def _read(responder: Responder, request_id: str, person: Principal) -> dict[str, Any] | None:
    """The request as the link's person may read it; None if they may not (any other error,
    one worth a retry, goes up)."""
    try:
        return responder.app.call_as("get_request", {"id": request_id}, person, via="email")
    except VigilError as error:
        if error.code in (ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND):
            return None
        raise


def _name(responder: Responder, person: Principal, principal_id: str) -> str:
    """``principal_id``'s display name, as the link's person may read it."""
    try:
        names = names_of(
            lambda tool, arguments: responder.app.call_as(tool, arguments, person, via="email")
        )
    except VigilError:
        return principal_id
    return names.get(principal_id, principal_id)


def _decided(responder: Responder, found: Mapping[str, Any], person: Principal) -> Html:
    response = found.get("response") or {}
    by = response.get("by")
    if by is None:
        return render("<p>This request is {state}.</p>", state=found["state"])
    return render(
        "<p>This request was {state} by {name}.</p>",
        state=found["state"],
        name=_name(responder, person, by),
    )


def _voted(found: Mapping[str, Any], person: Principal) -> Html:
    """What a person's vote on a request still open came to, if they cast one."""
    vote = vote_of(found, person.id)
    if vote is None:
        return Html("")
    return render(
        "<p>You voted {verb}: {tally} so far. A vote is not changed.</p>",
        verb=VERBS[vote["outcome"]],
        tally=tally(found),
    )


def _shown(
    responder: Responder,
    found: Mapping[str, Any],
    person: Principal,
    token: str,
    own: Visit | None,
) -> Html:
    parts = [
        render(
            '<p>You decide as <strong>{name}</strong>.</p><p class="body">{body}</p>',
            name=person.name,
            body=found["body"],
        )
    ]
    if found["action"] is not None:
        parts.append(
            render(
                "<h2>The action an approval binds, exactly</h2>{edits}{action}",
                edits=edit_notes(found, {}),
                action=exact_action(found["action"]),
            )
        )
    if found["state"] != "open":
        parts.append(_decided(responder, found, person))
        return join(parts)
    if vote_of(found, person.id) is not None:
        parts.append(_voted(found, person))
        return join(parts)
    if own is None:
        back = f"{DECIDE_PATH}?{urlencode({'token': token})}"
        parts.append(
            render(
                '<p>To decide, <a href="{href}">sign in as {name}</a>; this page comes back.</p>',
                href=f"{PREFIX}/sign-in?{urlencode({'next': back})}",
                name=person.name,
            )
        )
        return join(parts)
    parts.append(_form(found, token, own.csrf))
    return join(parts)


def _form(found: Mapping[str, Any], token: str, csrf: str) -> Html:
    if found["kind"] == "approval":
        controls = Html(
            '<label for="answer">Reason, if you deny (optional, the agent reads it)</label>'
            '<textarea id="answer" name="answer" rows="3"></textarea><div class="decision">'
            '<button type="submit" name="outcome" value="approved" class="approve">Approve'
            "</button>"
            '<button type="submit" name="outcome" value="denied" class="deny">Deny</button></div>'
        )
    else:
        controls = answer_controls(found)
    return render(
        '<form method="post" action="{path}" class="reply">'
        '<input type="hidden" name="token" value="{token}">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="version" value="{version}">{controls}</form>',
        path=DECIDE_PATH,
        token=token,
        csrf=csrf,
        version=found["version"],
        controls=controls,
    )
