"""The people's ``vigil`` commands end to end: the real command, in its own process, against
the local runtime, while agents act through the REST mirror. A person sees an agent's switch,
steers its session, decides its approvals and answers its question; every failure has its
exit code and no traceback; profiles are private files; and no secret appears in any output.

Deaths and watch frames come in real time: the test polls them with a deadline, never
sleeps blind.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import interruptible

pytestmark = pytest.mark.e2e

SRC = Path(__file__).resolve().parents[2] / "src"
DEPLOY = {"op": "deploy", "service": "checkout", "version": "1.2.3"}
DEADLINE_SECONDS = 20.0
POLL_SECONDS = 0.25


def rest(base: str, secret: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """What an agent gets from the REST mirror: the result, or ``{"error": ...}``."""
    request = urllib.request.Request(
        f"{base}/v1/{tool}",
        data=json.dumps(arguments).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {secret}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            result: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as refused:
        result = json.loads(refused.read())
    return result


class Cli:
    """Runs ``vigil`` as a person would, in an empty directory with its own profiles file,
    and keeps everything it printed to check that no secret was ever in it."""

    def __init__(self, state: dict[str, Any], home: Path) -> None:
        self.base = state["rest_url"].removesuffix("/v1")
        self.mcp_url = state["mcp_url"]
        self.home = home
        self.config = home / "config" / "profiles.toml"
        self.secrets = [state["operator_secret"]]
        self.printed: list[str] = []
        self.env = {
            name: value
            for name, value in os.environ.items()
            if name not in ("VIGIL_ENDPOINT", "VIGIL_SECRET", "XDG_CONFIG_HOME")
        } | {"VIGIL_CONFIG": str(self.config), "PYTHONPATH": str(SRC), "COLUMNS": "200"}

    def register(self, kind: str, name: str) -> tuple[str, str]:
        registered = rest(self.base, self.secrets[0], "register", kind=kind, name=name)
        self.secrets.append(registered["secret"])
        return registered["principal"]["id"], registered["secret"]

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "vigil", *args]

    def as_(self, secret: str, endpoint: str | None = None) -> dict[str, str]:
        """The environment of a person with ``secret``; the endpoint as ``vigil mcp`` takes
        it, the MCP URL, unless another is given."""
        return {"VIGIL_ENDPOINT": endpoint or self.mcp_url, "VIGIL_SECRET": secret}

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.command(*args),
            env=self.env | (env or {}),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=cwd or self.home,
            check=False,
        )
        self.printed += [done.stdout, done.stderr]
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def json(self, *args: str, env: dict[str, str]) -> dict[str, Any]:
        done = self.run(*args, "--json", env=env)
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def popen(self, *args: str, env: dict[str, str], **streams: Any) -> subprocess.Popen[bytes]:
        """``vigil`` left running, as from a terminal; its output is piped unless ``streams``
        say otherwise."""
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} | streams
        return subprocess.Popen(
            self.command(*args),
            env=self.env | env,
            cwd=self.home,
            # Runs in the child before exec: one sigaction, no lock the runtime threads hold.
            preexec_fn=interruptible,
            **pipes,
        )

    def interrupt(self, process: subprocess.Popen[bytes], read: bytes) -> int:
        """Ctrl+C for ``process``; its exit code, once what it printed is kept."""
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
        self.printed += [(read + out).decode(), err.decode()]
        assert b"Traceback" not in err, err
        return process.returncode


@pytest.fixture
def cli(state: dict[str, Any], tmp_path: Path) -> Iterator[Cli]:
    cli = Cli(state, tmp_path)
    yield cli
    for secret in cli.secrets:
        for printed in cli.printed:
            assert secret not in printed, "a secret was printed"


def _read_until(fd: int, wanted: bytes, deadline: float) -> bytes:
    """What ``fd`` gives until ``wanted`` is in it (a terminal's or a pipe's output)."""
    seen = b""
    while wanted not in seen:
        if time.monotonic() > deadline:
            pytest.fail(f"never saw {wanted!r} in {seen.decode(errors='replace')}")
        ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closed: the process is gone
                chunk = b""
            if not chunk:
                pytest.fail(f"output ended before {wanted!r}: {seen.decode(errors='replace')}")
            seen += chunk
    return seen


def _drain(fd: int) -> bytes:
    rest = b""
    while select.select([fd], [], [], POLL_SECONDS)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        rest += chunk
    return rest


# -- watching and steering ------------------------------------------------------------------
def test_a_person_sees_an_agents_switch_and_steers_its_session(cli: Cli) -> None:
    person_id, person = cli.register("person", "cli-watcher")
    agent_id, agent = cli.register("agent", "cli-worker")
    scope = f"cli-job-{uuid.uuid4().hex[:8]}"
    beat = rest(
        cli.base, agent, "heartbeat", scope=scope, expect_within_seconds=600, agent_id="w-9"
    )
    assert beat["state"] == "armed"
    me = cli.as_(person)

    shown = cli.run("switches", "--scope-prefix", scope, env=me)
    assert shown.returncode == 0, shown.stderr
    assert scope in shown.stdout
    assert "cli-worker (w-9)" in shown.stdout  # held by its agent's name, with its label
    assert agent_id not in shown.stdout
    assert "armed" in shown.stdout
    assert "in 9m" in shown.stdout  # its deadline, relative: in 9m 59s or so
    page = cli.json("switches", "--scope-prefix", scope, env=me)
    assert [(s["scope"], s["state"], s["holder"]) for s in page["switches"]] == [
        (scope, "armed", agent_id)
    ]
    every = cli.json("switches", "--all", "--state", "armed", env=me)
    assert scope in [s["scope"] for s in every["switches"]]
    assert every["next_cursor"] is None
    overview = cli.json("status", env=me)
    assert scope in [s["scope"] for s in overview["switches"]]

    session_id = f"cli-session-{uuid.uuid4().hex[:8]}"
    first = rest(cli.base, agent, "session_heartbeat", sessionId=session_id, idempotencyKey="b1")
    assert first["instructions"] == []
    posted = cli.run("post", session_id, "Pause before deploying.", env=me)
    assert posted.returncode == 0, posted.stderr
    assert f"to session {session_id}: pending" in posted.stdout
    handed = rest(cli.base, agent, "session_heartbeat", sessionId=session_id, idempotencyKey="b2")
    (instruction,) = handed["instructions"]
    assert instruction["body"] == "Pause before deploying."
    assert instruction["postedBy"] == person_id
    listed = cli.json("sessions", "--all", env=me)
    assert session_id in [s["sessionId"] for s in listed["sessions"]]


def test_a_death_shows_in_deaths_and_as_fired(cli: Cli) -> None:
    _, person = cli.register("person", "cli-mourner")
    _, agent = cli.register("agent", "cli-mortal")
    scope = f"cli-dies-{uuid.uuid4().hex[:8]}"
    rest(cli.base, agent, "heartbeat", scope=scope, expect_within_seconds=2)
    me = cli.as_(person)
    give_up = time.monotonic() + DEADLINE_SECONDS
    while scope not in [d["scope"] for d in cli.json("deaths", "--all", env=me)["deaths"]]:
        if time.monotonic() > give_up:
            pytest.fail("the switch's death never showed in vigil deaths")
        time.sleep(POLL_SECONDS)
    deaths = cli.run("deaths", "--limit", "50", env=me)
    assert scope in deaths.stdout
    assert "mark_failed" in deaths.stdout
    fired = cli.run("switches", "--scope-prefix", scope, env=me)
    assert "failed" in fired.stdout
    assert "missed" in fired.stdout


def test_watch_redraws_until_interrupted(cli: Cli) -> None:
    _, person = cli.register("person", "cli-night-watch")
    _, agent = cli.register("agent", "cli-watched")
    scope = f"cli-watched-{uuid.uuid4().hex[:8]}"
    rest(cli.base, agent, "heartbeat", scope=scope, expect_within_seconds=600)
    me = cli.as_(person)

    as_json = cli.popen("watch", "--json", "--interval", "0.2", env=me)
    deadline = time.monotonic() + DEADLINE_SECONDS
    lines = _read_until(as_json.stdout.fileno(), b"\n", deadline)
    lines += _read_until(as_json.stdout.fileno(), b"\n", deadline)  # a second frame
    assert cli.interrupt(as_json, lines) == 0
    frames = [json.loads(line) for line in lines.split(b"\n")[:-1]]  # the complete lines
    assert len(frames) >= 2
    assert scope in [s["scope"] for s in frames[0]["switches"]]

    drawn = cli.popen("watch", "--interval", "0.2", env=me)
    screens = _read_until(drawn.stdout.fileno(), b"Waiting for you", deadline)
    screens += _read_until(drawn.stdout.fileno(), b"Waiting for you", deadline)
    assert cli.interrupt(drawn, screens) == 0
    assert screens.count(b"Switches:") >= 2
    assert scope.encode() not in screens  # armed and well: counted, not listed


def test_watch_stops_on_ctrl_c_when_the_suite_ignores_it(cli: Cli) -> None:
    """As when the suite is a background job of a non-interactive shell (``make test &``):
    SIGINT ignored there, and every child inheriting that."""
    _, person = cli.register("person", "cli-background-watch")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        watching = cli.popen("watch", "--json", "--interval", "0.2", env=cli.as_(person))
    finally:
        signal.signal(signal.SIGINT, previous)
    frame = _read_until(watching.stdout.fileno(), b"\n", time.monotonic() + DEADLINE_SECONDS)
    assert cli.interrupt(watching, frame) == 0


# -- deciding -------------------------------------------------------------------------------
def test_a_person_approves_one_request_and_denies_another(cli: Cli) -> None:
    person_id, person = cli.register("person", "cli-approver")
    _, agent = cli.register("agent", "cli-asker")
    me = cli.as_(person)

    def ask(body: str) -> dict[str, Any]:
        return rest(
            cli.base,
            agent,
            "ask",
            target={"kind": "person", "id": person_id},
            body=body,
            kind="approval",
            action=DEPLOY,
        )

    first, second = ask("May I deploy checkout 1.2.3?"), ask("And again?")
    listed = cli.run("requests", env=me)
    assert listed.returncode == 0, listed.stderr
    assert first["id"] in listed.stdout
    assert second["id"] in listed.stdout
    assert "May I deploy checkout 1.2.3?" in listed.stdout
    overview = cli.json("status", env=me)
    assert {first["id"], second["id"]} <= {r["id"] for r in overview["waiting_requests"]}
    shown = cli.run("status", env=me)
    assert first["id"] in shown.stdout

    unasked = cli.run("approve", first["id"], env=me)  # no terminal to ask on, no --yes
    assert unasked.returncode == 2
    assert "--yes" in unasked.stderr
    assert rest(cli.base, agent, "get_request", id=first["id"])["state"] == "open"

    approved = cli.run("approve", first["id"], "--yes", env=me)
    assert approved.returncode == 0, approved.stderr
    assert f"{first['id']} approved." in approved.stdout
    intent = rest(cli.base, agent, "redeem_approval", id=first["id"], action=DEPLOY)
    assert intent["state"] == "intended"
    assert intent["action"] == DEPLOY

    denied = cli.json("deny", second["id"], "--note", "not today", env=me)
    assert denied["state"] == "denied"
    assert denied["response"]["answer"] == "not today"
    refused = rest(cli.base, agent, "redeem_approval", id=second["id"], action=DEPLOY)
    assert refused["error"]["code"] == "version_conflict"

    again = cli.run("approve", second["id"], "--yes", env=me)
    assert again.returncode == 1
    assert again.stderr.startswith("error: version_conflict: ")


def test_a_voter_is_told_where_the_votes_stand_and_cannot_vote_twice(cli: Cli) -> None:
    first_id, first = cli.register("person", "cli-voter-1")
    second_id, second = cli.register("person", "cli-voter-2")
    watcher_id, watcher = cli.register("person", "cli-watcher")
    _, agent = cli.register("agent", "cli-quorum-asker")
    asked = rest(
        cli.base,
        agent,
        "ask",
        target={"kind": "person", "id": first_id},
        body="May I deploy checkout?",
        kind="approval",
        action=DEPLOY,
    )
    # Asked in a chat of both people, it is decided by two approvals.
    targets = [{"kind": "person", "id": first_id}, {"kind": "person", "id": second_id}]
    chat = rest(cli.base, agent, "start_chat", targets=targets, body="Rollouts.")
    quorum = rest(
        cli.base,
        agent,
        "ask",
        conversation_id=chat["conversation_id"],
        body="May I deploy to both regions?",
        kind="approval",
        action=DEPLOY,
        policy={"quorum": 2},
    )
    assert "error" not in asked, asked
    assert "error" not in quorum, quorum
    request_id = quorum["id"]

    voted = cli.run("approve", request_id, "--yes", env=cli.as_(first))
    assert voted.returncode == 0, voted.stderr
    assert voted.stdout.strip() == f"{request_id} open: you voted approve; 1 of 2 approvals."
    # It waits no longer for the first voter, and says so in the listing.
    waiting = {r["id"] for r in cli.json("status", env=cli.as_(first))["waiting_requests"]}
    assert request_id not in waiting
    assert request_id in {
        r["id"] for r in cli.json("status", env=cli.as_(second))["waiting_requests"]
    }
    listed = cli.run("requests", env=cli.as_(first))
    assert "you voted approve" in listed.stdout
    again = cli.run("approve", request_id, "--yes", env=cli.as_(first))
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"error: you voted approve on {request_id} already: 1 of 2 approvals so far, "
        "and a vote is not changed"
    )
    # A person outside the audience sees it among everyone's, and decides nothing.
    own = cli.run("requests", env=cli.as_(watcher))
    assert request_id not in own.stdout
    everyone = cli.run("requests", "--everyone", env=cli.as_(watcher))
    assert request_id in everyone.stdout
    assert asked["id"] in everyone.stdout
    refused = cli.run("approve", request_id, "--yes", env=cli.as_(watcher))
    assert (refused.returncode, refused.stderr.split(":")[:2]) == (4, ["error", " forbidden"])
    decided = cli.run("approve", request_id, "--yes", env=cli.as_(second))
    assert decided.stdout.strip() == f"{request_id} approved."
    assert watcher_id not in rest(cli.base, agent, "get_request", id=request_id)["audience"]


def _approve_on_terminal(cli: Cli, person: str, reply: str, *arguments: str) -> tuple[int, str]:
    """``vigil approve`` with ``arguments`` as ``person`` on a terminal, answered ``reply``
    when it asks: its exit code and all it printed."""
    controller, terminal = pty.openpty()
    process = cli.popen(
        "approve",
        *arguments,
        env=cli.as_(person),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    try:
        seen = _read_until(controller, b"[y/N]", time.monotonic() + DEADLINE_SECONDS)
        os.write(controller, reply.encode() + b"\n")
        code = process.wait(timeout=30)
        seen += _drain(controller)
    finally:
        os.close(controller)
    cli.printed.append(seen.decode())
    return code, seen.decode()


def test_approve_on_a_terminal_shows_the_exact_action_and_asks_first(cli: Cli) -> None:
    person_id, person = cli.register("person", "cli-careful")
    _, agent = cli.register("agent", "cli-eager")
    asked = rest(
        cli.base,
        agent,
        "ask",
        target={"kind": "person", "id": person_id},
        body="Deploy?",
        kind="approval",
        action=DEPLOY,
    )

    def on_terminal(reply: str) -> tuple[int, str]:
        return _approve_on_terminal(cli, person, reply, asked["id"])

    code, shown = on_terminal("n")
    assert code == 1
    assert '"version": "1.2.3"' in shown  # the bound action, as JSON, before anything is done
    assert "Not approved: nothing was sent." in shown
    assert rest(cli.base, agent, "get_request", id=asked["id"])["state"] == "open"

    code, shown = on_terminal("y")
    assert code == 0
    assert f"{asked['id']} approved." in shown
    assert rest(cli.base, agent, "get_request", id=asked["id"])["state"] == "approved"


def test_approve_with_an_edit_shows_the_edited_action_and_the_agent_redeems_that(
    cli: Cli,
) -> None:
    person_id, person = cli.register("person", "cli-editor")
    _, agent = cli.register("agent", "cli-deployer")
    asked = rest(
        cli.base,
        agent,
        "ask",
        target={"kind": "person", "id": person_id},
        body="Deploy?",
        kind="approval",
        action=DEPLOY,
        editable=["version"],
    )
    code, shown = _approve_on_terminal(cli, person, "y", asked["id"], "--edit", "version=1.2.2")
    assert code == 0, shown
    # The edit, in words, and the whole action approved, before anything is sent.
    assert 'version: "1.2.3" → "1.2.2"' in shown
    assert shown.index('"version": "1.2.2"') < shown.index("[y/N]")
    assert f"{asked['id']} approved." in shown
    edited = {**DEPLOY, "version": "1.2.2"}
    refused = rest(cli.base, agent, "redeem_approval", id=asked["id"], action=DEPLOY)
    assert refused["error"]["code"] == "invalid_argument"
    assert (
        rest(cli.base, agent, "redeem_approval", id=asked["id"], action=edited)["action"] == edited
    )
    # Its history says who changed what, from what, and through which surface.
    change = rest(cli.base, agent, "get_request", id=asked["id"])["history"][-1]
    assert (change["by"], change["via"]) == (person_id, "cli")
    assert (change["edits"], change["edited_from"]) == ({"version": "1.2.2"}, {"version": "1.2.3"})


def test_a_person_answers_a_question_and_writes_to_an_agent(cli: Cli) -> None:
    person_id, person = cli.register("person", "cli-answerer")
    agent_id, agent = cli.register("agent", "cli-questioner")
    me = cli.as_(person)
    asked = rest(
        cli.base,
        agent,
        "ask",
        target={"kind": "person", "id": person_id},
        body="Which region?",
        choices=["eu-west-1", "us-east-1"],
    )
    wrong = cli.run("answer", asked["id"], "mars-1", env=me)
    assert wrong.returncode == 1
    assert wrong.stderr.startswith("error: invalid_argument: ")
    assert '(the choices: "eu-west-1", "us-east-1")' in wrong.stderr
    answered = cli.run("answer", asked["id"], "eu-west-1", env=me)
    assert answered.returncode == 0, answered.stderr
    read = rest(cli.base, agent, "get_request", id=asked["id"])
    assert (read["state"], read["response"]["answer"]) == ("answered", "eu-west-1")

    sent = cli.json("send", agent_id, "Hello from the CLI", env=me)
    again = cli.json("send", agent_id, "And again", env=me)
    assert again["conversation_id"] == sent["conversation_id"]  # one direct conversation
    bodies = []
    while batch := rest(cli.base, agent, "receive", max_messages=10)["deliveries"]:
        for delivery in batch:
            rest(
                cli.base, agent, "acknowledge", id=delivery["id"], generation=delivery["generation"]
            )
            if delivery["kind"] == "message":
                bodies.append(delivery["payload"]["body"])
    assert bodies == ["Hello from the CLI", "And again"]
    nobody = cli.run("send", "someone", "hi", env=me)
    assert nobody.returncode == 2


# -- failures -------------------------------------------------------------------------------
def test_each_failure_has_its_exit_code_and_no_traceback(cli: Cli, foreign_secret: str) -> None:
    person_id, person = cli.register("person", "cli-failing")
    _, agent = cli.register("agent", "cli-failing-agent")
    cli.secrets.append(foreign_secret)
    asked = rest(
        cli.base,
        agent,
        "ask",
        target={"kind": "person", "id": person_id},
        body="?",
        kind="approval",
    )

    wrong = cli.run("switches", env=cli.as_(person[:-4] + "AAAA"))
    assert (wrong.returncode, wrong.stderr) == (
        4,
        "error: unauthenticated: a valid credential is required\n",
    )
    forbidden = cli.run("post", "some-session", "do it", env=cli.as_(agent))
    assert forbidden.returncode == 4
    assert forbidden.stderr.startswith("error: forbidden: ")

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    unreachable = cli.run("status", env=cli.as_(person, endpoint=closed))
    assert unreachable.returncode == 3
    assert unreachable.stderr.startswith(f"error: cannot reach {closed}: ")
    nowhere = cli.run("status")  # no profile, no environment, no local runtime here
    assert (nowhere.returncode, nowhere.stderr.startswith("error: nowhere to call")) == (3, True)
    no_profile = cli.run("status", "--profile", "missing")
    assert no_profile.returncode == 3

    # Another namespace's operator cannot see the request at all.
    foreign = cli.run("approve", asked["id"], "--yes", env=cli.as_(foreign_secret))
    assert foreign.returncode == 1
    assert foreign.stderr.startswith("error: not_found: ")
    empty = cli.run("post", "some-session", "", env=cli.as_(person))
    assert empty.returncode == 1
    assert empty.stderr.startswith("error: invalid_argument: ")
    usage = cli.run("switches", "--state", "sleeping", env=cli.as_(person))
    assert usage.returncode == 2


# -- where the commands call ----------------------------------------------------------------
def test_a_profile_is_a_private_file_and_a_readable_one_is_refused(cli: Cli) -> None:
    _, person = cli.register("person", "cli-profiled")
    added = cli.run("profile", "add", "work", "--endpoint", cli.mcp_url, stdin=person + "\n")
    assert added.returncode == 0, added.stderr
    assert stat.S_IMODE(cli.config.stat().st_mode) == 0o600
    listed = cli.run("profile", "list")
    assert "work" in listed.stdout
    assert cli.base in listed.stdout
    assert cli.json("profile", "list", env={}) == {
        "profiles": [{"name": "work", "endpoint": cli.base}]
    }
    used = cli.run("switches", "--profile", "work")
    assert used.returncode == 0, used.stderr

    cli.config.chmod(0o644)
    refused = cli.run("switches", "--profile", "work")
    assert refused.returncode == 3
    assert f"chmod 600 {cli.config}" in refused.stderr
    assert cli.run("profile", "list").returncode == 3

    no_secret = cli.run("profile", "add", "home", "--endpoint", cli.mcp_url, stdin="")
    assert no_secret.returncode == 2


def test_xdg_config_home_holds_the_profiles(cli: Cli) -> None:
    _, person = cli.register("person", "cli-xdg")
    env = {name: value for name, value in cli.env.items() if name != "VIGIL_CONFIG"}
    env["XDG_CONFIG_HOME"] = str(cli.home / "xdg")
    cli.env = env
    added = cli.run("profile", "add", "local", "--endpoint", cli.base, stdin=person + "\n")
    assert added.returncode == 0, added.stderr
    written = cli.home / "xdg" / "vigil" / "profiles.toml"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert cli.run("sessions", "--profile", "local").returncode == 0


def test_without_a_profile_or_environment_the_local_runtime_is_used(cli: Cli, runtime: Any) -> None:
    project = cli.home / "project"
    project.mkdir()
    (project / ".vigil").symlink_to(Path(runtime.state_dir), target_is_directory=True)
    done = cli.run("status", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == {
        "switches",
        "stale_sessions",
        "waiting_requests",
        "pauses",
    }


def test_a_runtime_started_with_a_state_dir_is_found_with_the_same_option(
    cli: Cli, runtime: Any
) -> None:
    elsewhere = cli.home / "elsewhere"
    elsewhere.mkdir()
    missed = cli.run("status", "--json", cwd=elsewhere)
    assert missed.returncode == 3  # nothing here names a runtime
    done = cli.run("status", "--json", "--state-dir", str(runtime.state_dir), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "switches" in json.loads(done.stdout)


def test_a_person_acknowledges_an_alert_by_the_id_its_notification_carried(cli: Cli) -> None:
    from vigil.kit.events import event_id

    person_id, person = cli.register("person", "cli-acknowledger")
    _, agent = cli.register("agent", "cli-alerter")
    namespace = rest(cli.base, person, "whoami")["principal"]["namespace"]
    # Its receiver is nowhere: what matters is that the alert is written.
    rest(
        cli.base,
        cli.secrets[0],
        "create_channel",
        name=f"ack-{uuid.uuid4().hex[:6]}",
        kind="webhook",
        url="http://127.0.0.1:9/nowhere",
        rules=[{"events": ["request.opened"], "repeat_every_minutes": 5}],
    )
    asked = rest(cli.base, agent, "ask", target={"kind": "person", "id": person_id}, body="Deploy?")
    alert = event_id(namespace, "request.opened", asked["id"])
    acked = cli.run("ack", alert, env=cli.as_(person))
    assert acked.returncode == 0, acked.stderr
    assert acked.stdout.strip() == f"{alert} acknowledged by cli-acknowledger ({person_id})."
    unknown = cli.run("ack", "evt_" + "a" * 26, env=cli.as_(person))
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: not_found: ")


def test_an_operator_adds_an_agent_and_a_person_and_reads_the_audit_trail(
    cli: Cli, state: dict[str, Any]
) -> None:
    operator = cli.as_(state["operator_secret"])
    added = cli.run("add", "agent", "cli-added-worker", env=operator)
    assert added.returncode == 0, added.stderr
    (secret,) = re.findall(r"vgl\.[\w.-]+", added.stdout.split("\n\n")[1])
    config = json.loads(added.stdout[added.stdout.index("{") : added.stdout.rindex("}") + 1])
    server = config["mcpServers"]["vigil"]
    assert server["url"] == cli.mcp_url
    assert server["headers"] == {"Authorization": f"Bearer {secret}"}
    assert f"claude mcp add --transport http vigil {cli.mcp_url}" in added.stdout
    me = rest(cli.base, secret, "whoami")["principal"]
    assert (me["name"], me["kind"]) == ("cli-added-worker", "agent")

    person = cli.run("add", "person", "Dana Lead", "--operator", env=operator)
    assert person.returncode == 0, person.stderr
    assert f"{cli.base}/console" in person.stdout
    (dana_secret,) = re.findall(r"vgl\.[\w.-]+", person.stdout)
    assert rest(cli.base, dana_secret, "whoami")["principal"]["role"] == "operator"

    trail = cli.run("audit", "--kind", "principal", env=operator)
    assert trail.returncode == 0, trail.stderr
    assert "cli-added-worker" in trail.stdout
    assert "Dana Lead" in trail.stdout
    assert secret not in trail.stdout
    mine = cli.json("audit", "--target", me["id"], env=operator)
    assert [(e["action"], e["target"]) for e in mine["events"]] == [("register", me["id"])]

    refused = cli.run("add", "agent", "not-mine-to-add", env=cli.as_(secret))
    assert refused.returncode == 4
    assert refused.stderr.startswith("error: forbidden: ")
    assert cli.run("audit", env=cli.as_(secret)).returncode == 4
