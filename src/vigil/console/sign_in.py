"""Signing in and out, and who a request's session cookie stands for.

The sign-in form takes the principal's secret once, within the limit on attempts
(``vigil.identity.sign_ins``), and answers with the session cookie (``vigil.console.session``)
of a session the server keeps; every other request is a ``Visit`` of the principal that cookie
names, as long as the cookie holds and the server still keeps its session, and renews both as
it is used. Signing out ends the session on the server, so no copy of its cookie holds after."""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime

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
from vigil.identity.records import SignInSession
from vigil.identity.sign_ins import count_attempt
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
        none (no cookie, not ours, expired, signed out, or the principal's secret changed
        since). Besides the principal's, one read or write of the session: a renewal's
        conditional write proves it live, as the read does otherwise."""
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
        if renewed is None:
            if not self.app.store.sign_in_live(kept(session), now):
                return None
        else:
            if not self.app.store.extend_sign_in(kept(renewed), now):
                return None
            session = renewed
            cookies.append(self._session_cookie(session, now))
        origin = self.app.sender.console_base or request.origin() or ""
        csrf = self.signer.csrf_token(session.session_id)
        return Visit(principal, session, csrf, cookies, origin.rstrip("/"))

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
        secret = form.get("secret", "").strip()
        now = self.app.clock.now()
        try:
            count_attempt(self.app.store, request.source_ip, secret, now)
        except VigilError as error:
            wait = error.details.get("retry_after_seconds")
            if wait is None:  # the store failed: not the limit's answer to give
                raise
            log_event(log, "console sign-in throttled")
            return self._throttled(form.get("next"), wait)
        try:
            principal = self.app.authenticate(secret)
        except VigilError:
            log_event(log, "console sign-in refused")
            return self._page(form.get("next"), "That secret is not valid.", 401)
        session = self.signer.issue(principal, now)
        self.app.store.open_sign_in(kept(session))
        log_event(
            log,
            "console sign-in",
            namespace=principal.namespace,
            principal_id=principal.id,
        )
        response = redirect(_local_target(form.get("next")))
        response.cookies += [self._session_cookie(session, now), cleared(SIGN_IN_COOKIE)]
        return response

    def _throttled(self, target: str | None, wait_seconds: int) -> HttpResponse:
        """429, whatever the secret was: an attempt over the limit is not looked at."""
        minutes = math.ceil(wait_seconds / 60)
        message = (
            "Too many attempts to sign in from here or with this secret; "
            f"try again in {minutes} minute{'s' if minutes != 1 else ''}."
        )
        response = self._page(target, message, 429)
        response.headers["retry-after"] = str(wait_seconds)
        return response

    def _page(self, target: str | None, error: str | None, status: int) -> HttpResponse:
        token = secrets.token_urlsafe(24)
        response = self.responder.page(
            "Sign in", _sign_in_form(token, error, target), None, status=status
        )
        response.cookies.append(cookie(SIGN_IN_COOKIE, token, 600))
        return response


def kept(session: ConsoleSession) -> SignInSession:
    """A console session as the server keeps it: until its cookie expires."""
    ends_at = datetime.fromtimestamp(session.expires_at, UTC)
    return SignInSession(session.namespace, session.principal_id, session.session_id, ends_at)


def sign_out(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Ends the session on the server, so that no copy of its cookie holds after, and clears
    the cookie in this browser."""
    responder.app.store.end_sign_in(kept(visit.session))
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
