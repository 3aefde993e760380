"""The people's REST client against a stub HTTP server on loopback (retries with one
idempotency key, no redirect followed, every failure's exit code), and where the commands
call: profiles, environment and the local runtime's state, in that order."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from vigil.people.client import ATTEMPTS, Endpoint, Exit, Refused, RestClient, Unreachable
from vigil.people.client import rest_base as base_of
from vigil.people.profiles import (
    NoProfile,
    config_path,
    load_profiles,
    resolve,
    save_profile,
)

SECRET = "vgl.acme.per_aaaaaaaaaaaaaaaa.secret-that-must-not-leak"
Answer = tuple[int, dict[str, str], bytes]


class Stub:
    """An HTTP server that answers each POST with the next scripted answer and keeps what
    it was sent."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.received: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                stub.received.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": json.loads(self.rfile.read(length) or b"null"),
                    }
                )
                status, headers, body = stub.answers.pop(0)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, status: int, body: Any = None, **headers: str) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, headers, b"" if body is None else raw))


@pytest.fixture
def stub() -> Iterator[Stub]:
    stub = Stub()
    thread = threading.Thread(target=stub.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield stub
    stub.server.shutdown()
    stub.server.server_close()


def client_of(url: str, waits: list[float]) -> RestClient:
    return RestClient(Endpoint(url, SECRET, "test"), sleep=waits.append, jitter=lambda: 0.5)


def typed(code: str, retryable: bool = False) -> dict[str, Any]:
    return {"error": {"code": code, "message": f"it is {code}", "retryable": retryable}}


def test_a_call_posts_the_arguments_with_the_secret_as_a_bearer_token(stub: Stub) -> None:
    stub.answer(200, {"ok": True})
    assert client_of(stub.url, []).call("whoami", {"a": 1}) == {"ok": True}
    (sent,) = stub.received
    assert sent == {
        "method": "POST",
        "path": "/v1/whoami",
        "authorization": f"Bearer {SECRET}",
        "body": {"a": 1},
    }


def test_a_throttled_call_is_retried_with_the_same_idempotency_key(stub: Stub) -> None:
    stub.answer(429, b"<html>slow down</html>")  # a gateway's answer, not Vigil's
    stub.answer(503, typed("unavailable", retryable=True))
    stub.answer(200, {"id": "ins_1"})
    waits: list[float] = []
    arguments = {"sessionId": "s", "body": "b", "idempotencyKey": "cli-1"}
    assert client_of(stub.url, waits).call("post_instruction", arguments) == {"id": "ins_1"}
    assert [sent["body"] for sent in stub.received] == [arguments] * 3
    assert waits == [0.5, 1.0]  # exponential, times the jitter's 0.5 + 0.5


def test_retries_end_with_the_last_refusal(stub: Stub) -> None:
    for _ in range(ATTEMPTS):
        stub.answer(503, typed("unavailable", retryable=True))
    with pytest.raises(Refused) as refused:
        client_of(stub.url, []).call("whoami")
    assert refused.value.exit_code == Exit.REFUSED
    assert refused.value.message == "unavailable: it is unavailable"
    assert len(stub.received) == ATTEMPTS


@pytest.mark.parametrize(
    ("status", "code", "exit_code"),
    [
        (400, "invalid_argument", Exit.REFUSED),
        (409, "version_conflict", Exit.REFUSED),
        (401, "unauthenticated", Exit.UNAUTHORIZED),
        (403, "forbidden", Exit.UNAUTHORIZED),
    ],
)
def test_a_typed_refusal_is_not_retried_and_gives_its_exit_code(
    stub: Stub, status: int, code: str, exit_code: Exit
) -> None:
    stub.answer(status, typed(code))
    with pytest.raises(Refused) as refused:
        client_of(stub.url, []).call("reply")
    assert (refused.value.code, refused.value.exit_code) == (code, exit_code)
    assert len(stub.received) == 1


def test_a_redirect_is_not_followed_so_the_secret_stays_where_it_was_sent(stub: Stub) -> None:
    stub.answer(302, b"", Location=f"{stub.url}/elsewhere")
    with pytest.raises(Unreachable) as failed:
        client_of(stub.url, []).call("whoami")
    assert failed.value.exit_code == Exit.UNREACHABLE
    assert "redirect" in failed.value.message
    assert [sent["path"] for sent in stub.received] == ["/v1/whoami"]


def test_an_answer_that_is_not_vigils_is_unreachable(stub: Stub) -> None:
    stub.answer(502, b"<html>Bad gateway</html>")
    with pytest.raises(Unreachable) as failed:
        client_of(stub.url, []).call("whoami")
    assert failed.value.message == f"{stub.url} answered HTTP 502, not as Vigil's REST mirror does"


def test_a_closed_port_is_unreachable_and_the_message_holds_no_secret(stub: Stub) -> None:
    url = stub.url
    stub.server.shutdown()
    stub.server.server_close()
    with pytest.raises(Unreachable) as failed:
        client_of(url, []).call("whoami")
    assert failed.value.message.startswith(f"cannot reach {url}")
    assert SECRET not in failed.value.message
    assert SECRET not in repr(Endpoint(url, SECRET, "test"))


def test_pages_follow_next_cursor(stub: Stub) -> None:
    stub.answer(200, {"switches": [1], "next_cursor": "c1"})
    stub.answer(200, {"switches": [2], "next_cursor": None})
    pages = list(client_of(stub.url, []).pages("list_switches", {"state": "armed"}))
    assert [page["switches"] for page in pages] == [[1], [2]]
    assert [sent["body"] for sent in stub.received] == [
        {"state": "armed"},
        {"state": "armed", "cursor": "c1"},
    ]


def test_pages_follow_the_sessions_camel_case_next_cursor(stub: Stub) -> None:
    stub.answer(200, {"sessions": [1], "nextCursor": "c1"})
    stub.answer(200, {"sessions": [2], "nextCursor": None})
    pages = list(client_of(stub.url, []).pages("list_sessions", {"staleOnly": True}))
    assert [page["sessions"] for page in pages] == [[1], [2]]
    assert [sent["body"] for sent in stub.received] == [
        {"staleOnly": True},
        {"staleOnly": True, "cursor": "c1"},
    ]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8080/",
        "http://127.0.0.1:8080/mcp",
        "http://127.0.0.1:8080/v1",
        "http://127.0.0.1:8080/v1/",
    ],
)
def test_the_rest_base_of_each_url_people_have(url: str) -> None:
    assert base_of(url) == "http://127.0.0.1:8080"


# -- where the commands call ----------------------------------------------------------------
LOCAL = {"rest_url": "http://127.0.0.1:8080/v1", "operator_secret": "local-secret"}


def test_the_config_file_is_found_as_documented(tmp_path: Path) -> None:
    home = Path.home()
    assert config_path({}) == home / ".config" / "vigil" / "profiles.toml"
    assert config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/vigil/profiles.toml")
    given = {"XDG_CONFIG_HOME": "/x", "VIGIL_CONFIG": str(tmp_path / "p.toml")}
    assert config_path(given) == tmp_path / "p.toml"


@pytest.fixture
def profiles_file(tmp_path: Path) -> Iterator[Path]:
    old = os.umask(0o022)  # a permissive umask: the file must be private all the same
    try:
        yield tmp_path / "config" / "vigil" / "profiles.toml"
    finally:
        os.umask(old)


def test_a_saved_profile_is_private_from_the_start_and_keeps_the_others(
    profiles_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modes: list[int] = []
    real_open = os.open

    def watched_open(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        modes.append(mode)
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(os, "open", watched_open)
    odd = 'vgl."quoted"\\back\x7f'
    save_profile(profiles_file, "work", "https://vigil.example/v1", SECRET)
    save_profile(profiles_file, "odd", "http://127.0.0.1:8080/mcp", odd)
    assert modes == [0o600, 0o600]
    assert stat.S_IMODE(profiles_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(profiles_file.parent.stat().st_mode) == 0o700
    loaded = load_profiles(profiles_file)
    assert loaded["work"] == Endpoint("https://vigil.example", SECRET, "profile work")
    assert loaded["odd"] == Endpoint("http://127.0.0.1:8080", odd, "profile odd")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_a_profiles_file_others_can_reach_is_refused(profiles_file: Path, mode: int) -> None:
    save_profile(profiles_file, "work", "https://vigil.example", SECRET)
    profiles_file.chmod(mode)
    with pytest.raises(NoProfile) as refused:
        load_profiles(profiles_file)
    assert refused.value.exit_code == Exit.UNREACHABLE
    assert f"chmod 600 {profiles_file}" in refused.value.message
    assert SECRET not in refused.value.message


def test_a_named_profile_comes_first(profiles_file: Path) -> None:
    save_profile(profiles_file, "work", "https://vigil.example/mcp", SECRET)
    env = {"VIGIL_CONFIG": str(profiles_file), "VIGIL_ENDPOINT": "http://x", "VIGIL_SECRET": "s"}
    assert resolve("work", env, LOCAL) == Endpoint("https://vigil.example", SECRET, "profile work")
    with pytest.raises(NoProfile, match="no profile 'home'"):
        resolve("home", env, LOCAL)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (  # the environment, with the MCP URL as vigil mcp takes it
            {"VIGIL_ENDPOINT": "https://vigil.example/mcp", "VIGIL_SECRET": "s"},
            ("https://vigil.example", "s"),
        ),
        ({}, ("http://127.0.0.1:8080", "local-secret")),  # the local runtime
        (  # the local runtime named: its own operator's secret
            {"VIGIL_ENDPOINT": "http://127.0.0.1:8080/mcp"},
            ("http://127.0.0.1:8080", "local-secret"),
        ),
        ({"VIGIL_SECRET": "s"}, ("http://127.0.0.1:8080", "s")),
    ],
)
def test_without_a_profile_the_environment_then_the_local_runtime(
    env: dict[str, str], expected: tuple[str, str]
) -> None:
    endpoint = resolve(None, env, LOCAL)
    assert (endpoint.base, endpoint.secret) == expected


@pytest.mark.parametrize(
    ("env", "local", "says"),
    [
        # The local operator's secret is never sent anywhere else.
        ({"VIGIL_ENDPOINT": "https://vigil.example"}, LOCAL, "not VIGIL_SECRET"),
        ({"VIGIL_SECRET": "s"}, {}, "not VIGIL_ENDPOINT"),
        ({}, {}, "nowhere to call"),
        ({"VIGIL_ENDPOINT": "ftp://vigil.example", "VIGIL_SECRET": "s"}, {}, "not an http"),
    ],
)
def test_nothing_to_call_with_is_said(
    env: dict[str, str], local: dict[str, str], says: str
) -> None:
    with pytest.raises(NoProfile, match=says) as failed:
        resolve(None, env, local)
    assert failed.value.exit_code == Exit.UNREACHABLE


def test_the_clis_state_choices_are_the_tools_states() -> None:
    """The CLI's parser keeps its own copies (it loads no pydantic model, for a fast start):
    they must name exactly the states the tools take."""
    from typing import get_args

    from vigil.audit.records import TargetKind
    from vigil.people.commands import REQUEST_STATES, SWITCH_STATES, TARGET_KINDS
    from vigil.requests.records import RequestState
    from vigil.switches.records import PublicState

    assert set(REQUEST_STATES) == set(get_args(RequestState))
    assert set(SWITCH_STATES) == set(get_args(PublicState))
    assert set(TARGET_KINDS) == set(get_args(TargetKind))
