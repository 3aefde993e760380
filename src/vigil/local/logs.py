"""Where the local runtime's logs go: all of them, as JSON lines, to a file in the state
directory; to the terminal, only what a person there should read.

The functions log as they do in Lambda, a JSON line per tool call and per request, which on
a terminal buries the banner and scrolls away anything that matters. The terminal shows
warnings and errors, each on a short line (with its traceback), and, when asked, one short
line per request; ``--log-json`` shows it the JSON lines instead, as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TextIO

from vigil.observability import JsonFormatter, StderrHandler, get_logger, redact
from vigil.people.render import printable

LOG_FILE = "local.log"
# The file is rolled over at this size, one older file kept: a runtime left on for weeks
# fills no disk.
_LOG_FILE_BYTES = 10 * 1024 * 1024
# The logger the local HTTP server writes one record per request to.
ACCESS_LOGGER = "vigil.local.access"


@contextlib.contextmanager
def logs_to(handler: logging.Handler, *, instead: bool = False) -> Iterator[None]:
    """Sends Vigil's logs to ``handler`` too (or only, when ``instead``) until the block ends."""
    vigil = get_logger("vigil")
    saved = list(vigil.handlers)
    vigil.handlers[:] = [handler] if instead else [*saved, handler]
    try:
        yield
    finally:
        vigil.handlers[:] = saved
        handler.close()


def log_file_handler(state_dir: Path) -> logging.Handler:
    """Every log line, as JSON, to ``LOG_FILE`` in ``state_dir``."""
    handler = RotatingFileHandler(
        state_dir / LOG_FILE, maxBytes=_LOG_FILE_BYTES, backupCount=1, encoding="utf-8"
    )
    handler.setFormatter(JsonFormatter("vigil"))
    return handler


def terminal_handler(*, access_log: bool, stream: TextIO | None = None) -> logging.Handler:
    """Warnings and errors, and each request when ``access_log``, as short lines."""
    handler = logging.StreamHandler(stream) if stream is not None else StderrHandler()
    handler.setFormatter(_TerminalFormatter())
    handler.addFilter(
        lambda record: (
            record.levelno >= logging.WARNING or (access_log and record.name == ACCESS_LOGGER)
        )
    )
    return handler


@contextlib.contextmanager
def on_the_terminal(*, access_log: bool, as_json: bool) -> Iterator[None]:
    """Vigil's logs on the terminal, until the block ends: as JSON lines, every one, when
    ``as_json``; else as ``terminal_handler`` shows them. ``access_log`` logs each request
    whatever VIGIL_LOG_LEVEL says."""
    handler: logging.Handler
    if as_json:
        handler = StderrHandler()
        handler.setFormatter(JsonFormatter("vigil"))
    else:
        handler = terminal_handler(access_log=access_log)
    access = get_logger(ACCESS_LOGGER)
    saved_level = access.level
    if access_log:
        access.setLevel(logging.INFO)
    try:
        with logs_to(handler, instead=True):
            yield
    finally:
        access.setLevel(saved_level)


class _TerminalFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            fields = redact(getattr(record, "fields", None) or {})
            text = f"{record.levelname.lower()}: {text}"
            text += "".join(f" {key}={value}" for key, value in fields.items())
        text = f"{self.formatTime(record, '%H:%M:%S')} {text}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        # A request's path is the client's to choose: no escape sequence of its own reaches
        # the terminal.
        return printable(text, keep_newlines=True)
