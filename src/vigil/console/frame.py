"""The HTML around every page's body: the document's head, the console's navigation and the
signed-in person's bar, and the live part of a page that its script fetches again."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vigil.console.html import Html, join, render

# The console's pages, and whom they are led to: anyone signed in, people and operators
# ("overseers"), or operators only.
NAV = (
    ("/console", "Overview", "anyone"),
    ("/console/switches", "Switches", "anyone"),
    ("/console/sessions", "Sessions", "anyone"),
    ("/console/runs", "Runs and leases", "anyone"),
    ("/console/requests", "Requests", "anyone"),
    ("/console/standing", "Standing approvals", "overseers"),
    ("/console/routing", "Routing", "operators"),
    ("/console/conversations", "Conversations", "anyone"),
    ("/console/channels", "Channels", "anyone"),
    ("/console/people", "People", "anyone"),
    ("/console/grants", "Sign-ins", "anyone"),
    ("/console/audit", "Audit", "operators"),
)

# How often a page's script fetches its live part again, in ms: a listing of the whole
# namespace (the overview, a switch's page) less often than a page about one thing. Around a
# deadline on the page, the script asks every two seconds whatever this says.
REFRESH_MS = 5000
REFRESH_LISTINGS_MS = 10000


def frame(
    title: str,
    body: Html,
    *,
    assets: Mapping[str, str],
    who: Mapping[str, Any] | None,
    csrf: str | None,
    here: str,
    now: datetime,
) -> Html:
    nav = Html("")
    account = Html("")
    if who is not None and csrf is not None:
        items = join(
            render(
                '<li><a href="{href}"{current}>{text}</a></li>',
                href=href,
                text=text,
                current=Html(' aria-current="page"') if href == here else Html(""),
            )
            for href, text, whom in NAV
            if _led(whom, who)
        )
        nav = render('<nav aria-label="Console"><ul>{items}</ul></nav>', items=items)
        # An operator is said to be one; anyone else by what they are (a person, an agent).
        standing = "operator" if who.get("role") == "operator" else who.get("kind")
        account = render(
            '<div class="account"><span>{name} · {standing} · {namespace}</span>'
            '<form method="post" action="/console/sign-out">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<button type="submit">Sign out</button></form></div>',
            name=who.get("name") or who.get("principal_id"),
            standing=standing,
            namespace=who.get("namespace"),
            csrf=csrf,
        )
    return render(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} · Vigil</title>"
        '<link rel="icon" href="{icon}" type="image/svg+xml">'
        '<link rel="stylesheet" href="{css}"><script src="{js}" defer></script></head>'
        '<body data-now="{now}"><a class="skip" href="#main">Skip to content</a>'
        '<header><a class="brand" href="/console">Vigil</a>{nav}{account}</header>'
        '<main id="main" tabindex="-1"><h1>{title}</h1>{body}</main></body></html>',
        title=title,
        css=assets["console.css"],
        js=assets["console.js"],
        icon=assets["icon.svg"],
        now=now.isoformat(),
        nav=nav,
        account=account,
        body=body,
    )


def _led(whom: str, who: Mapping[str, Any]) -> bool:
    """Whether the navigation leads ``who`` to a page meant for ``whom``."""
    operator = who.get("role") == "operator"
    if whom == "operators":
        return operator
    return whom == "anyone" or operator or who.get("kind") == "person"


def live(body: Html, every_ms: int = REFRESH_MS) -> Html:
    """The part of a page its script fetches again every few seconds, without a reload."""
    return render(
        '<div id="live" data-refresh="{every}" aria-live="polite" aria-busy="false">{body}</div>',
        every=every_ms,
        body=body,
    )
