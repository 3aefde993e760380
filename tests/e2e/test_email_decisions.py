"""Deciding from an email on the local runtime, over HTTP: the address's first request email
(sent through moto's SES by the notify function) carries the link that claims it, which its
person binds signed in; the next one carries that person's decision link. Opening it changes
nothing; a stranger holding it decides nothing; the person, signed in, decides with the form
posted from its page, once: the same link used again decides nothing more."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from tests.e2e.test_console_sign_out import Client
from tests.e2e.test_deadman import _poll
from tests.e2e.test_notifications import _sent_emails
from tests.e2e.test_people_cli import rest

pytestmark = pytest.mark.e2e

DEADLINE_SECONDS = 20.0


def field(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found is not None, name
    return html.unescape(found.group(1))


def test_an_email_link_changes_nothing_until_its_form_is_posted_and_decides_once(
    runtime: Any, state: dict[str, Any]
) -> None:
    base = state["mcp_url"].removesuffix("/mcp")
    operator = state["operator_secret"]
    address = f"pat-{uuid.uuid4().hex[:8]}@example.com"
    pat = rest(base, operator, "register", kind="person", name="Pat Doe", role="worker")
    ann = rest(base, operator, "register", kind="agent", name="ann", role="worker")
    rest(
        base,
        operator,
        "create_channel",
        name=address,
        kind="email",
        email=address,
        rules=[{"events": ["request.opened"]}],
    )

    def ask() -> dict[str, Any]:
        return rest(
            base,
            ann["secret"],
            "ask",
            target={"kind": "person", "id": pat["principal"]["id"]},
            kind="approval",
            body=f"May I deploy? {uuid.uuid4().hex[:6]}",
            action={"op": "deploy"},
        )

    def link_in_email(request_body: str, path: str) -> str:
        async def mailed() -> tuple[bool, dict[str, Any]]:
            found = [
                m
                for m in _sent_emails(runtime)
                if address in m["destinations"]["ToAddresses"] and request_body in m["body"]
            ]
            return bool(found), {"messages": found}

        [message] = anyio.run(_poll, mailed, DEADLINE_SECONDS)["messages"]
        links = re.findall(rf'href="([^"]*{re.escape(path)}\?[^"]*)"', message["body"])
        assert links, message["body"]
        return html.unescape(links[0])

    def path_of(link: str) -> str:
        parts = urlsplit(link)
        return f"{parts.path}?{parts.query}"

    # The first email claims the address for Pat.
    first = ask()
    claim = link_in_email(first["body"], "/console/link")
    console = Client(base)
    csrf = console.csrf("/console/sign-in")
    assert console.send("POST", "/console/sign-in", {"csrf": csrf, "secret": pat["secret"]})[0]
    status, page = console.send("GET", path_of(claim))
    assert status == 200
    token = token_of(claim)
    assert (
        console.send("POST", "/console/link", {"csrf": field(page, "csrf"), "token": token})[0]
        == 200
    )

    # The next one carries Pat's decision link. Opening it, again and again, changes nothing.
    second = ask()
    link = link_in_email(second["body"], "/console/decide")
    stranger = Client(base)  # no console session: it sees the request, and decides nothing

    def current() -> dict[str, Any]:
        return rest(base, ann["secret"], "get_request", id=second["id"])

    before = current()
    for _ in range(3):
        status, page = stranger.send("GET", path_of(link))
        assert status == 200
    assert "sign in as Pat Doe" in page
    form = {"token": token_of(link), "version": str(before["version"]), "outcome": "approved"}
    assert stranger.send("POST", "/console/decide", form)[0] == 403
    assert current() == before

    # Pat, signed in, opens it and its form decides, as Pat.
    status, page = console.send("GET", path_of(link))
    assert status == 200
    form["csrf"] = field(page, "csrf")
    status, _ = console.send("POST", "/console/decide", form)
    assert status == 200
    decided = current()
    assert decided["state"] == "approved"
    assert decided["response"]["by"] == pat["principal"]["id"]

    # The same link, used again, decides nothing more.
    status, page = console.send("POST", "/console/decide", {**form, "outcome": "denied"})
    assert status == 409
    assert "approved by Pat Doe" in page
    assert current() == decided


def token_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["token"][0]
