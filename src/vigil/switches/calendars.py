"""Calendars: when a switch expects its beats, besides a window after each one.

A calendar is cron text or systemd calendar (OnCalendar) text, read in an IANA time zone, with a
grace: ``0 2 * * 1-5`` in Europe/Berlin within 15 minutes expects a beat each weekday between
02:00 and 02:15, Berlin time. Its slots are the moments at which the job's own scheduler starts
the job, and a slot is due its grace later.

Which syntax: text of exactly five whitespace-separated fields is cron (minute, hour,
day-of-month, month, day-of-week; no seconds field, no ``@daily``); anything else is OnCalendar
(no OnCalendar text has five fields). ``parse`` also takes the kind, to say it outright.

Each kind follows its own scheduler when the clocks change, so that a slot is expected when the
job really starts. cronsim reads cron text as Debian's cron does:

- A job at fixed times (neither its minute nor its hour field begins with ``*``) keeps wall
  time. A slot in the hour skipped in spring comes right after the gap: 02:30 Berlin time on
  2026-03-29 is 03:00 CEST (01:00 UTC), and 02:00 is the same moment (slots that meet count
  once). A slot in the hour repeated in autumn comes once, the first time: 02:30 on 2026-10-25
  is 02:30 CEST (00:30 UTC), never 02:30 CET.
- Any other job keeps real time: a wall time that does not exist is no slot, and one that
  happens twice is two. An hourly job runs at 01:00 CET then 03:00 CEST on 2026-03-29 (23
  slots that day), and at 02:00 CEST then 02:00 CET on 2026-10-25 (25 slots).

oncalendar reads OnCalendar text as systemd does: a wall time that does not exist is no slot
(02:30 has none on 2026-03-29), and one that happens twice is one slot, the first (on
2026-10-25 an hourly calendar has 02:00 CEST then 03:00 CET, and 02:30 is 02:30 CEST).

The slots are those of one scheduler that runs all along: ``next_slot`` and ``previous_slot``
find the same ones whatever moment they start from, in the repeated hour too.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo, available_timezones

from cronsim import CronSim, CronSimError
from pydantic import ConfigDict

from vigil.kit.records import Record

if TYPE_CHECKING:
    from oncalendar import BaseIterator, OnCalendarError

CalendarKind = Literal["cron", "systemd"]

MAX_EXPRESSION_CHARS = 200
# Cron text has one slot a minute at most; OnCalendar text naming more than one second of a
# minute is refused. A calendar is for jobs: faster beats are for the window after each beat.
MIN_SLOT_SPACING_SECONDS = 60
MIN_GRACE_SECONDS = 60
MAX_GRACE_SECONDS = 7 * 86_400
# A calendar must have a slot this soon after it is made; previous_slot looks back this far.
HORIZON = timedelta(days=5 * 365 + 1)
CRON_FIELDS = 5
# previous_slot looks back this far first, then 16 times as far each time it finds no slot.
_FIRST_LOOK_BACK = timedelta(seconds=120)


class CalendarError(ValueError):
    """Calendar text, time zone or grace that cannot be used, and why."""


class Calendar(Record):
    """When beats are expected: the slots of ``expression`` in ``time_zone``, each due
    ``grace_seconds`` after it. Made by ``parse``, which checks it; a stored one is trusted."""

    model_config = ConfigDict(frozen=True)

    kind: CalendarKind
    expression: str  # whitespace as one space
    time_zone: str  # an IANA name
    grace_seconds: int

    @classmethod
    def parse(
        cls,
        expression: str,
        time_zone: str,
        grace_seconds: int,
        *,
        now: datetime,
        kind: CalendarKind | None = None,
    ) -> Calendar:
        """The calendar, checked: its text (cron if it has five fields, else OnCalendar, unless
        ``kind`` says), its time zone, its grace, slots at least MIN_SLOT_SPACING_SECONDS
        apart, and a slot within HORIZON of ``now``. CalendarError says what is wrong."""
        if len(expression) > MAX_EXPRESSION_CHARS:
            raise CalendarError(
                f"a calendar has at most {MAX_EXPRESSION_CHARS} characters; "
                f"this one has {len(expression)}"
            )
        text = " ".join(expression.split())
        if not text:
            raise CalendarError("a calendar needs cron or OnCalendar text; this one is empty")
        fields = len(text.split())
        if kind is None:
            kind = "cron" if fields == CRON_FIELDS else "systemd"
        if kind == "cron":
            _check_cron(text, fields)
        else:
            _check_systemd(text, fields)
        _check_time_zone(time_zone)
        if (
            isinstance(grace_seconds, bool)
            or not isinstance(grace_seconds, int)
            or not MIN_GRACE_SECONDS <= grace_seconds <= MAX_GRACE_SECONDS
        ):
            raise CalendarError(
                f"grace_seconds is a whole number of seconds from {MIN_GRACE_SECONDS} "
                f"to {MAX_GRACE_SECONDS} (7 days); got {grace_seconds!r}"
            )
        calendar = cls(kind=kind, expression=text, time_zone=time_zone, grace_seconds=grace_seconds)
        first = calendar.next_slot(now)
        if first is None or first - now > HORIZON:
            later = (
                ""
                if first is None
                else f" (its first is {first.astimezone(calendar.zone):%Y-%m-%d %H:%M} there)"
            )
            raise CalendarError(
                f"{calendar.label} has no slot in the five years after "
                f"{now.date().isoformat()}{later}"
            )
        return calendar

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    @property
    def label(self) -> str:
        """The text and its kind, as messages quote it: cron '0 2 * * *'."""
        return f"{_KIND_NAMES[self.kind]} {self.expression!r}"

    def next_slot(self, after: datetime) -> datetime | None:
        """The first slot strictly after ``after`` (aware), in UTC; None if the calendar has
        none left (OnCalendar text may name its years)."""
        return next(self._slots(after), None)

    def previous_slot(self, at_or_before: datetime) -> datetime | None:
        """The last slot at or before ``at_or_before`` (aware), in UTC; None if there is none
        in the HORIZON before it."""
        span = _FIRST_LOOK_BACK
        while True:
            span = min(span, HORIZON)
            last = None
            for slot in self._slots(at_or_before - span):
                if slot > at_or_before:
                    break
                last = slot
            if last is not None or span == HORIZON:
                return last
            span *= 16

    def due(self, slot: datetime) -> datetime:
        """The deadline of ``slot``: the moment a switch that expects it fires without a beat."""
        return slot + timedelta(seconds=self.grace_seconds)

    def due_after(self, moment: datetime) -> datetime:
        """The deadline of a beat at ``moment``: its next slot's due time. A calendar with no
        slot left (a date gone by) gives its grace after ``moment``."""
        slot = self.next_slot(moment)
        return self.due(slot if slot is not None else moment)

    def describe(self) -> str:
        """For people: cron 0 2 * * 1-5 in Europe/Berlin, within 15 min."""
        return (
            f"{_KIND_NAMES[self.kind]} {self.expression} in {self.time_zone}, "
            f"within {_duration(self.grace_seconds)}"
        )

    def _slots(self, after: datetime) -> Iterator[datetime]:
        """The slots after ``after``, in order, in UTC. The libraries read a start in wall
        time, so in the repeated hour they may give slots already past: those are dropped, as
        are slots that meet one already given (after the spring gap)."""
        if after.tzinfo is None:
            raise ValueError("a calendar's slots are found from an aware moment")
        start = after.astimezone(self.zone)
        found: Iterator[datetime]
        if self.kind == "cron":
            found = CronSim(self.expression, start)
        else:
            iterator, _ = _oncalendar()
            found = iterator(self.expression, start)
        for local in found:
            slot = local.astimezone(UTC)
            if slot > after:
                after = slot
                yield slot


_KIND_NAMES: dict[CalendarKind, str] = {"cron": "cron", "systemd": "OnCalendar"}
# A start for the libraries while checking text alone: any aware moment will do.
_ANY_MOMENT = datetime(2026, 1, 1, tzinfo=UTC)


# What each cron field takes, for the messages that refuse one.
_CRON_VALUES = {
    "minute": "0-59",
    "hour": "0-23",
    "day-of-month": "1-31, L or LW, and a day that the months named have",
    "month": "1-12 or JAN-DEC",
    "day-of-week": "0-7 or SUN-SAT, with L or #1-#5",
}


def _check_cron(text: str, fields: int) -> None:
    if fields != CRON_FIELDS:
        raise CalendarError(
            f"cron {text!r} has {fields} fields; cron text has five: "
            "minute hour day-of-month month day-of-week"
        )
    try:
        CronSim(text, _ANY_MOMENT)
    except CronSimError as error:
        reason = _reason(error)
        field = reason.removeprefix("bad ")
        allowed = f" (it takes {_CRON_VALUES[field]})" if field in _CRON_VALUES else ""
        raise CalendarError(f"cron {text!r}: {reason}{allowed}") from None


def _check_systemd(text: str, fields: int) -> None:
    iterator, failure = _oncalendar()
    if text.startswith("@"):
        raise CalendarError(
            f"{text!r} is neither: write cron's five fields, or OnCalendar's own names "
            "(hourly, daily, weekly...)"
        )
    last = text.rsplit(maxsplit=1)[-1]
    if last in _time_zones():
        raise CalendarError(f"OnCalendar {text!r} names a time zone: give it as time_zone instead")
    try:
        seconds = iterator(text, _ANY_MOMENT).seconds
    except failure as error:
        hint = (
            "; cron text has exactly five fields: minute hour day-of-month month day-of-week"
            if fields >= CRON_FIELDS
            else ""
        )
        raise CalendarError(f"OnCalendar {text!r}: {_reason(error)}{hint}") from None
    if len(seconds) > 1:
        ordered = sorted(seconds)
        gap = min(b - a for a, b in zip(ordered, [*ordered[1:], ordered[0] + 60], strict=True))
        raise CalendarError(
            f"OnCalendar {text!r} has slots {gap} s apart; a calendar's slots are at least "
            f"{MIN_SLOT_SPACING_SECONDS} s apart (for faster beats, expect each beat within "
            "a window of the one before)"
        )


def _oncalendar() -> tuple[type[BaseIterator], type[OnCalendarError]]:
    """The OnCalendar library's iterator and error, imported on first use. PyPI has its source
    alone; the Lambda artifact ships it all the same, as a wheel the build makes from the
    locked sdist (requirements/lambda-source.txt). An install without it refuses OnCalendar
    text, and cron text still works there."""
    try:
        from oncalendar import BaseIterator, OnCalendarError
    except ImportError:
        raise CalendarError("OnCalendar text cannot be read here: give cron text") from None
    return BaseIterator, OnCalendarError


def _check_time_zone(name: str) -> None:
    if name in _time_zones():
        return
    close = [zone for zone in _time_zones() if zone.lower() == str(name).lower()]
    advice = f"did you mean {close[0]}?" if close else "give an IANA name such as Europe/Berlin"
    raise CalendarError(f"unknown time zone {name!r}: {advice}")


@cache
def _time_zones() -> frozenset[str]:
    """The IANA names zoneinfo knows, but "localtime": the zone of whichever machine reads it."""
    return frozenset(available_timezones() - {"localtime"})


def _reason(error: Exception) -> str:
    """A library's message, as the end of a sentence: "Bad minute" -> "bad minute"."""
    text = str(error)
    return text[:1].lower() + text[1:]


def _duration(seconds: int) -> str:
    """7 d, 1 h 30 min, 15 min, 1 min 30 s."""
    parts = []
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}")
    return " ".join(parts) or "0 s"
