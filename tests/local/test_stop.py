"""`vigil local` stops on SIGINT and SIGTERM within five seconds, every time, however the signals
fall: the handler takes no lock the waiting main thread may hold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import interruptible


def started(state_dir: Path) -> subprocess.Popen[str]:
    # From a directory with no template in it: the template travels with the package.
    process = subprocess.Popen(
        [sys.executable, "-m", "vigil", "local", "--port", "0", "--state-dir", str(state_dir)],
        cwd=state_dir,
        env={**os.environ, "VIGIL_LOG_LEVEL": "WARNING"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=interruptible,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    for line in process.stdout:
        if line.startswith("Press Ctrl+C"):
            return process
        assert time.monotonic() < deadline, "the runtime did not start"
    raise AssertionError(f"the runtime exited with {process.wait()}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("run", [1, 2])
def test_a_signal_stops_the_runtime_within_five_seconds(
    signum: signal.Signals, run: int, tmp_path: Path
) -> None:
    process = started(tmp_path)
    try:
        # Twice, a moment apart: the second lands while the first is being handled.
        process.send_signal(signum)
        time.sleep(0.05)
        process.send_signal(signum)
        assert process.wait(timeout=5) == 0
        assert process.stdout is not None
        assert "Vigil stopped." in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
