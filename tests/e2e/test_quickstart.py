"""The README's quickstart, walked as a newcomer walks it: its commands run in order, as
written, in a fresh directory that holds the checkout's ``.venv``, each shell block in a shell
that keeps what the one before exported.

What a person does by hand is done the way they would do it: ``make local`` is the command it
runs (``.venv/bin/vigil local``, on a free port that stands wherever the README says 8080);
the Python block is saved under the name the README gives it; the first approval is decided
in Chromium on the console, clicking what the README says to click; the second at a terminal,
with the request id the agent printed in place of ``req_…``, answering ``y``."""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.e2e.test_console_browser import chromium_path
from tests.e2e.test_people_cli import _read_until
from tests.support import interruptible

REPO = Path(__file__).resolve().parents[2]
SECONDS = 90
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def quickstart() -> list[tuple[str, str]]:
    """The Quickstart section's code blocks, in order: (language, code)."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("## Quickstart")
    end = readme.index("\n## ", start + 1)
    return BLOCK.findall(readme[start:end])


class Shell:
    """Runs a README block as a person's terminal would: in ``home``, with what the blocks
    before it exported, the README's port replaced by the runtime's."""

    def __init__(self, home: Path, port: int) -> None:
        self.home = home
        self.port = port
        self.session = home / ".session.sh"
        self.session.write_text("")
        keep = ("PATH", "HOME", "LANG", "TMPDIR")
        self.env = {name: os.environ[name] for name in keep if name in os.environ}

    def script(self, code: str) -> str:
        code = code.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")
        return f"set -euo pipefail\nsource {shlex.quote(str(self.session))}\n{code}\n"

    def run(self, code: str) -> subprocess.CompletedProcess[str]:
        saved = f"export -p > {shlex.quote(str(self.session))}\n"
        done = subprocess.run(
            ["bash", "-c", self.script(code) + saved],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=SECONDS,
            check=False,
        )
        assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
        return done

    def start(self, code: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", "-c", self.script(code)],
            cwd=self.home,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    return tmp_path


@pytest.fixture
def runtime(home: Path) -> Iterator[int]:
    """What ``make local`` runs, in ``home``, on any free port (``--port 0``: a port chosen
    here could be taken by another test before the runtime binds it): its banner read to the
    end before any step, and the port it names."""
    process = subprocess.Popen(
        [str(home / ".venv/bin/vigil"), "local", "--port", "0"],
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=interruptible,
    )
    assert process.stdout is not None
    try:
        banner = _read_until(
            process.stdout.fileno(), b"Press Ctrl+C to stop.", time.monotonic() + 300
        ).decode()
        found = re.search(r"MCP endpoint:\s+http://127\.0\.0\.1:(\d+)/mcp", banner)
        assert found is not None, banner
        yield int(found.group(1))
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


def waiting_for(agent: subprocess.Popen[str]) -> str:
    """The request id the agent says it waits on."""
    assert agent.stdout is not None
    line = agent.stdout.readline()
    found = re.search(r"Waiting for you to decide (req_\w+)", line)
    assert found is not None, line + agent.stdout.read()
    return found.group(1)


def finished(agent: subprocess.Popen[str]) -> str:
    out, _ = agent.communicate(timeout=SECONDS)
    assert agent.returncode == 0, out
    return out


def test_the_readme_quickstart_works_as_written(home: Path, runtime: int) -> None:
    blocks = quickstart()
    languages = [language for language, _ in blocks]
    assert languages == ["sh", "sh", "python", "sh", "sh"], languages
    (_, start), (_, first), (_, agent_code), (_, run_agent), (_, decide) = blocks
    assert start.strip() == "make local"
    shell = Shell(home, runtime)

    # An agent added, and its first heartbeat.
    beat = shell.run(first)
    assert json.loads(beat.stdout.splitlines()[0])["state"] == "armed", beat.stdout
    assert re.search(r"first-job\s.*armed", beat.stdout), beat.stdout

    # The agent that asks, saved as the README says.
    saved_as = re.search(r"Save this as\s+`([\w.]+)`", (REPO / "README.md").read_text())
    assert saved_as is not None
    (home / saved_as.group(1)).write_text(agent_code.replace("8080", str(runtime)))

    # The first approval, on the console, by the clicks the README names.
    agent = shell.start(run_agent)
    request_id = waiting_for(agent)
    operator_secret = json.loads((home / ".vigil/local.json").read_text())["operator_secret"]
    base = f"http://127.0.0.1:{runtime}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page()
        page.goto(f"{base}/console")
        page.get_by_label("Your secret").fill(operator_secret)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="Requests", exact=True).click()
        page.get_by_role("link", name="May I deploy checkout 1.2.3?").click()
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("#confirm pre")).to_contain_text("checkout")
        page.get_by_role("button", name="Yes, approve").click()
        browser.close()
    out = finished(agent)
    assert f"{request_id} approved" in out
    assert "deploying checkout 1.2.3" in out

    # The second, at a terminal, with the id the agent printed.
    agent = shell.start(run_agent)
    request_id = waiting_for(agent)
    listing, approve = decide.strip().splitlines()
    assert request_id in shell.run(listing).stdout
    controller, terminal = pty.openpty()
    approving = subprocess.Popen(
        ["bash", "-c", shell.script(approve.replace("req_…", request_id))],
        cwd=home,
        env=shell.env | {"COLUMNS": "100"},
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    _read_until(controller, b"Approve? [y/N]", time.monotonic() + SECONDS)
    os.write(controller, b"y\n")
    assert approving.wait(timeout=SECONDS) == 0
    os.close(controller)
    out = finished(agent)
    assert f"{request_id} approved" in out
    assert "deploying checkout 1.2.3" in out


def test_the_quickstart_comes_before_the_reference() -> None:
    readme = (REPO / "README.md").read_text()
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings[0].startswith("Quickstart"), headings[:3]
