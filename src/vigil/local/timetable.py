"""The local runtime's timetable: when what moto holds comes due (each schedule, each message
sent to a queue), in order, so that the event pump asks moto only about what is due, never
about all that exists.

moto keeps schedules but never fires them, and listing them all on every pass made the pump's
cost grow with the schedules pending, not with those due; receiving from every mapped queue
five times a second cost the idle runtime more than all else. Every request reaches moto
through the runtime's WSGI stack, where ``recording`` notes, once moto has accepted it, the
fire time of each schedule created or updated, forgets each one deleted, and notes when each
message sent becomes visible. After a restart the schedules are rebuilt from moto's saved state
(``moto_state.saved_schedules``); a queue is received from anyway every so often, which finds
what was sent before it.

The timetable is a hint and moto the truth: the pump reads a due schedule back before it fires
it, so an entry that a deletion or an update overtook fires nothing, and a receive that finds
nothing is only a receive.
"""

from __future__ import annotations

import heapq
import io
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs
from zoneinfo import ZoneInfo

from vigil.local.moto_state import WsgiApp, service_of

_AT_EXPRESSION = re.compile(r"^\s*at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)\s*$")
_RATE_EXPRESSION = re.compile(r"^\s*rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)\s*$")
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
# A recurring schedule has no one fire time the expression alone gives: the pump looks at it at
# once, whatever its clock says, and sets its occurrences from then (or reports that it does not
# play it: a cron() one).
AT_ONCE = datetime.min.replace(tzinfo=UTC)
_DEFAULT_GROUP = "default"
_SCHEDULE_PATH = re.compile(r"^/schedules/(?P<name>[^/]+)$")
_SENDS = ("AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch")
# moto shows a message once its clock is past the visible time, to the millisecond.
_VISIBLE_MARGIN_SECONDS = 0.002
# Each lazily dropped heap entry costs a little memory until the heap is rebuilt.
_STALE_ALLOWANCE = 64


def fire_time(expression: str, timezone: str | None = None) -> datetime | None:
    """When the Scheduler fires a one-shot ``at()`` expression; None for recurring ones.

    The Scheduler works to the minute: a schedule for 12:00:30 fires during 12:01, never at
    12:00:30. Locally it fires at the first whole minute at or after the ``at()`` time, the
    latest AWS would, so code that needs a precise deadline meets the same gap here as in AWS
    and must bridge it with its second, precise stage (the timer queue).
    """
    match = _AT_EXPRESSION.match(expression)
    if match is None:
        return None
    local = datetime.fromisoformat(match.group(1)).replace(tzinfo=ZoneInfo(timezone or "UTC"))
    moment = local.astimezone(UTC)
    minute = moment.replace(second=0, microsecond=0)
    return minute if minute == moment else minute + timedelta(minutes=1)


def rate_period(expression: str) -> timedelta | None:
    """The period of a recurring ``rate()`` expression; None for any other."""
    match = _RATE_EXPRESSION.match(expression)
    if match is None:
        return None
    return timedelta(seconds=int(match.group(1)) * _RATE_UNITS[match.group(2).rstrip("s")])


class _Group:
    """One schedule group's entries: the current time of each name, and a heap of them in
    which an entry whose name has since moved or gone is skipped when it comes up."""

    def __init__(self) -> None:
        self.due: dict[str, datetime] = {}
        self.heap: list[tuple[datetime, str]] = []

    def set(self, name: str, due: datetime) -> None:
        self.due[name] = due
        heapq.heappush(self.heap, (due, name))
        self._compact()

    def forget(self, name: str) -> None:
        self.due.pop(name, None)
        self._compact()

    def _compact(self) -> None:
        if len(self.heap) > 2 * len(self.due) + _STALE_ALLOWANCE:
            self.heap = [(moment, name) for name, moment in self.due.items()]
            heapq.heapify(self.heap)

    def pop_due(self, now: datetime) -> list[str]:
        names = []
        while self.heap and self.heap[0][0] <= now:
            due, name = heapq.heappop(self.heap)
            if self.due.get(name) == due:
                del self.due[name]
                names.append(name)
        return names


class Timetable:
    """When each schedule comes due, by group, on the clock the schedules' expressions name;
    and when each message sent becomes visible, by queue name, on moto's clock (the wall
    clock, ``time.time()``). Safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}
        self._arrivals: dict[str, list[float]] = {}

    def message_sent(self, queue: str, visible_at: float) -> None:
        with self._lock:
            heapq.heappush(self._arrivals.setdefault(queue, []), visible_at)

    def messages_due(self, queue: str, now: float) -> bool:
        """Whether a message sent to ``queue`` has become visible by ``now`` since last asked."""
        with self._lock:
            arrivals = self._arrivals.get(queue)
            due = False
            while arrivals and arrivals[0] <= now:
                heapq.heappop(arrivals)
                due = True
            return due

    def set(self, group: str, name: str, due: datetime) -> None:
        with self._lock:
            self._groups.setdefault(group, _Group()).set(name, due)

    def note(self, group: str, name: str, expression: str, timezone: str | None) -> None:
        """Sets the schedule's time from its expression: its fire time, or at once."""
        self.set(group, name, fire_time(expression, timezone) or AT_ONCE)

    def forget(self, group: str, name: str) -> None:
        with self._lock:
            entries = self._groups.get(group)
            if entries is not None:
                entries.forget(name)

    def pop_due(self, group: str, now: datetime) -> list[str]:
        """The schedules of ``group`` due by ``now``, earliest first, taken off the timetable:
        whoever takes them sets them again if they are to come up again."""
        with self._lock:
            entries = self._groups.get(group)
            return [] if entries is None else entries.pop_due(now)

    def pending(self, group: str) -> int:
        with self._lock:
            entries = self._groups.get(group)
            return 0 if entries is None else len(entries.due)


def _request_body(environ: dict[str, Any]) -> bytes:
    stream = environ["wsgi.input"]
    body = bytes(stream.read(int(environ.get("CONTENT_LENGTH") or 0)))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def queue_name(url: str) -> str:
    return url.rstrip("/").rpartition("/")[2]


def _accepted(
    app: WsgiApp, environ: dict[str, Any], start_response: Callable[..., Any]
) -> tuple[bool, list[bytes]]:
    """moto's answer, and whether it accepted the request."""
    statuses: list[str] = []

    def noting_status(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
        statuses.append(status)
        return start_response(status, headers, *rest)

    answer = list(app(environ, noting_status))
    return bool(statuses) and statuses[-1].startswith("2"), answer


def _note_sends(timetable: Timetable, target: str, body: bytes, now: float) -> None:
    request = json.loads(body or b"{}")
    queue = queue_name(request.get("QueueUrl", ""))
    messages = request.get("Entries", []) if target.endswith("Batch") else [request]
    for message in messages:
        delay = int(message.get("DelaySeconds") or 0)
        timetable.message_sent(queue, now + delay + _VISIBLE_MARGIN_SECONDS)


def recording(app: WsgiApp, timetable: Timetable) -> WsgiApp:
    """WSGI middleware: what moto accepts of CreateSchedule, UpdateSchedule and DeleteSchedule,
    and of SendMessage and SendMessageBatch (in SQS's JSON protocol), goes into ``timetable``.

    The schedules' requests run one at a time, each noted before the next starts, so that the
    timetable sees the changes in moto's order. A group's deletion is not followed: its
    schedules' entries find nothing when they come up. A message's visible time is noted from
    its own delay: a queue's default delay or a message made visible again is found by the
    pump's receives every so often.
    """
    changing = threading.Lock()

    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target in _SENDS:
            body = _request_body(environ)
            accepted, answer = _accepted(app, environ, start_response)
            if accepted:
                _note_sends(timetable, target, body, time.time())
            return answer
        path = _SCHEDULE_PATH.match(environ.get("PATH_INFO", ""))
        method = environ.get("REQUEST_METHOD", "GET")
        if (
            path is None
            or method not in ("POST", "PUT", "DELETE")
            or service_of(environ) != "scheduler"
        ):
            return app(environ, start_response)
        name = path.group("name")
        body = _request_body(environ)
        with changing:
            accepted, answer = _accepted(app, environ, start_response)
            if accepted:
                if method == "DELETE":
                    query = parse_qs(environ.get("QUERY_STRING", ""))
                    timetable.forget(query.get("groupName", [_DEFAULT_GROUP])[0], name)
                else:
                    request = json.loads(body or b"{}")
                    timetable.note(
                        request.get("GroupName") or _DEFAULT_GROUP,
                        name,
                        request.get("ScheduleExpression", ""),
                        request.get("ScheduleExpressionTimezone"),
                    )
        return answer

    return middleware
