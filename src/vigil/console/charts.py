"""The console's pictures, drawn here as inline SVG: a switch's day (its beats, arming, deaths
and deadline), fire lateness over a day, open requests by how long they have waited, and a
session's progress.

Each function takes plain data and ``now`` and returns ``Html``: a ``<figure>`` holding an
``<svg>`` sized by its viewBox alone (the stylesheet makes it as wide as its column, so it
scales to a phone), with a title and a description that say in words what it shows, for screen
readers; where there is nothing to draw, a line saying so instead. Its words for the eye (a
timeline's ends, a scale, a bar's title) are HTML beside the picture, so that they keep the
page's own size at any width instead of scaling with the drawing. Colours come from classes in
the stylesheet, since the console's CSP allows no inline style.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from vigil.console.components import from_now, span
from vigil.console.html import Html, join, render

NOTHING = Html("")

WIDTH = 1000
DAY = timedelta(days=1)
# The windows a day of fires is drawn over: the shortest that holds them all, so that fires
# minutes apart are not one blot at "now".
WINDOWS = (timedelta(hours=1), timedelta(hours=6), DAY)
# A request's bar, in the viewBox's units (its height on the page is the stylesheet's).
BAR = 20


# A timeline's ends stand this far in from the picture's edges, so that a mark at either
# end (now, a deadline) is drawn whole.
INSET = 12


def _x(at: datetime, start: datetime, end: datetime) -> float:
    window = (end - start).total_seconds()
    return INSET + (WIDTH - 2 * INSET) * (at - start).total_seconds() / window


def _figure(
    ident: str,
    height: int,
    title: str,
    description: str,
    marks: Html,
    below: Html = NOTHING,
    above: Html = NOTHING,
) -> Html:
    return render(
        '<figure class="chart">{above}'
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {w} {h}" '
        'preserveAspectRatio="xMidYMid meet" role="img" '
        'aria-labelledby="{i}-title {i}-desc">'
        '<title id="{i}-title">{title}</title><desc id="{i}-desc">{desc}</desc>{marks}</svg>'
        "{below}</figure>",
        w=WIDTH,
        h=height,
        i=ident,
        title=title,
        desc=description,
        marks=marks,
        above=above,
        below=below,
    )


def _empty(text: str) -> Html:
    return render('<p class="empty">{text}</p>', text=text)


def _ends(left: str, right: str) -> Html:
    """The words under a timeline's two ends (the picture says them to screen readers)."""
    return render(
        '<div class="chart-ends" aria-hidden="true"><span>{left}</span><span>{right}</span></div>',
        left=left,
        right=right,
    )


def _scale(text: str) -> Html:
    """The words above a picture that say what its top stands for."""
    return render('<div class="chart-scale" aria-hidden="true">{text}</div>', text=text)


def _fired(deaths: Sequence[tuple[datetime, float]], now: datetime) -> str:
    """How many fired in the day before ``now``, and when and how late the latest did."""
    if not deaths:
        return "No death in the last 24 hours."
    at, late = max(deaths)
    many = "death" if len(deaths) == 1 else "deaths"
    return (
        f"{len(deaths)} {many} in the last 24 hours, latest {from_now(at, now)}, "
        f"late by {late:.3f} s."
    )


def switch_day(
    beats: Sequence[datetime],
    armed_at: datetime | None,
    deaths: Sequence[tuple[datetime, float]],
    deadline: datetime | None,
    now: datetime,
    ident: str,
) -> Html:
    """A switch's last 24 h on one line: its beats (dots), when it was armed, each death (a
    red stroke, at its fire time) and, while armed, on to its deadline (at most a day
    ahead)."""
    start = now - DAY
    end = now if deadline is None else min(max(deadline, now), now + DAY)
    day_beats = [b for b in beats if start <= b <= now]
    day_deaths = [(at, late) for at, late in deaths if start <= at <= now]
    armed = armed_at if armed_at is not None and start <= armed_at <= now else None
    if not day_beats and not day_deaths and armed is None and deadline is None:
        return _empty("Nothing happened to this switch in the last 24 hours.")
    height = 60
    middle = 30

    def stroke(kind: str, at: datetime) -> Html:
        x = _x(at, start, end)
        return render('<line class="{k}" x1="{x}" x2="{x}" y1="4" y2="56"/>', k=kind, x=f"{x:g}")

    drawn = [
        render('<line class="axis" x1="0" x2="{w}" y1="{m}" y2="{m}"/>', w=WIDTH, m=middle),
        stroke("now", now),
    ]
    if armed is not None:
        drawn.append(stroke("armed", armed))
    drawn += [stroke("death", at) for at, _ in day_deaths]
    drawn += [
        render(
            '<circle class="beat" cx="{x}" cy="{m}" r="7"/>', x=f"{_x(b, start, end):g}", m=middle
        )
        for b in day_beats
    ]
    words = [_fired(day_deaths, now)]
    if day_beats:
        half_hours = len({int(b.timestamp()) // 1800 for b in day_beats})
        words.append(f"It beat in {half_hours} of the last 48 half hours.")
    if beats:
        words.append(f"Its last beat {from_now(max(beats), now)}.")
    if armed is not None:
        words.append(f"Armed {from_now(armed, now)}.")
    if deadline is not None:
        drawn.append(stroke("deadline", min(max(deadline, now), end)))
        words.append(f"It {'fires' if deadline > now else 'was due'} {from_now(deadline, now)}.")
    ahead = "now" if end == now else from_now(end, now)
    return _figure(
        ident, height, "Its last 24 hours", " ".join(words), join(drawn), _ends("24 h ago", ahead)
    )


def lateness_day(fires: Sequence[tuple[datetime, float]], now: datetime, ident: str) -> Html:
    """Each fire of the last 24 h as a dot: across by when it fired, up by how late it was
    (the latest of the day at the top); over the last hour, 6 hours or day, the shortest that
    holds them all."""
    day = sorted((at, late) for at, late in fires if now - DAY <= at <= now)
    if not day:
        return _empty("No switch fired in the last 24 hours.")
    window = next(w for w in WINDOWS if day[0][0] >= now - w)
    start = now - window
    top, base = 12, 120
    height = base + 12
    worst = max(late for _, late in day)

    def y(late: float) -> float:
        return base if worst <= 0 else base - (base - top) * late / worst

    dots = [
        render(
            '<circle class="fire" cx="{x}" cy="{y}" r="8"/>',
            x=f"{_x(at, start, now):g}",
            y=f"{y(late):g}",
        )
        for at, late in day
    ]
    at, late = day[-1]
    many = "fire" if len(day) == 1 else "fires"
    over = _window_words(window)
    description = (
        f"{len(day)} {many} in the last {over}, latest {from_now(at, now)}, "
        f"late by {late:.3f} s; at most {worst:.3f} s."
    )
    axis = render('<line class="axis" x1="0" x2="{w}" y1="{b}" y2="{b}"/>', w=WIDTH, b=base)
    return _figure(
        ident,
        height,
        f"How late switches fired, over the last {over}",
        description,
        join([axis, *dots]),
        _ends(f"{_window_words(window, 'h')} ago", "now"),
        _scale(f"up to {worst:.3f} s late"),
    )


def _window_words(window: timedelta, unit: str = "hours") -> str:
    hours = int(window.total_seconds() // 3600)
    if unit == "h":
        return f"{hours} h"
    return "hour" if hours == 1 else f"{hours} hours"


def request_ages(requests: Sequence[tuple[str, datetime]], now: datetime, ident: str) -> Html:
    """Each open request (its title and when it was asked) as a bar as long as it has
    waited, the longest waiting first and longest drawn; each bar's title and age above it,
    as text of the page."""
    if not requests:
        return _empty("No request is open.")
    waited = sorted(((now - asked).total_seconds(), title) for title, asked in requests)[::-1]
    longest = waited[0][0]
    rows = []
    for seconds, title in waited:
        width = 0 if longest <= 0 else WIDTH * max(seconds, 0) / longest
        rows.append(
            render(
                '<li><span class="bar-label">{title} · {age}</span>'
                '<svg xmlns="http://www.w3.org/2000/svg" class="bar" viewBox="0 0 {w} {h}" '
                'preserveAspectRatio="none" aria-hidden="true">'
                '<rect class="age" x="0" y="0" width="{bw}" height="{h}"/></svg></li>',
                title=title,
                age=span(seconds),
                w=WIDTH,
                h=BAR,
                bw=f"{width:g}",
            )
        )
    many = "open request" if len(waited) == 1 else "open requests"
    description = (
        f"{len(waited)} {many}; longest waiting {span(longest)}, newest {span(waited[-1][0])}."
    )
    return render(
        '<figure class="bars" id="{i}-bars" aria-labelledby="{i}-desc">'
        '<figcaption class="visually-hidden" id="{i}-desc">{desc}</figcaption>'
        "<ol>{rows}</ol></figure>",
        i=ident,
        desc=description,
        rows=join(rows),
    )


def progress_bar(percent: float | None, ident: str) -> Html:
    """A session's latest progress as a bar filled to its percentage (nothing without one)."""
    if percent is None:
        return Html("")
    whole = min(max(percent, 0.0), 100.0)
    return _figure(
        ident,
        24,
        "Progress",
        f"{whole:g} % done.",
        render(
            '<rect class="todo" x="0" y="0" width="{w}" height="24"/>'
            '<rect class="done" x="0" y="0" width="{d}" height="24"/>',
            w=WIDTH,
            d=f"{WIDTH * whole / 100:g}",
        ),
    )


def progress_over_time(points: Sequence[tuple[datetime, float]], now: datetime, ident: str) -> Html:
    """A session's progress as a step line from its first reported percentage to now, a dot at
    each change (nothing with fewer than two: the bar says it)."""
    if len(points) < 2:
        return Html("")
    start = points[0][0]
    end = max(now, points[-1][0] + timedelta(seconds=1))
    top, base = 12, 120
    height = base + 12

    def y(percent: float) -> float:
        return base - (base - top) * min(max(percent, 0.0), 100.0) / 100

    xs = [_x(at, start, end) for at, _ in points]
    path = [f"M{xs[0]:g} {y(points[0][1]):g}"]
    for x, (_, percent) in zip(xs[1:], points[1:], strict=True):
        path.append(f"H{x:g} V{y(percent):g}")
    path.append(f"H{_x(end, start, end):g}")
    dots = [
        render('<circle class="change" cx="{x}" cy="{y}" r="6"/>', x=f"{x:g}", y=f"{y(p):g}")
        for x, (_, p) in zip(xs, points, strict=True)
    ]
    axis = render('<line class="axis" x1="0" x2="{w}" y1="{b}" y2="{b}"/>', w=WIDTH, b=base)
    description = (
        f"{len(points) - 1} changes since {from_now(start, now)}: "
        f"from {points[0][1]:g} % to {points[-1][1]:g} %, "
        f"the latest {from_now(points[-1][0], now)}."
    )
    return _figure(
        ident,
        height,
        "Progress over time",
        description,
        join([axis, render('<path class="trend" d="{d}"/>', d=" ".join(path)), *dots]),
        _ends(from_now(start, now), "now"),
        _scale("100 %"),
    )
