"""Signing out of the console ends the session for every holder of its cookie: a copy taken
before, presented afterwards by another process over HTTP to the local runtime, is refused."""

from __future__ import annotations

import html
import http.client
import re
import subprocess
import sys
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

pytestmark = pytest.mark.e2e

COOKIE = "__Host-vigil-console"

# Another process, another HTTP client: it has only the cookie it is handed.
PRESENT_COPY = """
import http.client, sys
host, port, cookie = sys.argv[1], int(sys.argv[2]), sys.argv[3]
connection = http.client.HTTPConnection(host, port, timeout=30)
connection.request("GET", "/console/requests?fragment=1", headers={"cookie": cookie})
print(connection.getresponse().status)
"""


class Client:
    """An HTTP client of its own, keeping its cookies by hand: no redirect is followed."""

    def __init__(self, base: str) -> None:
        split = urlsplit(base)
        self.host, self.port = split.hostname or "127.0.0.1", split.port or 80
        self.cookies: dict[str, str] = {}

    def send(self, method: str, path: str, form: dict[str, str] | None = None) -> Any:
        headers = {"cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["content-type"] = "application/x-www-form-urlencoded"
            headers["sec-fetch-site"] = "same-origin"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        for value in response.headers.get_all("set-cookie") or []:
            pair = value.split(";")[0]
            name, _, kept = pair.partition("=")
            if "Max-Age=0" in value:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = kept
        connection.close()
        return response.status, text

    def csrf(self, path: str) -> str:
        _, text = self.send("GET", path)
        found = re.search(r'name="csrf" value="([^"]*)"', text)
        assert found is not None
        return html.unescape(found.group(1))


def status_from_another_process(client: Client, cookie: str) -> int:
    ran = subprocess.run(
        [sys.executable, "-c", PRESENT_COPY, client.host, str(client.port), cookie],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(ran.stdout.strip())


def test_a_copied_cookie_is_refused_elsewhere_once_its_session_signed_out(
    state: dict[str, Any],
) -> None:
    client = Client(state["mcp_url"].removesuffix("/mcp"))
    csrf = client.csrf("/console/sign-in")
    status, _ = client.send(
        "POST", "/console/sign-in", {"csrf": csrf, "secret": state["operator_secret"]}
    )
    assert status == 303
    copy = f"{COOKIE}={client.cookies[COOKIE]}"
    assert status_from_another_process(client, copy) == 200

    status, _ = client.send("POST", "/console/sign-out", {"csrf": client.csrf("/console")})
    assert status == 303
    assert COOKIE not in client.cookies
    assert status_from_another_process(client, copy) == 401
