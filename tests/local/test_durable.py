"""The local runtime keeps its state: a clean restart and a ``kill -9`` go on from where it was.

Principals, switches, leases, sessions and runs live in DynamoDB Local's database on disk;
mailboxes, the timer queue and schedules in moto, saved once a second. A switch that came due
while the runtime was down fires when it starts again; the operator secret stays the same.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vigil.clock import ManualClock
from vigil.local.runtime import start

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_SECONDS = 30.0
RUN_ID = "0f5c2a4e-9b1d-4c3e-8a7f-6d2b1e0c9a84"


def call(rest_url: str, secret: str, tool: str, **arguments: Any) -> dict[str, Any]:
    parts = urlsplit(rest_url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request(
            "POST",
            f"{parts.path}/{tool}",
            json.dumps(arguments),
            {"Content-Type": "application/json", "Authorization": f"Bearer {secret}"},
        )
        response = connection.getresponse()
        answer: dict[str, Any] = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 200, (tool, response.status, answer)
    return answer


def eventually(check: Callable[[], tuple[bool, Any]]) -> Any:
    """Polls ``check`` (the pump and the runtime's threads work in real time)."""
    give_up = time.monotonic() + DEADLINE_SECONDS
    while True:
        done, seen = check()
        if done:
            return seen
        assert time.monotonic() < give_up, f"not done after {DEADLINE_SECONDS} s: {seen}"
        time.sleep(0.1)


def populate(rest_url: str, operator_secret: str) -> dict[str, Any]:
    """One of each kind of state, as an agent and its operator leave it."""
    registered = call(rest_url, operator_secret, "register", kind="agent", name="durable")
    agent_id, secret = registered["principal"]["id"], registered["secret"]
    lease = call(
        rest_url, secret, "acquire_lease", resource="repo:main", scope="nightly", ttl_seconds=86400
    )["lease"]
    armed = call(
        rest_url,
        secret,
        "heartbeat",
        scope="nightly",
        # Beyond the timer queue's 900 s: the Scheduler holds this alarm.
        expect_within_seconds=3600,
        on_expiry=["mark_failed", "release_leases"],
    )
    assert armed["state"] == "armed"
    call(
        rest_url, secret, "session_heartbeat", sessionId="s-1", status="active", idempotencyKey="b1"
    )
    call(rest_url, operator_secret, "post_instruction", sessionId="s-1", body="Slow down.")
    run = call(
        rest_url,
        secret,
        "start_run",
        run_id=RUN_ID,
        lease_duration_seconds=300,
        idempotency_key="r1",
    )
    call(
        rest_url,
        operator_secret,
        "send",
        target={"kind": "agent", "id": agent_id},
        body="kept for later",
        idempotency_key="m1",
    )
    return {"agent_id": agent_id, "secret": secret, "lease": lease, "run": run}


def check_kept(rest_url: str, operator_secret: str, before: dict[str, Any]) -> None:
    secret = before["secret"]
    assert call(rest_url, secret, "whoami")["principal"]["id"] == before["agent_id"]
    run = call(rest_url, secret, "get_run", run_id=RUN_ID)
    assert run["run"]["generation"] == before["run"]["run"]["generation"]
    sessions = call(rest_url, operator_secret, "list_sessions")["sessions"]
    assert "s-1" in [s["sessionId"] for s in sessions]
    beat = call(
        rest_url, secret, "session_heartbeat", sessionId="s-1", idempotencyKey=f"b{time.time_ns()}"
    )
    assert [i["body"] for i in beat["instructions"]] == ["Slow down."]

    def delivered() -> tuple[bool, Any]:
        batch = call(rest_url, secret, "receive", max_messages=10)["deliveries"]
        return bool(batch), batch

    (message,) = eventually(delivered)
    assert message["payload"]["body"] == "kept for later"


def test_a_clean_restart_keeps_everything_and_fires_what_came_due(tmp_path: Path) -> None:
    clock = ManualClock()
    with start(port=0, state_dir=tmp_path, clock=clock) as first:
        operator_secret = first.operator_secret
        before = populate(first.rest_url, operator_secret)
        packet = call(first.rest_url, before["secret"], "resume_packet", scope="nightly")
        assert packet["state"] == "armed"

    # Down for two hours: the one-hour window ended while nothing ran.
    clock.advance(7200)
    with start(port=0, state_dir=tmp_path, clock=clock) as second:
        assert second.operator_secret == operator_secret
        assert second.operator_id == first.operator_id
        check_kept(second.rest_url, operator_secret, before)

        def fired() -> tuple[bool, Any]:
            packet = call(second.rest_url, before["secret"], "resume_packet", scope="nightly")
            death = packet["death"]
            done = death is not None and death["completed"] == ["release_leases", "mark_failed"]
            return done, packet

        packet = eventually(fired)
        assert packet["state"] == "failed"
        assert packet["death"]["released"] == [
            {"resource": "repo:main", "generation": before["lease"]["generation"]}
        ]


def _vigil_local(state_dir: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "vigil", "local", "--port", "0", "--state-dir", str(state_dir)],
        cwd=ROOT,
        env={**os.environ, "VIGIL_LOG_LEVEL": "WARNING"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Press Ctrl+C"):
            return process, json.loads((state_dir / "local.json").read_text())
    raise AssertionError(f"the runtime exited with {process.wait()}")


def _saved(state_dir: Path) -> bytes:
    path = state_dir / "aws" / "sqs.pickle"
    return path.read_bytes() if path.exists() else b""


def test_kill_9_loses_at_most_the_last_second(tmp_path: Path) -> None:
    process, state = _vigil_local(tmp_path)
    try:
        before = populate(state["rest_url"], state["operator_secret"])
        # Within a second the send is on disk (and everything before it).
        eventually(lambda: (b"kept for later" in _saved(tmp_path), "not saved yet"))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    process, again = _vigil_local(tmp_path)
    try:
        assert again["operator_secret"] == state["operator_secret"]
        check_kept(again["rest_url"], again["operator_secret"], before)
        packet = call(again["rest_url"], before["secret"], "resume_packet", scope="nightly")
        assert packet["state"] == "armed"
        assert [lease["resource"] for lease in packet["held_leases"]] == ["repo:main"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
