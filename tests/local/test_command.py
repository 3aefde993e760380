"""``vigil local`` as a person runs it, in its own process and process group, stopped by Ctrl+C:
the banner is the first thing its terminal shows, a request adds no line there unless asked, a
browser that goes away leaves no traceback, errors still show; a load with the retries it
brings, then Ctrl+C, leave no error in its log; and a second runtime on the same state
directory is refused, leaving the first and its files as they were.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support import interruptible
from vigil.alarms.kinds import STALE
from vigil.alarms.timers import Timer
from vigil.clock import ManualClock, SystemClock, to_ms
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.local.lock import StateDirectoryInUse, hold
from vigil.local.logs import logs_to, terminal_handler
from vigil.local.runtime import goodbye
from vigil.local.signatures import AccessKey
from vigil.local.stack import AwsClients, LocalNames
from vigil.observability import get_logger, log_event
from vigil.stores.dynamo import DynamoStore

BANNER = "Vigil is running locally"
REQUESTS = 20
DEADLINE_SECONDS = 60.0


@dataclass
class Running:
    """A ``vigil local`` process; what a terminal would show of it (stdout and stderr, as
    they came) is kept in ``terminal``."""

    process: subprocess.Popen[bytes]
    state_dir: Path
    terminal: Path

    def shown(self) -> str:
        return self.terminal.read_text(encoding="utf-8")

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads((self.state_dir / "local.json").read_text())
        return state

    @property
    def base(self) -> str:
        return str(self.state()["mcp_url"]).removesuffix("/mcp")

    def stop(self) -> str:
        """Stops the runtime as Ctrl+C does, with SIGINT to every process of its group at once;
        everything its terminal showed."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
        assert self.process.wait(timeout=30) == 0
        return self.shown()


def vigil_local(state_dir: Path) -> list[str]:
    return [sys.executable, "-m", "vigil", "local", "--port", "0", "--state-dir", str(state_dir)]


def launch(state_dir: Path, *options: str) -> Running:
    terminal = state_dir.with_name(f"{state_dir.name}.terminal")
    with terminal.open("wb") as output:
        process = subprocess.Popen(
            [*vigil_local(state_dir), *options],
            cwd=state_dir.parent,
            env={**os.environ, "VIGIL_LOG_LEVEL": "INFO"},
            stdout=output,
            stderr=subprocess.STDOUT,
            # A job of its own, as a shell starts it, whose processes all take Ctrl+C.
            process_group=0,
            preexec_fn=interruptible,
        )
    running = Running(process, state_dir, terminal)
    deadline = time.monotonic() + DEADLINE_SECONDS
    while "Press Ctrl+C" not in running.shown():
        if process.poll() is not None:
            pytest.fail(f"the runtime exited with {process.returncode}: {running.shown()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the runtime did not start: {running.shown()}")
        time.sleep(0.1)
    return running


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Running]]:
    """The runtimes a test launches, killed if the test leaves one running."""
    runtimes: list[Running] = []
    yield runtimes
    for running in runtimes:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait()


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
        return int(response.status)


def hang_up_mid_request(base: str) -> None:
    """A browser closed while its page was loading: the request sent, then a reset."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(f"GET /openapi.json HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


# -- the terminal ---------------------------------------------------------------------------
def test_the_banner_comes_first_and_requests_add_no_lines(
    tmp_path: Path, started: list[Running]
) -> None:
    running = launch(tmp_path / "state")
    started.append(running)
    base = running.base
    for _ in range(REQUESTS):
        assert get(f"{base}/openapi.json") == 200
    for _ in range(5):
        hang_up_mid_request(base)
    assert get(f"{base}/openapi.json") == 200  # and it still serves

    shown = running.stop()
    lines = shown.splitlines()
    assert lines[0] == BANNER, shown
    assert f"{base}/mcp" in shown  # where to connect
    assert json_lines(shown) == [], shown
    assert "Traceback" not in shown
    assert "BrokenPipeError" not in shown
    assert "ConnectionResetError" not in shown
    assert lines[lines.index("Press Ctrl+C to stop.") + 1 :] == ["Vigil stopped."], shown

    # The JSON logs went to the state directory: each request, and what the banner would
    # have been buried under.
    logged = json_lines((running.state_dir / "local.log").read_text(encoding="utf-8"))
    requests = [entry for entry in logged if entry["logger"] == "vigil.local.access"]
    assert len(requests) >= REQUESTS + 1
    assert {entry["status"] for entry in requests} == {200}
    assert "not played locally" in [entry["message"] for entry in logged]


def test_the_access_log_shows_one_short_line_per_request(
    tmp_path: Path, started: list[Running]
) -> None:
    running = launch(tmp_path / "state", "--access-log")
    started.append(running)
    for _ in range(REQUESTS):
        assert get(f"{running.base}/openapi.json") == 200

    shown = running.stop()
    assert shown.splitlines()[0] == BANNER
    lines = [line for line in shown.splitlines() if "GET /openapi.json 200" in line]
    assert len(lines) == REQUESTS, shown
    assert all(len(line) < 80 for line in lines), lines
    assert json_lines(shown) == []


def test_log_json_shows_the_json_logs_on_the_terminal(
    tmp_path: Path, started: list[Running]
) -> None:
    running = launch(tmp_path / "state", "--log-json")
    started.append(running)
    for _ in range(REQUESTS):
        assert get(f"{running.base}/openapi.json") == 200

    shown = running.stop()
    requests = [e for e in json_lines(shown) if e["logger"] == "vigil.local.access"]
    assert len(requests) == REQUESTS, shown


def test_the_last_line_stands_on_its_own_after_a_terminals_ctrl_c() -> None:
    class Terminal(StringIO):
        def isatty(self) -> bool:
            return True

    assert goodbye([signal.SIGINT], Terminal()) == "\nVigil stopped."
    assert goodbye([signal.SIGTERM], Terminal()) == "Vigil stopped."
    assert goodbye([signal.SIGINT], StringIO()) == "Vigil stopped."


def test_errors_reach_the_terminal_and_requests_only_when_asked() -> None:
    log = get_logger("vigil.local.server")
    access = get_logger("vigil.local.access")
    for access_log, requests_shown in [(False, 0), (True, 1)]:
        terminal = StringIO()
        with logs_to(terminal_handler(access_log=access_log, stream=terminal), instead=True):
            log_event(access, "GET /console 200 (3 ms)", status=200)
            log_event(log, "routine", detail="nothing to see")
            try:
                raise RuntimeError("the function broke")
            except RuntimeError:
                log.exception("the function failed")
            log_event(log, "hand-out cut short", logging.WARNING, code="unavailable")
        shown = terminal.getvalue()
        assert shown.count("GET /console 200 (3 ms)") == requests_shown
        assert "routine" not in shown
        assert "error: the function failed" in shown
        assert "RuntimeError: the function broke" in shown  # the traceback, for whoever reads
        assert "warning: hand-out cut short code=unavailable" in shown
        assert json_lines(shown) == []


def test_a_request_cannot_write_control_characters_to_the_terminal() -> None:
    terminal = StringIO()
    with logs_to(terminal_handler(access_log=True, stream=terminal), instead=True):
        log_event(get_logger("vigil.local.access"), "GET /\x1b[2J\x1b]0;owned\x07 404 (1 ms)")
    shown = terminal.getvalue()
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "\\x1b[2J" in shown


# -- a load, then Ctrl+C --------------------------------------------------------------------
SESSION = "s-load"
BEATERS = 6
# The reason the watch of a session gives when it loses to the session's beats every time.
WATCH_LOST = "the session's watch lost to its beats"


class Client:
    """One caller of the REST mirror, on a connection of its own that it keeps."""

    def __init__(self, rest_url: str, secret: str) -> None:
        parts = urlsplit(rest_url)
        self.path = parts.path
        self.secret = secret
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)

    def call(self, tool: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
        self.connection.request(
            "POST",
            f"{self.path}/{tool}",
            json.dumps(arguments),
            {"Content-Type": "application/json", "Authorization": f"Bearer {self.secret}"},
        )
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())


def session_beat() -> dict[str, Any]:
    return {"sessionId": SESSION, "status": "active", "idempotencyKey": uuid.uuid4().hex}


def switch_beat() -> dict[str, Any]:
    return {"scope": "load", "expect_within_seconds": 3600}


def beat_until(
    stopped: threading.Event,
    client: Client,
    tool: str,
    arguments: Callable[[], dict[str, Any]],
    seen: list[int],
) -> None:
    while not stopped.is_set():
        try:
            status, _ = client.call(tool, **arguments())
        except (OSError, http.client.HTTPException):
            return  # the runtime has stopped
        seen.append(status)


def make_the_watch_due(store: DynamoStore, clients: AwsClients, namespace: str) -> None:
    """Moves the session's watch to now, as if its stale-after period had passed (committed as
    the watch commits its moves), and hands its timer to the notify function, where it races
    the session's beats."""
    due = to_ms(SystemClock().now())
    while True:
        session = store.get_session(namespace, SESSION)
        assert session is not None
        try:
            UnitOfWork(store).commit(store.save_beat(session.changed(watch_due=due), [], []))
            break
        except ConditionFailed:
            continue  # beaten meanwhile
    queue = clients.sqs.get_queue_url(QueueName=LocalNames().physical("WatchQueue"))["QueueUrl"]
    timer = Timer(kind=STALE, namespace=namespace, key=SESSION, due_at=due)
    clients.sqs.send_message(QueueUrl=queue, MessageBody=timer.model_dump_json())


def logged(state_dir: Path) -> list[dict[str, Any]]:
    """Every line of the runtime's log, the rolled-over file's first."""
    files = sorted(state_dir.glob("local.log*"), reverse=True)
    return [entry for path in files for entry in json_lines(path.read_text(encoding="utf-8"))]


def test_a_load_and_ctrl_c_leave_no_error_in_the_log(
    tmp_path: Path, started: list[Running]
) -> None:
    running = launch(tmp_path / "state")
    started.append(running)
    state = running.state()
    status, agent = Client(state["rest_url"], state["operator_secret"]).call(
        "register", kind="agent", name="load"
    )
    assert status == 200, agent
    secret = agent["secret"]
    assert Client(state["rest_url"], secret).call("session_heartbeat", **session_beat())[0] == 200
    keys = json.loads((running.state_dir / "keys.json").read_text())["runtime"]
    clients = AwsClients.local(
        state["aws_endpoint_url"],
        dynamodb_endpoint_url=state["dynamodb_endpoint_url"],
        key=AccessKey(keys["id"], keys["secret"]),
    )
    store = DynamoStore(clients.dynamodb, LocalNames().physical("VigilTable"))

    stopped = threading.Event()
    statuses: list[int] = []
    loads = [("session_heartbeat", session_beat)] * BEATERS + [("heartbeat", switch_beat)]
    beaters = [
        threading.Thread(
            target=beat_until,
            args=(stopped, Client(state["rest_url"], secret), tool, arguments, statuses),
        )
        for tool, arguments in loads
    ]
    for beater in beaters:
        beater.start()
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not any(WATCH_LOST in json.dumps(e) for e in logged(running.state_dir)):
            assert time.monotonic() < deadline, "the watch never lost to the beats"
            make_the_watch_due(store, clients, state["namespace"])
            time.sleep(0.2)
        shown = running.stop()  # while the beats go on
    finally:
        stopped.set()
        for beater in beaters:
            beater.join()

    assert 200 in statuses
    entries = logged(running.state_dir)
    retried = [e for e in entries if WATCH_LOST in json.dumps(e)]
    assert {e["level"] for e in retried} <= {"INFO", "WARNING"}, retried[0]
    assert [e for e in retried if "exception" in e] == []
    assert [e for e in entries if e["level"] in ("ERROR", "CRITICAL")] == []
    # Nothing found an engine gone: they stop after whatever calls them.
    assert [e for e in entries if "unavailable" in (e.get("outcome"), e.get("code"))] == []
    assert " error: " not in shown, shown
    assert "Traceback" not in shown, shown
    assert shown.splitlines()[-1] == "Vigil stopped.", shown


# -- one runtime per state directory --------------------------------------------------------
def test_a_second_runtime_on_the_same_state_directory_is_refused(
    tmp_path: Path, started: list[Running]
) -> None:
    state_dir = tmp_path / "state"
    first = launch(state_dir)
    started.append(first)
    state_file = state_dir / "local.json"
    saved = state_file.read_bytes(), state_file.stat().st_mtime_ns
    entries = sorted(path.name for path in state_dir.iterdir())

    second = subprocess.run(
        vigil_local(state_dir),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )

    assert second.returncode != 0
    assert "Traceback" not in second.stderr
    assert "in use by another vigil local" in second.stderr
    assert f"pid {first.process.pid}" in second.stderr
    assert first.base in second.stderr
    assert "started " in second.stderr
    assert second.stdout == ""  # no banner: it never ran
    assert (state_file.read_bytes(), state_file.stat().st_mtime_ns) == saved
    assert sorted(path.name for path in state_dir.iterdir()) == entries
    assert get(f"{first.base}/openapi.json") == 200
    assert "in use" not in first.stop()


def test_the_lock_is_held_until_released(tmp_path: Path) -> None:
    clock = ManualClock()
    held = hold(tmp_path, clock)
    held.serving("http://127.0.0.1:8080")
    with pytest.raises(StateDirectoryInUse) as refused:
        hold(tmp_path, clock)
    assert f"pid {os.getpid()}" in str(refused.value)
    assert "http://127.0.0.1:8080" in str(refused.value)
    assert clock.now().isoformat() in str(refused.value)
    held.release()
    hold(tmp_path, clock).release()


def test_a_taken_port_is_named_with_what_to_do(tmp_path: Path) -> None:
    """Another program holds the port: the one line says which port, and how to choose
    another, instead of "Address already in use"."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        command = vigil_local(tmp_path / "state")
        command[command.index("--port") + 1] = str(port)
        refused = subprocess.run(
            command,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
            check=False,
        )
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert f"port {port} on 127.0.0.1 is taken by another program" in refused.stderr
    assert f"--port {port + 1}" in refused.stderr
    assert f"make local PORT={port + 1}" in refused.stderr
