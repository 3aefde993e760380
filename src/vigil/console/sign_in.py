"""Signing in and out, and who a request's session cookie stands for.

The sign-in form takes the principal's secret once and answers with the session cookie
(``vigil.console.session``); every other request is a ``Visit`` of the principal that cookie
names, as long as the cookie holds, and renews the cookie as it is used."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from datetime import datetime

from vigil.app import App
from vigil.console.components import problem
from vigil.console.html import Html, render
from vigil.console.responder import PREFIX, Responder, Visit, read_form, redirect
from vigil.console.session import (
    COOKIE,
    IDLE_SECONDS,
    SIGN_IN_COOKIE,
    ConsoleSession,
    Signer,
    cleared,
    cookie,
    same,
)
from vigil.errors import VigilError
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.observability import get_logger, log_event

log = get_logger("vigil.console")

# A console page, with or without a query. Its path is made of plain words only, as every
# console path is: no dot-segment, no empty segment, no percent-encoding and no backslash, so
# there is nothing for a browser to normalise out of /console (``/console/..//evil.example``,
# ``/console/%2e%2e/``). Its query is printable ASCII but a backslash or a fragment's ``#``:
# nothing (a line break) could end the Location header early and start another.
_LOCAL_TARGET = re.compile(r'/console(?:/[a-z][a-z0-9-]*)*(?:\?[!"$-\[\]-~]*)?')


class SignIn:
    """The sign-in page and form, and reading a request's session cookie into a ``Visit``."""

    def __init__(self, app: App, signer: Signer, responder: Responder) -> None:
        self.app = app
        self.signer = signer
        self.responder = responder

    def visit(self, request: HttpRequest) -> Visit | None:
        """The signed-in principal a request's cookie stands for, or None if it stands for
        none (no cookie, not ours, expired, or the principal's secret changed since)."""
        value = request.cookies.get(COOKIE)
        now = self.app.clock.now()
        session = self.signer.decode(value, now) if value else None
        if session is None:
            return None
        principal = self.app.store.get_principal(session.namespace, session.principal_id)
        if principal is None or not session.holds_for(principal):
            return None
        cookies = []
        renewed = self.signer.renewed(session, now)
        if renewed is not None:
            session = renewed
            cookies.append(self._session_cookie(session, now))
        return Visit(principal, session, self.signer.csrf_token(session.session_id), cookies)

    def _session_cookie(self, session: ConsoleSession, now: datetime) -> str:
        max_age = min(IDLE_SECONDS, session.expires_at - int(now.timestamp()))
        return cookie(COOKIE, self.signer.encode(session), max_age)

    def handle(self, request: HttpRequest) -> HttpResponse:
        """The sign-in page (GET) or its form (POST)."""
        if request.method != "POST":
            return self._page(request.query.get("next"), None, 200)
        form = read_form(request)
        if form is None:
            return self.responder.refused(413, "The form is too large.")
        # The cookie's token is random and never empty: an empty one (however it got there)
        # would match a form that sends none.
        token = request.cookies.get(SIGN_IN_COOKIE)
        if not token or not same(form.get("csrf", ""), token):
            return self._page(form.get("next"), "The form expired; try again.", 403)
        try:
            principal = self.app.authenticate(form.get("secret", "").strip())
        except VigilError:
            log_event(log, "console sign-in refused")
            return self._page(form.get("next"), "That secret is not valid.", 401)
        now = self.app.clock.now()
        session = self.signer.issue(principal, now)
        log_event(
            log,
            "console sign-in",
            namespace=principal.namespace,
            principal_id=principal.id,
        )
        response = redirect(_local_target(form.get("next")))
        response.cookies += [self._session_cookie(session, now), cleared(SIGN_IN_COOKIE)]
        return response

    def _page(self, target: str | None, error: str | None, status: int) -> HttpResponse:
        token = secrets.token_urlsafe(24)
        response = self.responder.page(
            "Sign in", _sign_in_form(token, error, target), None, status=status
        )
        response.cookies.append(cookie(SIGN_IN_COOKIE, token, 600))
        return response


def sign_out(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    visit.cookies.clear()
    response = redirect(f"{PREFIX}/sign-in")
    response.cookies.append(cleared(COOKIE))
    return response


def _sign_in_form(csrf: str, error: str | None, target: str | None) -> Html:
    return render(
        '{error}<form method="post" action="/console/sign-in" class="sign-in">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<label for="secret">Your secret</label>'
        '<input id="secret" name="secret" type="password" autocomplete="current-password" '
        'required autofocus spellcheck="false">'
        '<p class="hint">The bearer secret you were given when you were registered. It is '
        "checked once and never kept: the console holds a signed session for up to an hour "
        "of inactivity.</p>"
        '<button type="submit">Sign in</button>{next}</form>',
        error=problem(error) if error else Html(""),
        csrf=csrf,
        next=render('<input type="hidden" name="next" value="{t}">', t=target)
        if target
        else Html(""),
    )


def _local_target(target: str | None) -> str:
    """Where to go after signing in: a console page only, never another site nor another
    path of this one, however a browser would resolve it."""
    if target and _LOCAL_TARGET.fullmatch(target):
        return target
    return PREFIX
