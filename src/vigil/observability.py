"""Structured JSON logs with a correlation id, and nothing secret in them; CloudWatch metrics
as embedded metric format (EMF) lines.

A small stdlib formatter and emitter rather than a framework: in the functions, where botocore
is already imported, they add under a millisecond to a cold start, where Powertools' Logger and
Metrics add seven (docs/PERFORMANCE.md, "Logs and metrics"). VIGIL_LOG_LEVEL sets the level.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, Literal, TextIO

from vigil.errors import VigilError

correlation_id: ContextVar[str | None] = ContextVar("correlation_id", default=None)

# Keys whose values are replaced before a record is written, whatever the caller logged.
_SECRET_KEYS = frozenset(
    {"secret", "agent_key", "authorization", "token", "password", "secret_hash", "agent_secret"}
)
_REDACTED = "[redacted]"


def redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (_REDACTED if str(k).lower() in _SECRET_KEYS else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": self.formatTime(record, "%Y-%m-%dT%H:%M:%S")
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "message": record.getMessage(),
            "logger": record.name,
        }
        cid = correlation_id.get()
        if cid:
            entry["correlation_id"] = cid
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(redact(fields))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each record to ``sys.stderr`` as it is when the record comes, not as it was when
    the handler was made: a stream swapped since (a test's capture, a daemon's redirection)
    and closed is never written to, which would print "--- Logging error ---" instead."""

    def __init__(self) -> None:
        super().__init__()
        self._given: TextIO | None = None  # a stream given since (setStream), if any

    @property
    def stream(self) -> TextIO:
        return self._given or sys.stderr

    @stream.setter
    def stream(self, given: TextIO) -> None:
        # StreamHandler's own __init__ sets it to the stderr of that moment: not kept.
        self._given = None if given is sys.stderr else given


_configured = False


def get_logger(name: str = "vigil") -> logging.Logger:
    global _configured
    if not _configured:
        root = logging.getLogger("vigil")
        handler = StderrHandler()
        handler.setFormatter(JsonFormatter("vigil"))
        root.handlers[:] = [handler]
        root.setLevel(os.environ.get("VIGIL_LOG_LEVEL", "INFO"))
        root.propagate = False
        _configured = True
    return logging.getLogger(name)


def log_event(
    logger: logging.Logger, message: str, level: int = logging.INFO, **fields: Any
) -> None:
    logger.log(level, message, extra={"fields": fields})


def log_failure(logger: logging.Logger, message: str, error: BaseException, **fields: Any) -> None:
    """A failure that is handed back to be tried again (a queue's record, an asynchronous
    invocation). A retryable ``VigilError`` (throttled, unavailable, lost races) is one the
    design expects and the retry is its remedy: a warning with its code and reason, no
    traceback. Anything else is a bug or an outage nobody planned for: an error, with its
    traceback."""
    if isinstance(error, VigilError) and error.retryable:
        fields = {**fields, "code": error.code.value, "reason": error.message}
        log_event(logger, message, logging.WARNING, **fields)
    else:
        logger.error(message, exc_info=error, extra={"fields": fields})


# ---------------------------------------------------------------- metrics
# CloudWatch embedded metric format: a log line whose `_aws` member tells CloudWatch Logs
# which of its members are metrics, in which namespace, under which dimensions. Lambda ships
# the function's stderr to its log group, where the metrics are extracted; no client, no
# request, no buffer to flush. Each event is its own line, written when it happens: a few
# hundred bytes of logs, and nothing lost if the invocation then fails.
#
# Every distinct combination of a metric's name and dimension values is a custom metric,
# charged $0.30 a month (prorated by the hour it receives data), so dimensions stay few and
# their values bounded: tools come from the catalog, codes from ErrorCode, functions are
# three, a notification attempt's outcomes five.
# No metric ever carries an identifier, a name a caller chose, or a secret.

NAMESPACE = "Vigil"
Unit = Literal["Count", "Seconds"]
DimensionSets = tuple[tuple[str, ...], ...]

# Each set is also keyed by the stack, so that two stacks in one account and region (a
# staging one beside production) neither mix their metrics nor set off each other's alarms.
BY_STACK: DimensionSets = ((),)
BY_FUNCTION: DimensionSets = (("Function",),)
# Errors in total, by code, and by tool: 1 + codes + tools metrics, not codes times tools.
BY_CODE_AND_TOOL: DimensionSets = ((), ("Code",), ("Tool",))
BY_OUTCOME: DimensionSets = (("Outcome",),)


class Metrics:
    """Writes each event's metrics as one EMF line through ``write``; with no ``write``
    (anywhere but Lambda: the local runtime and the tests have no CloudWatch to read them),
    nothing. ``clock`` is the time in seconds the lines are stamped with; ``stack``, the value
    of every metric's Stack dimension."""

    def __init__(
        self,
        write: Callable[[str], object] | None,
        clock: Callable[[], float] = time.time,
        stack: str = "vigil",
    ) -> None:
        self.write = write
        self.clock = clock
        self.stack = stack
        self._started: set[str] = set()

    def emit(
        self,
        values: Mapping[str, tuple[float, Unit]],
        dimensions: Mapping[str, str] | None = None,
        dimension_sets: DimensionSets = BY_STACK,
    ) -> None:
        """One EMF document: ``values`` (name to value and unit) under each of
        ``dimension_sets`` (each with the Stack dimension too), whose dimensions take their
        values from ``dimensions``."""
        if self.write is None:
            return
        directive = {
            "Namespace": NAMESPACE,
            "Dimensions": [("Stack", *keys) for keys in dimension_sets],
            "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in values.items()],
        }
        document: dict[str, Any] = {
            "_aws": {"Timestamp": int(self.clock() * 1000), "CloudWatchMetrics": [directive]},
            "Stack": self.stack,
            **(dimensions or {}),
        }
        document.update((name, value) for name, (value, _) in values.items())
        self.write(json.dumps(document, separators=(",", ":")) + "\n")

    def switch_fired(self, lateness_seconds: float) -> None:
        """A dead-man switch fired, ``lateness_seconds`` after its deadline."""
        self.emit({"SwitchFired": (1, "Count"), "ExpiryLateness": (lateness_seconds, "Seconds")})

    def switch_swept(self) -> None:
        """The sweep found an armed switch whose alarm had not come: a timer was lost (or the
        alarm function is far behind). Any at all is for an operator to look into."""
        self.emit({"SwitchesSwept": (1, "Count")})

    def delivered(self) -> None:
        """An envelope was queued into a mailbox."""
        self.emit({"Deliveries": (1, "Count")})

    def last_handout(self) -> None:
        """An envelope was received from its mailbox's queue for the last time: unless this
        hand-out is acknowledged, SQS moves it to the dead-letter queue on the next receive.
        Every dead letter passes here once, so its sum alarms on dead letters in every
        mailbox, whose queues are made at run time (template.yaml, MailboxDeadLettersAlarm)."""
        self.emit({"LastHandouts": (1, "Count")})

    def version_conflict(self) -> None:
        """A conditional write lost a race, and its change is read and tried again."""
        self.emit({"VersionConflicts": (1, "Count")})

    def store_busy(self) -> None:
        """A DynamoDB request found its item or partition busy (a transaction conflict, a
        throttled transaction) and goes again after a pause, or gives up as throttled."""
        self.emit({"StoreBusy": (1, "Count")})

    def error(self, tool: str, code: str) -> None:
        """A tool call answered with the error ``code`` (an ErrorCode's value)."""
        self.emit({"Errors": (1, "Count")}, {"Tool": tool, "Code": code}, BY_CODE_AND_TOOL)

    def notification_attempt(self, outcome: str) -> None:
        """An attempt to deliver a notification came to ``outcome`` (delivered, retry, gone,
        rejected, interrupted)."""
        self.emit({"NotificationAttempts": (1, "Count")}, {"Outcome": outcome}, BY_OUTCOME)

    def cold_start(self, function: str) -> None:
        """The first invocation of ``function`` in this sandbox (one restored from a SnapStart
        snapshot included: the snapshot is taken before any invocation); later ones, nothing."""
        if function not in self._started:
            self._started.add(function)
            self.emit({"ColdStart": (1, "Count")}, {"Function": function}, BY_FUNCTION)


def _stderr(line: str) -> None:
    sys.stderr.write(line)  # looked up per line, so that a replaced stderr gets it


# Lambda sets AWS_LAMBDA_FUNCTION_NAME in every function's environment; the template sets
# STACK_NAME.
metrics = Metrics(
    _stderr if "AWS_LAMBDA_FUNCTION_NAME" in os.environ else None,
    stack=os.environ.get("STACK_NAME") or "vigil",
)
