"""The console's pictures: each is well-formed SVG that scales by its viewBox, says in words
what it shows, places its marks in proportion to time, keeps its words for the eye out of the
drawing (so they keep the page's size), escapes its text, and draws nothing (saying so) where
there is nothing to draw."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from vigil.console.charts import (
    INSET,
    WIDTH,
    lateness_day,
    progress_bar,
    progress_over_time,
    request_ages,
    switch_day,
)
from vigil.console.html import Html

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SVG = "{http://www.w3.org/2000/svg}"


def figure(picture: Html) -> ET.Element:
    root = ET.fromstring(picture)
    assert root.tag == "figure"
    assert "style" not in picture, "the console's CSP allows no inline style"
    return root


def parsed(picture: Html) -> ET.Element:
    """The picture's drawing, which holds no text but what it says to screen readers: its
    words for the eye are the page's, beside it."""
    (root,) = figure(picture).iter(f"{SVG}svg")
    assert root.get("viewBox", "").startswith(f"0 0 {WIDTH} ")
    assert root.get("width") is None, "a fixed width could overflow a phone"
    assert list(root.iter(f"{SVG}text")) == []
    return root


def ends(picture: Html) -> list[str]:
    """The words under a timeline's two ends."""
    (row,) = (e for e in figure(picture).iter("div") if e.get("class") == "chart-ends")
    return [span.text or "" for span in row.iter("span")]


def said(root: ET.Element) -> str:
    """What the picture says to a screen reader: the title and desc it is labelled by."""
    assert root.get("role") == "img"
    labels = (root.get("aria-labelledby") or "").split()
    texts = {
        e.get("id"): (e.text or "") for e in root.iter() if e.tag in (f"{SVG}title", f"{SVG}desc")
    }
    assert labels
    assert all(label in texts for label in labels)
    return " ".join(texts[label] for label in labels)


def across(fraction: float) -> float:
    """Where a timeline draws the instant ``fraction`` of the way through its window."""
    return INSET + (WIDTH - 2 * INSET) * fraction


def marks(root: ET.Element, kind: str) -> list[ET.Element]:
    return [e for e in root.iter() if kind in (e.get("class") or "").split()]


def test_a_switchs_day_places_beats_and_deaths_in_proportion_to_time() -> None:
    picture = switch_day(
        beats=[NOW - timedelta(hours=6)],
        armed_at=NOW - timedelta(hours=18),
        deaths=[(NOW - timedelta(hours=12), 0.4)],
        deadline=None,
        now=NOW,
        ident="day",
    )
    root = parsed(picture)
    # The window is the last 24 h, so 6 h ago is three quarters across and 12 h ago half.
    (beat,) = marks(root, "beat")
    assert float(beat.get("cx") or "") == across(0.75)
    (death,) = marks(root, "death")
    assert float(death.get("x1") or "") == across(0.5)
    (armed,) = marks(root, "armed")
    assert float(armed.get("x1") or "") == across(0.25)
    text = said(root)
    assert "1 death in the last 24 hours" in text
    assert "late by 0.400 s" in text
    assert "last beat 6 h 0 min ago" in text


def test_a_switchs_day_runs_on_to_its_deadline() -> None:
    picture = switch_day(
        beats=[NOW],
        armed_at=NOW - timedelta(hours=1),
        deaths=[],
        deadline=NOW + timedelta(hours=6),
        now=NOW,
        ident="day",
    )
    root = parsed(picture)
    # 24 h behind and 6 h ahead: now is at 24/30 of the width, the deadline at its end.
    (deadline,) = marks(root, "deadline")
    assert float(deadline.get("x1") or "") == across(1)
    (now,) = marks(root, "now")
    assert float(now.get("x1") or "") == pytest.approx(across(24 / 30))
    assert "fires in 6 h 0 min" in said(root)
    assert "No death in the last 24 hours" in said(root)


def test_a_switch_with_nothing_in_its_day_draws_no_picture() -> None:
    picture = switch_day(beats=[], armed_at=None, deaths=[], deadline=None, now=NOW, ident="day")
    assert "<svg" not in picture
    assert "nothing happened" in picture.lower()


def test_lateness_is_drawn_by_when_each_fire_happened_and_how_late() -> None:
    picture = lateness_day(
        [(NOW - timedelta(hours=18), 2.0), (NOW - timedelta(hours=6), 1.0)], now=NOW, ident="late"
    )
    root = parsed(picture)
    points = marks(root, "fire")
    assert [float(p.get("cx") or "") for p in points] == [across(0.25), across(0.75)]
    # The latest (1 s) stands half as high above the axis as the latest of the day (2 s).
    base = float(marks(root, "axis")[0].get("y1") or "")
    heights = [base - float(p.get("cy") or "") for p in points]
    assert heights[1] == heights[0] / 2
    assert heights[0] > 0
    text = said(root)
    assert "2 fires in the last 24 hours" in text
    assert "latest 6 h 0 min ago, late by 1.000 s" in text
    assert "at most 2.000 s" in text
    assert ends(picture) == ["24 h ago", "now"]
    assert "up to 2.000 s late" in picture


def test_fires_minutes_apart_are_drawn_over_the_hour_they_fell_in() -> None:
    """Not one blot at "now" on a day's axis: the shortest window that holds them all."""
    fires = [(NOW - timedelta(minutes=40), 0.5), (NOW - timedelta(minutes=10), 0.5)]
    picture = lateness_day(fires, now=NOW, ident="late")
    root = parsed(picture)
    points = marks(root, "fire")
    assert [float(p.get("cx") or "") for p in points] == [
        pytest.approx(across(20 / 60)),
        pytest.approx(across(50 / 60)),
    ]
    assert "2 fires in the last hour" in said(root)
    assert ends(picture) == ["1 h ago", "now"]
    six = lateness_day([(NOW - timedelta(hours=5), 0.5)], now=NOW, ident="late")
    assert ends(six) == ["6 h ago", "now"]


def test_fires_that_were_all_on_time_divide_by_nothing() -> None:
    root = parsed(lateness_day([(NOW - timedelta(hours=1), 0.0)], now=NOW, ident="late"))
    (point,) = marks(root, "fire")
    assert float(point.get("cy") or "") == float(marks(root, "axis")[0].get("y1") or "")


def test_fires_older_than_a_day_are_left_out() -> None:
    picture = lateness_day([(NOW - timedelta(days=2), 1.0)], now=NOW, ident="late")
    assert "<svg" not in picture
    assert "No switch fired in the last 24 hours." in picture


def test_open_requests_are_drawn_longest_waiting_first_with_escaped_titles() -> None:
    picture = request_ages(
        [("Deploy <b>", NOW - timedelta(hours=1)), ("Drop & go", NOW - timedelta(hours=4))],
        now=NOW,
        ident="ages",
    )
    assert "<b>" not in picture
    root = figure(picture)
    bars = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "age"]
    widths = [float(b.get("width") or "") for b in bars]
    assert widths[1] == widths[0] / 4
    # Each bar's title is the page's text, above it, at the page's size.
    labels = [e.text or "" for e in root.iter("span") if e.get("class") == "bar-label"]
    assert labels[0].startswith("Drop & go")
    assert labels[1].startswith("Deploy <b>")
    (caption,) = root.iter("figcaption")
    assert root.get("aria-labelledby") == caption.get("id")
    assert "2 open requests" in (caption.text or "")
    assert "longest waiting 4 h 0 min" in (caption.text or "")


def test_no_open_request_draws_no_picture() -> None:
    picture = request_ages([], now=NOW, ident="ages")
    assert "<svg" not in picture


def test_a_progress_bar_fills_in_proportion() -> None:
    root = parsed(progress_bar(40, ident="bar"))
    (done,) = marks(root, "done")
    assert float(done.get("width") or "") == WIDTH * 0.4
    assert "40 % done" in said(root)


def test_no_progress_draws_no_bar() -> None:
    assert progress_bar(None, ident="bar") == ""


def test_progress_over_time_steps_through_each_change_to_now() -> None:
    points = [
        (NOW - timedelta(hours=2), 10.0),
        (NOW - timedelta(hours=1), 40.0),
        (NOW - timedelta(minutes=30), 75.0),
    ]
    root = parsed(progress_over_time(points, now=NOW, ident="trend"))
    assert len(marks(root, "change")) == 3
    (trend,) = marks(root, "trend")
    assert (trend.get("d") or "").count("V") == 2
    assert "2 changes since 2 h 0 min ago: from 10 % to 75 %, the latest 30 min 0 s ago." in said(
        root
    )


def test_one_reported_percentage_draws_no_trend() -> None:
    assert progress_over_time([(NOW, 40.0)], now=NOW, ident="trend") == ""
