"""The console's way in: which handler answers which path and method, and the checks every
request passes first (a form's origin and CSRF token, a signed-in session)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from vigil.app import App
from vigil.console import static
from vigil.console.pages import (
    audit,
    authorize,
    channel_actions,
    channels,
    conversations,
    dead_letters,
    decide,
    grants,
    links,
    overview,
    people,
    requests,
    routing,
    runs,
    sessions,
    standing,
    switches,
)
from vigil.console.responder import PREFIX, Responder, Visit, read_form, redirect
from vigil.console.session import Signer
from vigil.console.sign_in import SignIn, sign_out
from vigil.kit.http import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from vigil.alarms.redrive import DeadLetters
    from vigil.oauth.endpoints import OAuthEndpoints

Page = Callable[[Responder, HttpRequest, Visit], HttpResponse]
Action = Callable[[Responder, Mapping[str, str], Visit], HttpResponse]

PAGES: dict[str, Page] = {
    PREFIX: overview.overview,
    f"{PREFIX}/switches": switches.switches,
    f"{PREFIX}/switch": switches.switch,
    f"{PREFIX}/sessions": sessions.sessions,
    f"{PREFIX}/session": sessions.session,
    f"{PREFIX}/runs": runs.runs,
    f"{PREFIX}/requests": requests.requests,
    f"{PREFIX}/request": requests.request,
    standing.HERE: standing.standing,
    routing.HERE: routing.routing,
    f"{PREFIX}/conversations": conversations.conversations,
    f"{PREFIX}/conversation": conversations.conversation,
    f"{PREFIX}/attachment": conversations.attachment,
    f"{PREFIX}/channels": channels.channels,
    f"{PREFIX}/channel": channels.channel,
    f"{PREFIX}/link": links.link,
    grants.HERE: grants.grants,
    audit.HERE: audit.audit,
    people.HERE: people.people,
    dead_letters.HERE: dead_letters.dead_letters,
}
# The forms the pages post: each makes one tool call (signing out makes none), then redirects
# back to its page, or answers with a page saying why the call was refused. Some answer with
# a page of their own: the second step of one confirmed before it is made (no call yet), what
# a call gave that is shown once (a new signing secret) or is its whole point (a test). Sending
# dead-lettered timers back is no tool's call: it is an operator's, audited by its page.
ACTIONS: dict[str, Action] = {
    f"{PREFIX}/sign-out": sign_out,
    f"{PREFIX}/sessions/instructions": sessions.post_instruction,
    f"{PREFIX}/requests/reply": requests.reply,
    requests.CLAIM: requests.claim,
    routing.SET: routing.set_rules,
    standing.REVOKE: standing.revoke,
    f"{PREFIX}/conversations/send": conversations.send,
    f"{PREFIX}/alerts/acknowledge": switches.acknowledge,
    f"{PREFIX}/switches/pause": switches.pause,
    f"{PREFIX}/switches/resume": switches.resume,
    f"{PREFIX}/channels/create": channel_actions.create,
    f"{PREFIX}/channels/test": channel_actions.test,
    f"{PREFIX}/channels/state": channel_actions.set_state,
    f"{PREFIX}/channels/rotate": channel_actions.rotate,
    f"{PREFIX}/channels/delete": channel_actions.delete,
    f"{PREFIX}/link": links.bind,
    grants.REVOKE: grants.revoke,
    people.ADD: people.add,
    links.UNLINK: links.unlink,
    dead_letters.SEND_BACK: dead_letters.send_back,
}


class Console:
    """The console as the router sees it: one ``handle`` for every request under /console.
    ``dead_letters`` gives the deployment's dead-letter queues of timers, for operators."""

    def __init__(
        self,
        app: App,
        dead_letters: Callable[[], DeadLetters | None] = lambda: None,
        oauth: Callable[[], OAuthEndpoints] | None = None,
    ) -> None:
        self.app = app
        self._oauth = oauth
        self.signer = Signer(app.keys.for_purpose("console-session"))
        self.assets = static.load_assets()
        self._by_path = {asset.path: asset for asset in self.assets.values()}
        self.responder = Responder(
            app, {name: asset.path for name, asset in self.assets.items()}, dead_letters
        )
        self.sign_in = SignIn(app, self.signer, self.responder)

    def handle(self, request: HttpRequest) -> HttpResponse:
        path = request.path.rstrip("/") or "/"
        if path.startswith(f"{static.ASSETS}/"):
            return static.serve(self._by_path.get(path), request)
        if request.method not in ("GET", "HEAD", "POST"):
            return HttpResponse(405, b"", {"allow": "GET, HEAD, POST"})
        if request.method == "POST" and not self._same_origin(request):
            return self.responder.refused(403, "This form was not sent from this console.")
        if path == f"{PREFIX}/sign-in":
            return self.sign_in.handle(request)
        if path == f"{PREFIX}/decide":
            # An email's decision link: its token says whose decision it is; only that
            # person, signed in, makes it.
            visit = self.sign_in.visit(request)
            response = decide.decide(self.responder, request, visit, self.signer)
            if visit is not None:
                response.cookies += visit.cookies
            return response
        if path == authorize.HERE:
            return self._authorize(request)
        visit = self.sign_in.visit(request)
        page = PAGES.get(path) if request.method != "POST" else None
        action = ACTIONS.get(path) if request.method == "POST" else None
        if page is None and action is None:
            if path in PAGES:
                return HttpResponse(405, b"", {"allow": "GET, HEAD"})
            if path in ACTIONS:
                return HttpResponse(405, b"", {"allow": "POST"})
            return self.responder.refused(404, "There is no such page.", visit)
        if visit is None:
            if request.method == "GET" and "fragment" not in request.query:
                target = path + (f"?{urlencode(request.query)}" if request.query else "")
                return redirect(f"{PREFIX}/sign-in?{urlencode({'next': target})}")
            return self.responder.refused(401, "Sign in first.")
        if action is not None:
            form = read_form(request)
            if form is None:
                return self.responder.refused(413, "The form is too large.", visit)
            if not self.signer.csrf_holds(visit.session.session_id, form.get("csrf")):
                return self.responder.refused(403, "This form has expired; reload the page.", visit)
            response = action(self.responder, form, visit)
        else:
            assert page is not None
            response = page(self.responder, request, visit)
        response.cookies += visit.cookies
        return response

    def oauth(self) -> OAuthEndpoints:
        if self._oauth is None:
            from vigil.oauth.endpoints import OAuthEndpoints

            app = self.app
            endpoints = OAuthEndpoints(
                app.store, app.keys, app.clock, allow_private=app.sender.allow_private
            )
            self._oauth = lambda: endpoints
        return self._oauth()

    def _authorize(self, request: HttpRequest) -> HttpResponse:
        """The OAuth consent page: the person signs in first, as for any page, and comes
        back to it with the host's request whole."""
        visit = self.sign_in.visit(request)
        if visit is None:
            if request.method == "GET":
                target = authorize.HERE + (f"?{urlencode(request.query)}" if request.query else "")
                return redirect(f"{PREFIX}/sign-in?{urlencode({'next': target})}")
            return self.responder.refused(401, "Sign in first.")
        response = authorize.authorize(self.responder, request, visit, self.signer, self.oauth)
        response.cookies += visit.cookies
        return response

    def _same_origin(self, request: HttpRequest) -> bool:
        """A form may be posted only from this console's own pages. Browsers say where a
        request comes from (Sec-Fetch-Site, or else Origin), and no page can forge either;
        behind a CDN the Host the function sees is not the browser's, so Sec-Fetch-Site is
        asked first."""
        site = request.headers.get("sec-fetch-site")
        if site is not None:
            return site == "same-origin"
        origin = request.headers.get("origin")
        return origin is not None and origin == request.origin()
