"""Progress reports: what a worker says about its work.

A report is data from its reporter, kept with the verified principal that sent it and never
interpreted. Only the latest one is kept per reporter, and per scope when it names one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vigil.kit.bounds import JsonBounds
from vigil.kit.records import Record

PROGRESS_BOUNDS = JsonBounds(max_bytes=8 * 1024, max_depth=4, max_keys=50, max_string=2000)


class ProgressReport(Record):
    namespace: str
    reported_by: str  # the principal whose credential made the report
    scope: str | None
    progress: dict[str, Any]
    reported_at: datetime
