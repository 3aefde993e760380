"""``vigil local`` as a person runs it, in its own process: a second runtime on the same state
directory is refused, leaving the first and its files as they were.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vigil.clock import ManualClock
from vigil.local.lock import StateDirectoryInUse, hold

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
        """Stops the runtime; everything its terminal showed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
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
