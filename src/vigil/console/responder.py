"""How every console handler answers: tool calls made as the signed-in person, whole pages
in their frame or only their live part, refusals, and the redirect after a form.

Also what a handler reads a request with: the signed-in ``Visit`` and the posted form."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

from vigil import catalog
from vigil.app import App, parse_arguments
from vigil.console.components import FORBIDDEN, problem
from vigil.console.frame import REFRESH_MS, frame, live
from vigil.console.html import Html, join, render
from vigil.console.session import ConsoleSession
from vigil.errors import HTTP_STATUS, ErrorCode, VigilError, forbidden
from vigil.identity.display_names import names_of
from vigil.identity.records import Principal
from vigil.kit.http import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from vigil.alarms.redrive import DeadLetters

PREFIX = "/console"
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
_REFUSAL_TITLES = {401: "Sign in first", 403: "Refused", 404: "Not found", 413: "Too large"}


# An empty part of a page.
NOTHING = Html("")


@dataclass
class Visit:
    """One signed-in request: who, in which session, and the cookie to send back, if any."""

    principal: Principal
    session: ConsoleSession
    csrf: str
    cookies: list[str]
    origin: str = ""  # where the deployment is reached: its console base, or the request's

    @property
    def mcp_url(self) -> str:
        return f"{self.origin}/mcp"


class Responder:
    """What every page and form handler is given: it calls tools as the visitor and frames
    what they show; ``dead_letters`` gives the deployment's dead-letter queues of timers, which
    are no tool's (None where the console is given none)."""

    def __init__(
        self,
        app: App,
        asset_paths: Mapping[str, str],
        dead_letters: Callable[[], DeadLetters | None] = lambda: None,
    ) -> None:
        self.app = app
        self._asset_paths = dict(asset_paths)
        self.dead_letters = dead_letters

    def now(self) -> datetime:
        return self.app.clock.now()

    # -- tool calls -----------------------------------------------------------------------------
    def call(self, visit: Visit, tool: str, **arguments: Any) -> dict[str, Any] | str:
        """A tool's result, or what refused it, in words for the page."""
        try:
            return self.app.call_as(tool, arguments, visit.principal, via="console")
        except VigilError as error:
            if error.code.value == "forbidden":
                return FORBIDDEN
            return error.message

    def names(self, visit: Visit) -> Mapping[str, str]:
        """The display names of the namespace's principals, by id, read once for a page, for
        saying who holds, asked, decided or wrote what; none if they cannot be read (the ids
        are shown then)."""
        try:
            return names_of(
                lambda tool, arguments: self.app.call_as(
                    tool, arguments, visit.principal, via="console"
                )
            )
        except VigilError:
            return {}

    def may(self, visit: Visit, tool: str) -> bool:
        """Whether the visitor's role may call ``tool``: a page shows a form only to those
        whose call it would make."""
        principal = visit.principal
        return catalog.tool(tool).admits(principal.kind, principal.role)

    def check(self, visit: Visit, tool: str, arguments: dict[str, Any]) -> VigilError | None:
        """What would refuse ``tool`` called with ``arguments`` before it ran (its input
        schema, then the visitor's role, in the order a call checks them), or None: the
        first step of a form confirmed on a second page, which calls nothing yet."""
        try:
            parse_arguments(catalog.tool(tool), arguments)
        except VigilError as error:
            return error
        return None if self.may(visit, tool) else forbidden()

    def attempt(
        self, visit: Visit, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | VigilError:
        """A form's tool call: its result, or the error that refused it, for a page that
        shows either."""
        try:
            return self.app.call_as(tool, arguments, visit.principal, via="console")
        except VigilError as error:
            return error

    def act(self, visit: Visit, tool: str, arguments: dict[str, Any], back: str) -> HttpResponse:
        """A form's tool call: back to ``back`` (303) when it is done, or a page saying why
        it was not."""
        done = self.attempt(visit, tool, arguments)
        if isinstance(done, VigilError):
            return self.not_done(done, back, visit)
        return redirect(back)

    def not_done(self, error: VigilError, back: str, visit: Visit) -> HttpResponse:
        """The page of a form its tool refused: why, and the way back to ``back``; a version
        conflict as the thing having changed since it was read."""
        if error.code is ErrorCode.VERSION_CONFLICT:
            return self.changed(reason(error), back, visit)
        return self._problem_page(
            "Not done",
            reason(error),
            render('<p><a href="{back}">Back</a></p>', back=back),
            visit,
            HTTP_STATUS[error.code],
        )

    def changed(self, why: str, back: str, visit: Visit) -> HttpResponse:
        """The page of a form made for a version of something that has changed since: the
        form did nothing, and the way back to ``back`` reads it again."""
        return self._problem_page(
            "It changed meanwhile",
            why,
            render(
                "<p>Nothing was done: it changed meanwhile. "
                '<a href="{back}">Read it again</a> before acting.</p>',
                back=back,
            ),
            visit,
            HTTP_STATUS[ErrorCode.VERSION_CONFLICT],
        )

    def post_text(
        self, visit: Visit, form: Mapping[str, str], tool: str, to: str, page: str
    ) -> HttpResponse:
        """A text form's ``body`` posted by ``tool`` to the thing its field ``to`` names, under
        the idempotency key the form was rendered with; back to that thing's ``page``."""
        target = form.get(to, "")
        arguments = {
            to: target,
            "body": form.get("body", ""),
            "idempotency_key": form.get("idempotency_key") or None,
        }
        return self.act(visit, tool, arguments, f"{PREFIX}/{page}?{urlencode({'id': target})}")

    # -- pages ----------------------------------------------------------------------------------
    def page(
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
                "kind": principal.kind,
                "namespace": principal.namespace,
            }
        html = frame(
            title,
            body,
            assets=self._asset_paths,
            who=who,
            csrf=visit.csrf if visit else None,
            here=here,
            now=self.now(),
        )
        return HttpResponse(status, html.encode(), dict(PAGE_HEADERS))

    def live_page(
        self,
        request: HttpRequest,
        title: str,
        here: str,
        live_part: Html,
        rest: Html,
        visit: Visit,
        every_ms: int = REFRESH_MS,
        lead: Html = NOTHING,
    ) -> HttpResponse:
        """A page whose ``live_part`` its script fetches again (``?fragment``) every few
        seconds; ``lead`` (the filters of what it lists) above it and ``rest`` (its forms)
        below it stay as the person left them."""
        if "fragment" in request.query:
            return HttpResponse(200, live_part.encode(), dict(PAGE_HEADERS))
        return self.whole_page(title, here, live_part, rest, visit, every_ms, lead=lead)

    def whole_page(
        self,
        title: str,
        here: str,
        live_part: Html,
        rest: Html,
        visit: Visit,
        every_ms: int = REFRESH_MS,
        status: int = 200,
        lead: Html = NOTHING,
    ) -> HttpResponse:
        """A live page in full: as a GET shows it, or as a form its tool refused answers, with
        the refusal and the form as it was sent in ``rest``."""
        body = join([lead, live(live_part, every_ms), rest])
        return self.page(title, body, visit, here=here, status=status)

    def unnamed(self, what: str, listing: str, visit: Visit) -> HttpResponse:
        """The page of one thing opened without its id: which it needs, and where to find
        one (a 404, as for an id that names nothing)."""
        body = render(
            "<p>This page shows one {what}, named in its address: open one from "
            '<a href="{listing}">the {what} listing</a>.</p>',
            what=what,
            listing=listing,
        )
        return self.page(f"Which {what}?", body, visit, status=404)

    def not_found(self, title: str, why: str, visit: Visit) -> HttpResponse:
        """The page of a thing its tool would not give: what it said instead."""
        return self.page(title, problem(why), visit, status=404)

    def refused(self, status: int, message: str, visit: Visit | None = None) -> HttpResponse:
        response = self._problem_page(
            _REFUSAL_TITLES.get(status, "Refused"),
            message,
            Html('<p><a href="/console">Back to the overview</a></p>'),
            visit,
            status,
        )
        if visit is not None:
            response.cookies += visit.cookies
        return response

    def _problem_page(
        self, title: str, message: str, back: Html, visit: Visit | None, status: int
    ) -> HttpResponse:
        return self.page(title, join([problem(message), back]), visit, status=status)


def reason(error: VigilError) -> str:
    """Why a form's call was refused, with each field's problem (a text over its limit says
    which limit): what the person fixes before posting again."""
    problems = error.details.get("problems") or []
    said = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
    return f"{error.code.value}: {error.message}" + (f" ({said})" if said else "")


def redirect(location: str) -> HttpResponse:
    # 303: the browser follows with a GET, so a reload never posts the form again.
    return HttpResponse(303, b"", {"location": location, "cache-control": "no-store"})


def read_form(request: HttpRequest) -> dict[str, str] | None:
    """A url-encoded form's fields (the first of each name), or None if it is too large."""
    if len(request.body) > MAX_FORM_BYTES:
        return None
    try:
        text = request.body.decode()
    except UnicodeDecodeError:
        return {}
    return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


def integer(text: str | None) -> int | str:
    """A form's number as a number; anything else as it was, for the tool to refuse."""
    try:
        return int(text or "")
    except ValueError:
        return text or ""


def idempotency_key() -> str:
    """A form's key, made as it is rendered, so that submitting it twice posts once."""
    return f"console-{secrets.token_urlsafe(16)}"
