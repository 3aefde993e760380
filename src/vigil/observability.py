"""Structured JSON logs with a correlation id, and nothing secret in them.

A small stdlib formatter rather than a logging framework: it costs nothing at cold start and
honours the Powertools environment variables set in the template (service name, level).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from contextvars import ContextVar
from typing import Any

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


_configured = False


def get_logger(name: str = "vigil") -> logging.Logger:
    global _configured
    if not _configured:
        root = logging.getLogger("vigil")
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter(os.environ.get("POWERTOOLS_SERVICE_NAME", "vigil")))
        root.handlers[:] = [handler]
        root.setLevel(os.environ.get("POWERTOOLS_LOG_LEVEL", os.environ.get("LOG_LEVEL", "INFO")))
        root.propagate = False
        _configured = True
    return logging.getLogger(name)


def log_event(
    logger: logging.Logger, message: str, level: int = logging.INFO, **fields: Any
) -> None:
    logger.log(level, message, extra={"fields": fields})
