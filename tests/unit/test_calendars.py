"""Calendars for switches: cron and OnCalendar text read in a time zone, checked when made, and
their slots across the changes of the clocks, found from moved moments (no sleeping)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from vigil.switches.calendars import (
    HORIZON,
    MAX_EXPRESSION_CHARS,
    MAX_GRACE_SECONDS,
    MIN_GRACE_SECONDS,
    Calendar,
    CalendarError,
    CalendarKind,
)

BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def calendar(
    expression: str, zone: str = BERLIN, grace: int = 900, kind: CalendarKind | None = None
) -> Calendar:
    return Calendar.parse(expression, zone, grace, now=NOW, kind=kind)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def slots(of: Calendar, after: datetime, count: int) -> list[datetime]:
    """The first ``count`` slots after ``after``, each found from the one before."""
    found: list[datetime] = []
    for _ in range(count):
        slot = of.next_slot(found[-1] if found else after)
        assert slot is not None
        found.append(slot)
    return found


def slots_until(of: Calendar, after: datetime, end: datetime) -> list[datetime]:
    found: list[datetime] = []
    while (slot := of.next_slot(found[-1] if found else after)) is not None and slot < end:
        found.append(slot)
    return found


def local(moments: list[datetime], zone: str = BERLIN) -> list[str]:
    """The moments as wall time with its offset, which names the instant too."""
    return [moment.astimezone(ZoneInfo(zone)).isoformat() for moment in moments]


# -- making one -----------------------------------------------------------------------------
def test_five_fields_are_cron_and_anything_else_is_oncalendar() -> None:
    cron = calendar("0  2 * *\t1-5")
    systemd = calendar("Mon..Fri *-*-* 02:00:00", grace=5400)
    assert (cron.kind, cron.expression) == ("cron", "0 2 * * 1-5")
    assert (systemd.kind, systemd.expression) == ("systemd", "Mon..Fri *-*-* 02:00:00")
    assert calendar("daily").kind == "systemd"
    assert cron.describe() == "cron 0 2 * * 1-5 in Europe/Berlin, within 15 min"
    assert systemd.describe() == (
        "OnCalendar Mon..Fri *-*-* 02:00:00 in Europe/Berlin, within 1 h 30 min"
    )
    assert calendar("0 2 * * *", grace=MAX_GRACE_SECONDS).describe().endswith("within 7 d")
    assert calendar("0 2 * * *", grace=90).describe().endswith("within 1 min 30 s")


def test_the_kind_given_is_the_kind_read() -> None:
    with pytest.raises(CalendarError, match="has 2 fields; cron text has five"):
        calendar("Mon 02:00", kind="cron")
    with pytest.raises(CalendarError, match=r"OnCalendar '0 2 \* \* \*': bad"):
        calendar("0 2 * * *", kind="systemd")
    assert calendar("Mon 02:00", kind="systemd").kind == "systemd"


@pytest.mark.parametrize(
    ("expression", "zone", "grace", "message"),
    [
        ("", BERLIN, 900, "this one is empty"),
        ("0 2 * * " + ",".join(["1"] * 100), BERLIN, 900, "at most 200 characters"),
        ("61 2 * * *", BERLIN, 900, r"cron '61 2 \* \* \*': bad minute \(it takes 0-59\)"),
        ("0 2 * * 9", BERLIN, 900, "bad day-of-week"),
        ("0 0 30 2 *", BERLIN, 900, "bad day-of-month .*a day that the months named have"),
        ("0 0 2 * * *", BERLIN, 900, "cron text has exactly five fields"),
        ("@daily", BERLIN, 900, "write cron's five fields, or OnCalendar's own names"),
        ("*-*-* 25:00", BERLIN, 900, r"OnCalendar '\*-\*-\* 25:00': bad hour"),
        ("Mon 02:00 Europe/Berlin", BERLIN, 900, "give it as time_zone instead"),
        ("*-*-* *:*:00/10", BERLIN, 900, "slots 10 s apart; .* at least 60 s apart"),
        ("*-*-* *:*:00,50", BERLIN, 900, "slots 10 s apart"),
        ("0 0 * 2 MON#5", BERLIN, 900, r"after 2026-01-01 \(its first is 2044-02-29 00:00 there\)"),
        ("2020-01-01", BERLIN, 900, "no slot in the five years"),
        ("2035-06-01 12:00", BERLIN, 900, "no slot in the five years"),
        ("*-02-30", BERLIN, 900, "no slot in the five years"),
        ("0 2 * * *", "Europe/Berlinn", 900, "unknown time zone 'Europe/Berlinn'"),
        ("0 2 * * *", "europe/berlin", 900, "did you mean Europe/Berlin"),
        ("0 2 * * *", "localtime", 900, "unknown time zone"),
        ("0 2 * * *", "+02:00", 900, "unknown time zone"),
        ("0 2 * * *", BERLIN, MIN_GRACE_SECONDS - 1, "grace_seconds .* from 60 to 604800"),
        ("0 2 * * *", BERLIN, MAX_GRACE_SECONDS + 1, "grace_seconds"),
        ("0 2 * * *", BERLIN, True, "grace_seconds"),
    ],
)
def test_what_cannot_be_a_calendar_is_refused_with_its_reason(
    expression: str, zone: str, grace: int, message: str
) -> None:
    with pytest.raises(CalendarError, match=message):
        calendar(expression, zone, grace)


def test_the_bounds_admit_what_they_name() -> None:
    assert len(calendar("0 2 * * " + "1," * 95 + "1").expression) <= MAX_EXPRESSION_CHARS
    minutely = [calendar("* * * * *"), calendar("*-*-* *:*:00")]
    for each in minutely:
        first, second = slots(each, NOW, 2)
        assert second - first == timedelta(seconds=60)
    assert calendar("0 2 * * *", grace=MIN_GRACE_SECONDS).grace_seconds == 60
    # The first slot must be within five years of the moment the calendar is made.
    later = Calendar.parse("0 0 * 2 MON#5", "UTC", 900, now=utc(2043, 6, 1))
    assert later.next_slot(utc(2043, 6, 1)) == utc(2044, 2, 29)
    assert timedelta(days=5 * 365) <= HORIZON


def test_oncalendar_text_is_refused_where_its_library_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "oncalendar", None)  # what import finds: nothing
    with pytest.raises(CalendarError, match="OnCalendar text cannot be read here"):
        calendar("Mon..Fri *-*-* 02:00:00")
    assert calendar("0 2 * * 1-5").next_slot(NOW) == utc(2026, 1, 1, 1)


def test_a_calendar_is_a_frozen_record() -> None:
    made = calendar("0 2 * * 1-5")
    with pytest.raises(ValidationError):
        made.grace_seconds = 60
    assert Calendar.model_validate(made.model_dump()) == made


# -- slots ----------------------------------------------------------------------------------
def test_the_next_slot_is_strictly_after_and_the_previous_at_or_before() -> None:
    daily = calendar("0 2 * * *", "UTC")
    slot = utc(2026, 5, 5, 2)
    assert daily.next_slot(slot - MICROSECOND) == slot
    assert daily.next_slot(slot) == slot + timedelta(days=1)
    assert daily.previous_slot(slot) == slot
    assert daily.previous_slot(slot - MICROSECOND) == slot - timedelta(days=1)
    assert daily.previous_slot(slot + timedelta(hours=23)) == slot
    assert daily.due(slot) == utc(2026, 5, 5, 2, 15)


def test_slots_are_found_in_the_calendars_time_zone_and_given_in_utc() -> None:
    slot = calendar("0 2 * * *").next_slot(utc(2026, 6, 30, 12))
    assert slot == utc(2026, 7, 1, 0)  # 02:00 CEST
    assert slot is not None
    assert slot.tzinfo is UTC
    tokyo = calendar("0 2 * * *", "Asia/Tokyo").next_slot(utc(2026, 6, 30, 12))
    assert tokyo == utc(2026, 6, 30, 17)  # 02:00 JST on 1 July


def test_a_naive_moment_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        calendar("0 2 * * *").next_slot(datetime(2026, 7, 1))


def test_a_calendar_whose_years_are_over_has_no_next_slot() -> None:
    once = calendar("2026-06-01 12:00:00", "UTC")
    assert once.next_slot(NOW) == utc(2026, 6, 1, 12)
    assert once.next_slot(utc(2026, 6, 1, 12)) is None
    assert once.previous_slot(utc(2026, 7, 1)) == utc(2026, 6, 1, 12)
    assert once.previous_slot(utc(2026, 5, 1)) is None


def test_every_weekday_at_two_in_berlin_reads_the_same_in_cron_and_oncalendar() -> None:
    """ "Every weekday at 02:00 Europe/Berlin": 0 2 * * 1-5, or Mon..Fri *-*-* 02:00:00."""
    cron = calendar("0 2 * * 1-5")
    systemd = calendar("Mon..Fri *-*-* 02:00:00")
    first_week = slots(cron, utc(2026, 1, 3), 5)
    assert local(first_week) == [f"2026-01-{day:02d}T02:00:00+01:00" for day in range(5, 10)]
    year = slots_until(cron, NOW, utc(2027, 1, 1))
    assert len(year) == 261  # 2026 has 52 weeks and a Thursday
    assert slots_until(systemd, NOW, utc(2027, 1, 1)) == year
    assert {slot.astimezone(ZoneInfo(BERLIN)).weekday() for slot in year} == {0, 1, 2, 3, 4}
    assert {slot.astimezone(ZoneInfo(BERLIN)).hour for slot in year} == {2}


# -- the clocks change: cron follows Debian's cron --------------------------------------------
def test_a_cron_slot_in_the_skipped_hour_comes_right_after_the_gap() -> None:
    """2026-03-29 in Berlin: 02:00 CET is 03:00 CEST (01:00 UTC)."""
    at_half_past = slots(calendar("30 2 * * *"), utc(2026, 3, 27), 4)
    assert local(at_half_past) == [
        "2026-03-27T02:30:00+01:00",
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    assert at_half_past[2] == utc(2026, 3, 29, 1)
    at_two = slots(calendar("0 2 * * *"), utc(2026, 3, 28), 3)
    assert local(at_two) == [
        "2026-03-28T02:00:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:00:00+02:00",
    ]
    # Slots that meet after the gap are one: 02:00 and 03:00 are both 03:00 CEST that day.
    two_and_three = slots(calendar("0 2,3 * * *"), utc(2026, 3, 29), 3)
    assert local(two_and_three) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:00:00+02:00",
        "2026-03-30T03:00:00+02:00",
    ]


def test_a_cron_slot_in_the_repeated_hour_comes_once_the_first_time() -> None:
    """2026-10-25 in Berlin: 03:00 CEST is 02:00 CET (01:00 UTC); 02:00-03:00 happens twice."""
    at_half_past = slots(calendar("30 2 * * *"), utc(2026, 10, 23, 12), 3)
    assert local(at_half_past) == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    assert at_half_past[1] == utc(2026, 10, 25, 0, 30)
    at_two = slots(calendar("0 2 * * *"), utc(2026, 10, 24, 12), 2)
    assert local(at_two) == ["2026-10-25T02:00:00+02:00", "2026-10-26T02:00:00+01:00"]
    # From inside the second 02:00-03:00, the slot of the first is past: the next is tomorrow's.
    assert calendar("30 2 * * *").next_slot(utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 26, 1, 30)


def test_an_hourly_cron_job_follows_real_time_across_both_changes() -> None:
    hourly = calendar("0 * * * *")
    spring = slots_until(hourly, utc(2026, 3, 28, 22, 30), utc(2026, 3, 29, 22))
    autumn = slots_until(hourly, utc(2026, 10, 24, 21, 30), utc(2026, 10, 25, 23))
    for day in (spring, autumn):
        assert {later - earlier for earlier, later in pairwise(day)} == {timedelta(hours=1)}
    assert (len(spring), len(autumn)) == (23, 25)  # the local days' lengths: none lost or added
    assert local(spring[1:3]) == ["2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"]
    assert local(autumn[2:5]) == [
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T03:00:00+01:00",
    ]
    quarterly = calendar("*/15 * * * *")
    assert quarterly.next_slot(utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 25, 1, 15)


def test_cron_across_new_yorks_changes() -> None:
    """2026-03-08: 02:00 EST is 03:00 EDT; 2026-11-01: 02:00 EDT is 01:00 EST."""
    spring = slots(calendar("30 2 * * *", NEW_YORK), utc(2026, 3, 7), 3)
    assert local(spring, NEW_YORK) == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]
    autumn = slots(calendar("30 1 * * *", NEW_YORK), utc(2026, 10, 31), 3)
    assert local(autumn, NEW_YORK) == [
        "2026-10-31T01:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]
    hourly = calendar("0 * * * *", NEW_YORK)
    day = slots_until(hourly, utc(2026, 11, 1, 3, 30), utc(2026, 11, 2, 4, 30))
    assert len(day) == 25
    assert local(day[1:4], NEW_YORK) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]


# -- the clocks change: OnCalendar follows systemd --------------------------------------------
def test_an_oncalendar_slot_in_the_skipped_hour_is_no_slot() -> None:
    at_half_past = slots(calendar("*-*-* 02:30:00"), utc(2026, 3, 28), 2)
    assert local(at_half_past) == ["2026-03-28T02:30:00+01:00", "2026-03-30T02:30:00+02:00"]
    quarterly = slots(calendar("*-*-* *:00/15:00"), utc(2026, 3, 29, 0, 30), 3)
    assert local(quarterly) == [
        "2026-03-29T01:45:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:15:00+02:00",
    ]
    weekdays = slots(calendar("Mon..Fri *-*-* 02:00:00"), utc(2026, 3, 26), 3)
    assert local(weekdays) == [
        "2026-03-26T02:00:00+01:00",
        "2026-03-27T02:00:00+01:00",
        "2026-03-30T02:00:00+02:00",
    ]
    new_york = slots(calendar("*-*-* 02:30:00", NEW_YORK), utc(2026, 3, 7), 2)
    assert local(new_york, NEW_YORK) == ["2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00"]


def test_an_oncalendar_wall_time_that_happens_twice_is_one_slot_the_first() -> None:
    at_half_past = slots(calendar("*-*-* 02:30:00"), utc(2026, 10, 24, 12), 2)
    assert local(at_half_past) == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
    quarterly = calendar("*-*-* *:00/15:00")
    around = slots(quarterly, utc(2026, 10, 25, 0, 30), 3)
    assert local(around) == [
        "2026-10-25T02:45:00+02:00",
        "2026-10-25T03:00:00+01:00",
        "2026-10-25T03:15:00+01:00",
    ]
    # From inside the second 02:00-03:00 as from anywhere: its wall times were the first's.
    assert quarterly.next_slot(utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 25, 2)
    hourly = calendar("*-*-* *:00:00")
    day = slots_until(hourly, utc(2026, 10, 24, 21, 30), utc(2026, 10, 25, 23))
    assert len(day) == 24
    new_york = slots(calendar("*-*-* 01:30:00", NEW_YORK), utc(2026, 10, 31, 12), 2)
    assert local(new_york, NEW_YORK) == ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]


# -- previous and next agree ------------------------------------------------------------------
@pytest.mark.parametrize(
    "expression",
    ["30 2 * * *", "0 2,3 * * *", "0 * * * *", "*/15 * * * *", "*-*-* 02:30:00", "*:00/15"],
)
def test_previous_and_next_slots_agree_across_both_changes(expression: str) -> None:
    """From every 7th minute around each change: the previous slot is at or before it, the
    next after it, and none lies between them."""
    of = calendar(expression)
    for start in (utc(2026, 3, 28, 23), utc(2026, 10, 24, 22)):
        for step in range(0, 6 * 60, 7):
            moment = start + timedelta(minutes=step)
            previous, following = of.previous_slot(moment), of.next_slot(moment)
            assert previous is not None
            assert following is not None
            assert previous <= moment < following
            assert of.next_slot(previous) == following, (expression, moment)
            assert of.previous_slot(following) == following
