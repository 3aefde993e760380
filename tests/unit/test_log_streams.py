"""Vigil's logs go to standard error as it is when each line is written: a stream swapped and
closed since the logger was made (a test's capture, a daemon's redirection) is never written
to, so no "--- Logging error ---" traceback is printed in its place."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from vigil.local.logs import on_the_terminal
from vigil.observability import JsonFormatter, StderrHandler, get_logger, log_event


def test_a_log_line_goes_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    handler = StderrHandler()
    handler.setFormatter(JsonFormatter("vigil"))
    logger = logging.getLogger("vigil.test-streams")
    logger.handlers[:] = [handler]
    logger.propagate = False
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    log_event(logger, "one")
    first.close()  # as pytest closes a test's capture
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    log_event(logger, "two")
    written = second.getvalue()
    assert "Logging error" not in written
    assert [json.loads(line)["message"] for line in written.splitlines()] == ["two"]


@pytest.mark.parametrize("as_json", [True, False])
def test_the_local_runtimes_terminal_logs_follow_stderr_too(
    monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    with on_the_terminal(access_log=False, as_json=as_json):
        first.close()
        second = io.StringIO()
        monkeypatch.setattr(sys, "stderr", second)
        log_event(get_logger("vigil.test-terminal"), "late line", logging.WARNING)
    assert "late line" in second.getvalue()
    assert "Logging error" not in second.getvalue()
