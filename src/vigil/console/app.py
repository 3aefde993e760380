"""The console's HTTP side: sign-in, the session cookie, CSRF, the pages and their assets."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode

from vigil.app import App
from vigil.console import pages as p
from vigil.console.html import Html, join, render
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
from vigil.errors import HTTP_STATUS, VigilError
from vigil.identity.records import Principal
from vigil.observability import get_logger, log_event
from vigil.transports.http import HttpRequest, HttpResponse

log = get_logger("vigil.console")

PREFIX = "/console"
# The overview shows this many of the newest deaths.
OVERVIEW_DEATHS = 20
# A form body larger than this is refused unread: the largest field (an instruction, a
# message) is 8 KiB of text, percent-encoded.
MAX_FORM_BYTES = 64 * 1024

# No inline script or style, nothing from another origin, no framing, forms post only here.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


@dataclass(frozen=True)
class Asset:
    path: str  # versioned by its content's digest
    body: bytes
    content_type: str


def _assets() -> dict[str, Asset]:
    found = {}
    folder = resources.files("vigil.console") / "assets"
    for name, content_type in (
        ("console.css", "text/css; charset=utf-8"),
        ("console.js", "text/javascript; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ):
        body = (folder / name).read_bytes()
        stem, ext = name.rsplit(".", 1)
        digest = hashlib.sha256(body).hexdigest()[:12]
        found[name] = Asset(f"{PREFIX}/assets/{stem}.{digest}.{ext}", body, content_type)
    return found


@dataclass
class Visit:
    """One signed-in request: who, in which session, and the cookie to send back, if any."""

    principal: Principal
    session: ConsoleSession
    csrf: str
    cookies: list[str]


class Console:
    def __init__(self, app: App) -> None:
        self.app = app
        self.signer = Signer(app.keys.for_purpose("console-session"))
        self.assets = _assets()
        self._by_path = {asset.path: asset for asset in self.assets.values()}
        self._pages: dict[str, Callable[[HttpRequest, Visit], HttpResponse]] = {
            PREFIX: self.overview,
            f"{PREFIX}/switches": self.switches,
            f"{PREFIX}/switch": self.switch,
            f"{PREFIX}/sessions": self.sessions,
            f"{PREFIX}/session": self.session,
            f"{PREFIX}/runs": self.runs,
            f"{PREFIX}/requests": self.requests,
            f"{PREFIX}/request": self.request,
            f"{PREFIX}/conversations": self.conversations,
            f"{PREFIX}/conversation": self.conversation,
            f"{PREFIX}/channels": self.channels,
        }
        self._actions: dict[str, Callable[[Mapping[str, str], Visit], HttpResponse]] = {
            f"{PREFIX}/sign-out": self.sign_out,
            f"{PREFIX}/sessions/instructions": self.post_instruction,
            f"{PREFIX}/requests/reply": self.reply,
            f"{PREFIX}/conversations/send": self.send,
            f"{PREFIX}/alerts/acknowledge": self.acknowledge,
        }

    # -- the way in -----------------------------------------------------------------------------
    def handle(self, request: HttpRequest) -> HttpResponse:
        path = request.path.rstrip("/") or "/"
        if path.startswith(f"{PREFIX}/assets/"):
            return self._asset(request, path)
        if request.method not in ("GET", "HEAD", "POST"):
            return HttpResponse(405, b"", {"allow": "GET, HEAD, POST"})
        if request.method == "POST" and not self._same_origin(request):
            return self._refused(403, "This form was not sent from this console.")
        if path == f"{PREFIX}/sign-in":
            return self._sign_in(request)
        visit = self._visit(request)
        page = self._pages.get(path) if request.method != "POST" else None
        action = self._actions.get(path) if request.method == "POST" else None
        if page is None and action is None:
            if path in self._pages:
                return HttpResponse(405, b"", {"allow": "GET, HEAD"})
            if path in self._actions:
                return HttpResponse(405, b"", {"allow": "POST"})
            return self._refused(404, "There is no such page.", visit)
        if visit is None:
            if request.method == "GET" and "fragment" not in request.query:
                target = path + (f"?{urlencode(request.query)}" if request.query else "")
                return _redirect(f"{PREFIX}/sign-in?{urlencode({'next': target})}")
            return self._refused(401, "Sign in first.")
        if action is not None:
            form = _form(request)
            if form is None:
                return self._refused(413, "The form is too large.", visit)
            if not self.signer.csrf_holds(visit.session.session_id, form.get("csrf")):
                return self._refused(403, "This form has expired; reload the page.", visit)
            response = action(form, visit)
        else:
            assert page is not None
            response = page(request, visit)
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

    def _visit(self, request: HttpRequest) -> Visit | None:
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

    def _sign_in(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return self._sign_in_page(request.query.get("next"), None, 200)
        form = _form(request)
        if form is None:
            return self._refused(413, "The form is too large.")
        # The cookie's token is random and never empty: an empty one (however it got there)
        # would match a form that sends none.
        token = request.cookies.get(SIGN_IN_COOKIE)
        if not token or not same(form.get("csrf", ""), token):
            return self._sign_in_page(form.get("next"), "The form expired; try again.", 403)
        try:
            principal = self.app.authenticate(form.get("secret", "").strip())
        except VigilError:
            log_event(log, "console sign-in refused")
            return self._sign_in_page(form.get("next"), "That secret is not valid.", 401)
        now = self.app.clock.now()
        session = self.signer.issue(principal, now)
        log_event(
            log,
            "console sign-in",
            namespace=principal.namespace,
            principal_id=principal.id,
        )
        response = _redirect(_local_target(form.get("next")))
        response.cookies += [self._session_cookie(session, now), cleared(SIGN_IN_COOKIE)]
        return response

    def _sign_in_page(self, target: str | None, error: str | None, status: int) -> HttpResponse:
        token = secrets.token_urlsafe(24)
        body = p.sign_in(token, error)
        if target:
            body = Html(
                body.replace(
                    "</form>",
                    render('<input type="hidden" name="next" value="{t}"></form>', t=target),
                )
            )
        response = self._page("Sign in", body, None, status=status)
        response.cookies.append(cookie(SIGN_IN_COOKIE, token, 600))
        return response

    def sign_out(self, form: Mapping[str, str], visit: Visit) -> HttpResponse:
        visit.cookies.clear()
        response = _redirect(f"{PREFIX}/sign-in")
        response.cookies.append(cleared(COOKIE))
        return response

    # -- rendering ------------------------------------------------------------------------------
    def _page(
        self,
        title: str,
        body: Html,
        visit: Visit | None,
        *,
        here: str = "",
        status: int = 200,
    ) -> HttpResponse:
        who = None
        if visit is not None:
            principal = visit.principal
            who = {
                "name": principal.name,
                "principal_id": principal.id,
                "role": principal.role,
                "namespace": principal.namespace,
            }
        html = p.frame(
            title,
            body,
            assets={name: asset.path for name, asset in self.assets.items()},
            who=who,
            csrf=visit.csrf if visit else None,
            here=here,
            now=self.app.clock.now(),
        )
        return HttpResponse(status, html.encode(), dict(PAGE_HEADERS))

    def _live_page(
        self,
        request: HttpRequest,
        title: str,
        here: str,
        live: Html,
        rest: Html,
        visit: Visit,
        every_ms: int = p.REFRESH_MS,
    ) -> HttpResponse:
        """A page whose ``live`` part its script fetches again (``?fragment``) every few
        seconds; ``rest`` (its forms) stays as the person left it."""
        if "fragment" in request.query:
            return HttpResponse(200, live.encode(), dict(PAGE_HEADERS))
        return self._page(title, join([p.live(live, every_ms), rest]), visit, here=here)

    def _refused(self, status: int, message: str, visit: Visit | None = None) -> HttpResponse:
        titles = {401: "Sign in first", 403: "Refused", 404: "Not found", 413: "Too large"}
        body = join(
            [p.problem(message), Html('<p><a href="/console">Back to the overview</a></p>')]
        )
        response = self._page(titles.get(status, "Refused"), body, visit, status=status)
        if visit is not None:
            response.cookies += visit.cookies
        return response

    def _asset(self, request: HttpRequest, path: str) -> HttpResponse:
        asset = self._by_path.get(path)
        if asset is None:
            return HttpResponse(
                404,
                b"not found",
                {"content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff"},
            )
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(405, b"", {"allow": "GET, HEAD"})
        return HttpResponse(
            200,
            asset.body,
            {
                "content-type": asset.content_type,
                # The name changes with the content, so a copy never needs checking again.
                "cache-control": "public, max-age=31536000, immutable",
                "x-content-type-options": "nosniff",
            },
        )

    def _call(self, visit: Visit, tool: str, **arguments: Any) -> dict[str, Any] | str:
        """A tool's result, or what refused it, in words for the page."""
        try:
            return self.app.call_as(tool, arguments, visit.principal)
        except VigilError as error:
            if error.code.value == "forbidden":
                return "Your role may not see this."
            return error.message

    def _act(self, visit: Visit, tool: str, arguments: dict[str, Any], back: str) -> HttpResponse:
        """A form's tool call: back to ``back`` (303) when it is done, or a page saying why
        it was not."""
        try:
            self.app.call_as(tool, arguments, visit.principal)
        except VigilError as error:
            return self._failed(error, visit, back)
        return _redirect(back)

    def _failed(self, error: VigilError, visit: Visit, back: str) -> HttpResponse:
        body = join(
            [
                p.problem(f"{error.code.value}: {error.message}"),
                render('<p><a href="{back}">Back</a></p>', back=back),
            ]
        )
        return self._page("Not done", body, visit, status=HTTP_STATUS[error.code])

    # -- pages ----------------------------------------------------------------------------------
    def overview(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        """Five listings: the armed switches, the pauses in force, the newest deaths (what
        fired), the stale sessions and the open requests; a switch that fired is shown by its
        death, which says when, how late and what was released."""
        now = self.app.clock.now()
        armed = self._call(visit, "list_switches", state="armed")
        paused = self._call(visit, "list_pauses")
        deaths = self._call(visit, "list_deaths", limit=OVERVIEW_DEATHS)
        stale = self._call(visit, "list_sessions", stale_only=True)
        waiting = self._call(visit, "request_status", state="open")
        me = visit.principal.id

        armed_list = [] if isinstance(armed, str) else armed["switches"]
        pause_list = [] if isinstance(paused, str) else paused["pauses"]
        soon = [s for s in armed_list if p.expiring(s, now) and not p.pausing(pause_list, s)]
        death_list = [] if isinstance(deaths, str) else deaths["deaths"]
        since = now - timedelta(days=1)
        day = [d for d in death_list if datetime.fromisoformat(d["fired_at"]) > since]
        fired = f"{len(day)}+" if day and len(day) == OVERVIEW_DEATHS else str(len(day))
        stale_list = [] if isinstance(stale, str) else stale["sessions"]
        mine = (
            []
            if isinstance(waiting, str)
            else [r for r in waiting["requests"] if me in r["audience"]]
        )
        counts = join(
            render(
                '<li><span class="count" id="count-{k}">{n}</span> {label}</li>',
                k=k,
                n=n,
                label=label,
            )
            for k, n, label in (
                ("armed", len(armed_list), "armed"),
                ("soon", len(soon), "expiring soon"),
                ("paused", len(pause_list), "pauses in force"),
                ("fired", fired, "fired in 24 h"),
                ("stale", len(stale_list), "stale sessions"),
                ("waiting", len(mine), "requests waiting for you"),
            )
        )
        live = join(
            [
                render('<ul class="summary" aria-label="At a glance">{c}</ul>', c=counts),
                p.section(
                    "Requests waiting for you",
                    "waiting",
                    p.problem(waiting)
                    if isinstance(waiting, str)
                    else p.table(
                        "Open requests you decide",
                        p.REQUEST_HEADERS,
                        p.request_rows(mine, me, now),
                        "Nothing waits for you.",
                    ),
                ),
                p.section(
                    "Armed switches",
                    "armed",
                    p.problem(armed)
                    if isinstance(armed, str)
                    else p.table(
                        "Armed, soonest deadline first",
                        p.SWITCH_HEADERS,
                        p.switch_rows(
                            sorted(armed_list, key=lambda s: s["deadline"]), now, pause_list
                        ),
                        "No switch is armed.",
                        "armed-switches",
                    ),
                ),
                p.section(
                    "Pauses",
                    "pauses",
                    p.shown(
                        paused,
                        lambda page: p.table(
                            "Pauses in force: a held switch does not fire or alert",
                            p.PAUSE_HEADERS,
                            p.pause_rows(page["pauses"], now),
                            "No switch is paused.",
                            "pauses-in-force",
                        ),
                    ),
                ),
                p.section(
                    "Fired",
                    "fired",
                    p.problem(deaths)
                    if isinstance(deaths, str)
                    else p.table(
                        "Switches that fired, newest first",
                        p.DEATH_HEADERS,
                        p.death_rows(death_list, now),
                        "No switch has fired.",
                        "fired-switches",
                    ),
                ),
                p.section(
                    "Stale sessions",
                    "stale",
                    p.shown(
                        stale,
                        lambda page: p.table(
                            "Sessions with no recent beat",
                            p.SESSION_HEADERS,
                            p.session_rows(page["sessions"], now),
                            "No session is stale.",
                        ),
                    ),
                ),
            ]
        )
        return self._live_page(
            request, "Overview", PREFIX, live, Html(""), visit, p.REFRESH_LISTINGS_MS
        )

    def switches(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        state = request.query.get("state") or None
        prefix = request.query.get("scope_prefix") or None
        arguments = {"state": state, "scope_prefix": prefix, "cursor": request.query.get("cursor")}
        found = self._call(visit, "list_switches", **{k: v for k, v in arguments.items() if v})
        paused = self._call(visit, "list_pauses")
        pause_list = [] if isinstance(paused, str) else paused["pauses"]
        states = join(
            render(
                '<option value="{v}"{sel}>{t}</option>',
                v=v,
                t=t,
                sel=Html(" selected") if v == (state or "") else Html(""),
            )
            for v, t in (
                ("", "any"),
                ("armed", "armed"),
                ("disarmed", "disarmed"),
                ("expired", "expired"),
                ("failed", "failed"),
            )
        )
        filters = render(
            '<form method="get" action="/console/switches" class="filters">'
            '<label for="state">State</label><select id="state" name="state">{states}</select>'
            '<label for="scope_prefix">Scope starts with</label>'
            '<input id="scope_prefix" name="scope_prefix" value="{prefix}">'
            '<button type="submit">Show</button></form>',
            states=states,
            prefix=prefix or "",
        )

        def draw(page: Mapping[str, Any]) -> Html:
            more = Html("")
            if page["next_cursor"]:
                query = {k: v for k, v in arguments.items() if v and k != "cursor"}
                more = render(
                    "<p>{a}</p>",
                    a=p.link("/console/switches", "Next page", **query, cursor=page["next_cursor"]),
                )
            return join([p.switches_table("Switches", page["switches"], now, pause_list), more])

        return self._live_page(
            request, "Switches", f"{PREFIX}/switches", p.shown(found, draw), filters, visit
        )

    def switch(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        scope = request.query.get("scope", "")
        packet = self._call(visit, "resume_packet", scope=scope)
        deaths = self._call(visit, "list_deaths")
        paused = self._call(visit, "list_pauses")
        if isinstance(packet, str):
            return self._page(scope or "Switch", p.problem(packet), visit, status=404)
        pausing = [] if isinstance(paused, str) else p.pausing(paused["pauses"], packet)
        history = (
            [] if isinstance(deaths, str) else [d for d in deaths["deaths"] if d["scope"] == scope]
        )
        death = packet["death"]
        progress = packet["last_progress"]
        live = join(
            [
                render(
                    '<dl class="facts">{f}</dl>',
                    f=p.fields(
                        [
                            ("State", p.badge(packet["state"])),
                            (
                                "Fires",
                                p.countdown(packet["deadline"], now)
                                if packet["state"] == "armed"
                                else "—",
                            ),
                            ("Paused", p.paused_by(pausing, now)),
                            (
                                "Holder",
                                packet["holder"]
                                + (f" ({packet['agent_id']})" if packet["agent_id"] else ""),
                            ),
                            ("Generation", packet["generation"]),
                            ("Armed", p.when(packet["armed_at"])),
                            ("Last beat", p.ago(packet["last_beat_at"], now)),
                            ("Window", p.span(packet["expect_within_seconds"])),
                            ("On expiry", ", ".join(packet["on_expiry"]) or "—"),
                        ]
                    ),
                ),
                p.section(
                    "Pauses over this switch",
                    "paused",
                    p.table(
                        "Pauses in force whose prefix begins this scope",
                        p.PAUSE_HEADERS,
                        p.pause_rows(pausing, now),
                        "No pause covers this switch.",
                    ),
                ),
                p.section(
                    "Last progress",
                    "progress",
                    p.verbatim(progress)
                    if progress
                    else Html('<p class="empty">No progress reported.</p>'),
                ),
                p.section(
                    "Leases held now",
                    "held",
                    p.table(
                        "Held leases of this scope",
                        ("Resource", "Holder", "Generation", "Expires"),
                        p.lease_rows(packet["held_leases"], now),
                        "This scope holds no lease.",
                    ),
                ),
                p.section(
                    "Latest death",
                    "death",
                    p.verbatim(death)
                    if death
                    else Html('<p class="empty">This switch has not died.</p>'),
                ),
                p.section(
                    "Leases its death released",
                    "released",
                    p.table(
                        "Released leases",
                        ("Resource", "Generation"),
                        [[r["resource"], r["generation"]] for r in packet["released_leases"] or []],
                        "None released.",
                    ),
                ),
                p.section(
                    "Deaths",
                    "history",
                    p.table(
                        "Recent deaths of this scope, newest first",
                        p.DEATH_HEADERS,
                        p.death_rows(history, now),
                        "No recent death.",
                    ),
                ),
            ]
        )
        alert = death.get("alert_id") if death else None
        acknowledge = (
            p.section("Its alert", "alert", p.acknowledge_form(alert, scope, visit.csrf))
            if alert
            else Html("")
        )
        return self._live_page(
            request, scope, f"{PREFIX}/switches", live, acknowledge, visit, p.REFRESH_LISTINGS_MS
        )

    def sessions(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        stale_only = request.query.get("stale") == "1"
        arguments: dict[str, Any] = {"stale_only": stale_only}
        if request.query.get("cursor"):
            arguments["cursor"] = request.query["cursor"]
        found = self._call(visit, "list_sessions", **arguments)
        filters = render(
            "<p>{all} · {stale}</p>",
            all=p.link("/console/sessions", "All sessions"),
            stale=p.link("/console/sessions", "Stale only", stale="1"),
        )

        def draw(page: Mapping[str, Any]) -> Html:
            more = Html("")
            if page["next_cursor"]:
                query = {"cursor": page["next_cursor"], **({"stale": "1"} if stale_only else {})}
                more = render("<p>{a}</p>", a=p.link("/console/sessions", "Next page", **query))
            rows = p.session_rows(page["sessions"], now)
            return join([p.table("Sessions", p.SESSION_HEADERS, rows, "No sessions."), more])

        return self._live_page(
            request, "Sessions", f"{PREFIX}/sessions", p.shown(found, draw), filters, visit
        )

    def session(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        session_id = request.query.get("id", "")
        found = self._call(visit, "list_instructions", session_id=session_id)
        if isinstance(found, str):
            return self._page("Session", p.problem(found), visit, status=404)
        live = p.table(
            "Instructions, oldest first",
            p.INSTRUCTION_HEADERS,
            p.instruction_rows(found["instructions"], now),
            "No instruction yet.",
            "instructions",
        )
        form = render(
            '<form method="post" action="/console/sessions/instructions" class="post">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<input type="hidden" name="session_id" value="{session}">'
            '<input type="hidden" name="idempotency_key" value="{key}">'
            '<label for="body">New instruction</label>'
            '<textarea id="body" name="body" rows="3" required maxlength="8192"></textarea>'
            '<p class="hint">The agent receives it on its next session_heartbeat.</p>'
            '<button type="submit">Post instruction</button></form>',
            csrf=visit.csrf,
            session=session_id,
            key=f"console-{secrets.token_urlsafe(16)}",
        )
        return self._live_page(
            request, f"Session {session_id}", f"{PREFIX}/sessions", live, form, visit
        )

    def acknowledge(self, form: Mapping[str, str], visit: Visit) -> HttpResponse:
        back = f"{PREFIX}/switch?{urlencode({'scope': form.get('scope', '')})}"
        arguments = {"event_id": form.get("event_id", "")}
        return self._act(visit, "acknowledge_alert", arguments, back)

    def post_instruction(self, form: Mapping[str, str], visit: Visit) -> HttpResponse:
        session_id = form.get("session_id", "")
        back = f"{PREFIX}/session?{urlencode({'id': session_id})}"
        arguments = {
            "session_id": session_id,
            "body": form.get("body", ""),
            "idempotency_key": form.get("idempotency_key") or None,
        }
        return self._act(visit, "post_instruction", arguments, back)

    def runs(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        scope = request.query.get("scope") or ""
        run_id = request.query.get("run_id") or ""
        parts = []
        if scope:
            packet = self._call(visit, "resume_packet", scope=scope)
            parts.append(
                p.section(
                    f"Leases of {scope}",
                    "leases",
                    p.shown(
                        packet,
                        lambda k: p.table(
                            "Held leases",
                            ("Resource", "Holder", "Generation", "Expires"),
                            p.lease_rows(k["held_leases"], now),
                            "This scope holds no lease.",
                        ),
                    ),
                )
            )
        if run_id:
            run = self._call(visit, "get_run", run_id=run_id)
            parts.append(
                p.section(
                    f"Run {run_id}",
                    "run",
                    p.shown(
                        run,
                        lambda r: render(
                            '<dl class="facts">{f}</dl>',
                            f=p.fields(
                                [
                                    ("State", p.badge(r["state"])),
                                    ("Holder", r["holder"]),
                                    ("Generation", r["generation"]),
                                    (
                                        "Lease ends",
                                        p.countdown(r["expires_at"], now)
                                        if r["state"] == "running"
                                        else p.when(r["expires_at"]),
                                    ),
                                    ("Outcome", r["outcome"] or "—"),
                                    ("Started", p.when(r["started_at"])),
                                    ("Finished", p.when(r["finished_at"])),
                                ]
                            ),
                        ),
                    ),
                )
            )
        armed = self._call(visit, "list_switches", state="armed")
        parts.append(
            p.section(
                "Who holds which switch",
                "holders",
                p.shown(
                    armed, lambda page: p.switches_table("Armed switches", page["switches"], now)
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
        return self._live_page(
            request, "Runs and leases", f"{PREFIX}/runs", join(parts), forms, visit
        )

    def requests(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        state = request.query.get("state", "open") or None
        arguments: dict[str, Any] = {"state": state} if state else {}
        if request.query.get("cursor"):
            arguments["cursor"] = request.query["cursor"]
        found = self._call(visit, "request_status", **arguments)
        filters = render(
            "<p>{open} · {all}</p>",
            open=p.link("/console/requests", "Open"),
            all=p.link("/console/requests", "All", state=""),
        )

        def draw(page: Mapping[str, Any]) -> Html:
            rows = p.request_rows(page["requests"], visit.principal.id, now)
            more = Html("")
            if page["next_cursor"]:
                query = {"state": state or "", "cursor": page["next_cursor"]}
                more = render("<p>{a}</p>", a=p.link("/console/requests", "Next page", **query))
            table = p.table(
                "Requests you asked or decide, oldest first",
                p.REQUEST_HEADERS,
                rows,
                "No requests.",
                "requests",
            )
            return join([table, more])

        return self._live_page(
            request, "Requests", f"{PREFIX}/requests", p.shown(found, draw), filters, visit
        )

    def request(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        request_id = request.query.get("id", "")
        found = self._call(visit, "get_request", id=request_id)
        if isinstance(found, str):
            return self._page("Request", p.problem(found), visit, status=404)
        r = found
        facts = render(
            '<dl class="facts">{f}</dl>',
            f=p.fields(
                [
                    ("State", p.badge(r["state"])),
                    ("Kind", r["kind"] + (" (blocking)" if r["blocking"] else "")),
                    ("Asked by", r["requester"]),
                    ("Decided by", ", ".join(r["audience"])),
                    ("Asked", p.when(r["asked_at"])),
                    (
                        "Expires",
                        p.countdown(r["expires_at"], now)
                        if r["state"] == "open"
                        else p.when(r["expires_at"]),
                    ),
                    (
                        "Conversation",
                        p.link(
                            "/console/conversation", r["conversation_id"], id=r["conversation_id"]
                        ),
                    ),
                    ("Response", p.verbatim(r["response"]) if r["response"] else "—"),
                ]
            ),
        )
        parts = [
            facts,
            p.section("What is asked", "body", render('<p class="body">{b}</p>', b=r["body"])),
        ]
        if r["action"] is not None:
            parts.append(
                p.section(
                    "The action an approval binds, exactly", "action", p.verbatim(r["action"])
                )
            )
        if r["choices"]:
            parts.append(
                p.section(
                    "Choices",
                    "choices",
                    render(
                        "<ul>{items}</ul>",
                        items=join(render("<li>{c}</li>", c=c) for c in r["choices"]),
                    ),
                )
            )
        parts.append(
            p.section(
                "History",
                "history",
                p.table(
                    "Every change, oldest first",
                    ("Change", "By", "When", "Version"),
                    p.history_rows(r["history"], now),
                    "No change yet.",
                ),
            )
        )
        decide = Html("")
        if r["state"] == "open" and visit.principal.id in r["audience"]:
            decide = p.section("Your decision", "decide", p.reply_form(r, visit.csrf))
        title = f"{r['kind'].capitalize()} {r['id']}"
        if "fragment" in request.query:
            return HttpResponse(200, join(parts).encode(), dict(PAGE_HEADERS))
        return self._page(
            title, join([p.live(join(parts)), decide]), visit, here=f"{PREFIX}/requests"
        )

    def reply(self, form: Mapping[str, str], visit: Visit) -> HttpResponse:
        request_id = form.get("id", "")
        back = f"{PREFIX}/request?{urlencode({'id': request_id})}"
        arguments: dict[str, Any] = {
            "id": request_id,
            "outcome": form.get("outcome", ""),
            "version": _integer(form.get("version")),
        }
        if form.get("answer"):
            arguments["answer"] = form["answer"]
        return self._act(visit, "reply", arguments, back)

    def conversations(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        found = self._call(visit, "request_status")
        seen: dict[str, str] = {}
        if not isinstance(found, str):
            for r in found["requests"]:
                seen.setdefault(r["conversation_id"], p.first_line(r["body"]))
        rows = [[p.link("/console/conversation", c, id=c), about] for c, about in seen.items()]
        body = join(
            [
                render(
                    '<form method="get" action="/console/conversation" class="filters">'
                    '<label for="id">Conversation id</label><input id="id" name="id" required>'
                    '<button type="submit">Open</button></form>'
                ),
                p.section(
                    "Conversations of your requests",
                    "known",
                    p.table("Conversations", ("Conversation", "About"), rows, "None yet."),
                ),
            ]
        )
        return self._page("Conversations", body, visit, here=f"{PREFIX}/conversations")

    def conversation(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        now = self.app.clock.now()
        conversation_id = request.query.get("id", "")
        found = self._call(visit, "get_conversation", id=conversation_id)
        if isinstance(found, str):
            return self._page("Conversation", p.problem(found), visit, status=404)
        who = ", ".join(f"{x['principal_id']} ({x['kind']})" for x in found["participants"])
        live = join(
            [
                render('<p class="meta">{kind} · {who}</p>', kind=found["kind"], who=who),
                p.message_list(found["messages"], now),
            ]
        )
        form = render(
            '<form method="post" action="/console/conversations/send" class="post">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<input type="hidden" name="conversation_id" value="{id}">'
            '<input type="hidden" name="idempotency_key" value="{key}">'
            '<label for="body">Reply</label>'
            '<textarea id="body" name="body" rows="3" required></textarea>'
            '<button type="submit">Send</button></form>',
            csrf=visit.csrf,
            id=conversation_id,
            key=f"console-{secrets.token_urlsafe(16)}",
        )
        title = found["title"] or f"Conversation {conversation_id}"
        return self._live_page(request, title, f"{PREFIX}/conversations", live, form, visit)

    def send(self, form: Mapping[str, str], visit: Visit) -> HttpResponse:
        conversation_id = form.get("conversation_id", "")
        back = f"{PREFIX}/conversation?{urlencode({'id': conversation_id})}"
        arguments = {
            "conversation_id": conversation_id,
            "body": form.get("body", ""),
            "idempotency_key": form.get("idempotency_key") or None,
        }
        return self._act(visit, "send", arguments, back)

    def channels(self, request: HttpRequest, visit: Visit) -> HttpResponse:
        """The namespace's notification channels, for operators: where each sends, which events
        and whether it is enabled; never a secret, and a Slack webhook only by its host."""
        now = self.app.clock.now()
        found = self._call(visit, "list_channels")
        live = p.shown(
            found,
            lambda page: p.table(
                "Notification channels",
                p.CHANNEL_HEADERS,
                p.channel_rows(page["channels"], now),
                "No channel yet: an operator creates one with the create_channel tool.",
            ),
        )
        return self._live_page(
            request, "Channels", f"{PREFIX}/channels", live, Html(""), visit, p.REFRESH_LISTINGS_MS
        )


def _redirect(location: str) -> HttpResponse:
    # 303: the browser follows with a GET, so a reload never posts the form again.
    return HttpResponse(303, b"", {"location": location, "cache-control": "no-store"})


# A console page, with or without a query, in printable ASCII: no other path of this origin,
# and nothing (a line break) that could end the Location header early and start another.
_LOCAL_TARGET = re.compile(r"/console(?:[/?][!-~]*)?")


def _local_target(target: str | None) -> str:
    """Where to go after signing in: a console path only, never another site (nor a
    backslash, which some browsers read as a slash)."""
    if target and _LOCAL_TARGET.fullmatch(target) and "\\" not in target:
        return target
    return PREFIX


def _form(request: HttpRequest) -> dict[str, str] | None:
    """A url-encoded form's fields (the first of each name), or None if it is too large."""
    if len(request.body) > MAX_FORM_BYTES:
        return None
    try:
        text = request.body.decode()
    except UnicodeDecodeError:
        return {}
    return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


def _integer(text: str | None) -> int | str:
    """A form's number as a number; anything else as it was, for the tool to refuse."""
    try:
        return int(text or "")
    except ValueError:
        return text or ""
