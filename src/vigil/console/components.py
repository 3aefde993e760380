"""The pieces every console page is built of: times and countdowns, links, badges, tables,
facts, sections, and a tool's result or the reason it could not be had.

Each function takes what tools returned (JSON, as any client gets it) and returns ``Html``;
none reads the store. People are shown by their display names, with their ids beside them in
small type. Times are shown in UTC; a deadline carries its instant in
``data-deadline``, from which the page's script keeps a countdown running between refreshes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from vigil.clock import span as span
from vigil.console.html import Html, esc, join, render
from vigil.kit.canonical import shown_json

READABLE_TIME = "%Y-%m-%d %H:%M:%S UTC"


def parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def when(value: str | None) -> Html:
    """An instant, readable and machine-readable."""
    at = parse_time(value)
    if at is None:
        return Html("—")
    return render(
        '<time datetime="{iso}">{text}</time>', iso=value, text=at.strftime(READABLE_TIME)
    )


def hour(value: str, now: datetime) -> Html:
    """An instant within a day or so, as people say it on the clock: 14:05 UTC (with its date
    when it is not today's), the instant in full on hover."""
    return render(
        '<time datetime="{iso}" title="{full}">{text}</time>',
        iso=value,
        full=datetime.fromisoformat(value).strftime(READABLE_TIME),
        text=hour_said(value, now),
    )


def hour_said(value: str, now: datetime) -> str:
    """``hour``'s words alone."""
    at = datetime.fromisoformat(value)
    return at.strftime("%H:%M UTC" if at.date() == now.date() else "%Y-%m-%d %H:%M UTC")


def countdown(deadline: str | None, now: datetime) -> Html:
    """Time left until ``deadline``, kept running by the page's script."""
    at = parse_time(deadline)
    if at is None:
        return Html("—")
    text = from_now(at, now)
    return render(
        '<span class="countdown" data-deadline="{iso}">{text}</span>',
        iso=deadline,
        text=text if at > now else f"due {text}",
    )


def relative(value: str | None, now: datetime) -> Html:
    """An instant as people say it, from ``now``: in 52 min 12 s, or 3 s ago."""
    at = parse_time(value)
    if at is None:
        return Html("—")
    return render(
        '<time datetime="{iso}" title="{full}">{text}</time>',
        iso=value,
        full=at.strftime(READABLE_TIME),
        text=from_now(at, now),
    )


def from_now(at: datetime, now: datetime) -> str:
    """The one place a time on the console gets its direction: ahead is "in …", behind is
    "… ago" (as the page's script says it for a countdown)."""
    seconds = (at - now).total_seconds()
    return f"in {span(seconds)}" if seconds > 0 else f"{span(seconds)} ago"


def link(path: str, text: Any, **query: str) -> Html:
    href = f"{path}?{urlencode(query)}" if query else path
    return render('<a href="{href}">{text}</a>', href=href, text=text)


def views(path: str, label: str, choices: Mapping[str, str], current: str, name: str) -> Html:
    """The links that choose what a listing shows (``?name=choice``), the current one marked
    and not a link."""
    return render(
        '<nav class="views" aria-label="{label}">{links}</nav>',
        label=label,
        links=join(
            render('<span aria-current="true">{text}</span>', text=text)
            if choice == current
            else link(path, text, **{name: choice})
            for choice, text in choices.items()
        ),
    )


def ident(value: str) -> Html:
    """An id shown on its own, kept on one line so that it is copied whole."""
    return render('<span class="id">{value}</span>', value=value)


def named(principal_id: str, label: str | None, names: Mapping[str, str]) -> Html:
    """A principal as people know it: its display name, with its id in small type beside it
    (the id alone when the name is not known), and the label an instance gave itself."""
    name = names.get(principal_id)
    if name is None:
        return join([ident(principal_id), f" ({label})" if label else ""])
    return render(
        '{name}{label} <small class="meta id">{id}</small>',
        name=name,
        label=f" ({label})" if label else "",
        id=principal_id,
    )


def everyone(principal_ids: Iterable[str], names: Mapping[str, str]) -> Html:
    """Several principals, each by ``named``."""
    return join((named(p, None, names) for p in principal_ids), ", ")


def next_page(path: str, query: Mapping[str, str]) -> Html:
    """The line under a listing that leads to its next page (``query`` carries the cursor)."""
    return render("<p>{a}</p>", a=link(path, "Next page", **query))


def badge(state: str) -> Html:
    return render('<span class="badge state-{state}">{state}</span>', state=state)


def switch_state(state: str) -> Html:
    """A switch's state in the words the overview counts it by: a switch whose deadline passed
    "fired" (and, where its actions marked it failed, says so)."""
    if state == "failed":
        return render('<span class="badge state-failed">fired</span> marked failed')
    if state == "expired":
        return Html('<span class="badge state-expired">fired</span>')
    return badge(state)


def table(
    caption: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    empty: str,
    table_id: str | None = None,
) -> Html:
    """A table labelled for screen readers (caption, column headers), or a line saying it is
    empty. Each cell carries its column's header too: on a narrow screen, where each row is
    shown as a card, the stylesheet writes it before the cell."""
    body = [
        Html(
            "<tr>"
            + "".join(
                f'<td data-label="{esc(header)}">{esc(cell)}</td>'
                for header, cell in zip(headers, row, strict=True)
            )
            + "</tr>"
        )
        for row in rows
    ]
    if not body:
        return render('<p class="empty">{empty}</p>', empty=empty)
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    return render(
        "<table{ident}><caption>{caption}</caption><thead><tr>{head}</tr></thead>"
        "<tbody>{body}</tbody></table>",
        ident=Html(f' id="{esc(table_id)}"') if table_id else Html(""),
        caption=caption,
        head=Html(head),
        body=join(body),
    )


def facts(pairs: Iterable[tuple[str, Any]]) -> Html:
    """A description list of name and value."""
    return render(
        '<dl class="facts">{f}</dl>',
        f=join(render("<dt>{name}</dt><dd>{value}</dd>", name=n, value=v) for n, v in pairs),
    )


def verbatim(value: Any) -> Html:
    """A JSON value exactly as stored: every key in its order, nothing summarised."""
    return render(
        '<pre class="verbatim">{text}</pre>', text=json.dumps(value, indent=2, ensure_ascii=False)
    )


def exact_action(action: Any) -> Html:
    """An approval's action as it is redeemed (``shown_json``: canonical, nothing outside
    printable ASCII shown as itself), under the warning that names such characters if it
    holds any."""
    shown = shown_json(action)
    text = render('<pre class="verbatim">{text}</pre>', text=shown.text)
    return text if shown.warning is None else join([problem(shown.warning), text])


def action_flag(action: Any) -> Html:
    """For a listing: a line under a request whose action holds characters that could hide
    what it says; nothing for any other."""
    if action is None or shown_json(action).warning is None:
        return Html("")
    return Html(
        '<p class="problem">Its action holds hidden or lookalike characters: '
        "read it on its page before deciding.</p>"
    )


def problem(message: str) -> Html:
    return render('<p class="problem" role="alert">{message}</p>', message=message)


def section(title: str, ident: str, body: Html) -> Html:
    return render(
        '<section aria-labelledby="{ident}-title" id="{ident}">'
        '<h2 id="{ident}-title">{title}</h2>{body}</section>',
        ident=ident,
        title=title,
        body=body,
    )


Outcome = Mapping[str, Any] | str  # a tool's result, or why it could not be had
# Why a tool's result could not be had when the visitor's role may not call the tool.
FORBIDDEN = "Your role may not see this."


def shown(result: Outcome, draw: Callable[[Mapping[str, Any]], Html]) -> Html:
    return problem(result) if isinstance(result, str) else draw(result)


def listed(result: Outcome, key: str) -> list[Any]:
    """The items a listing tool returned under ``key``, or none where it was refused."""
    return [] if isinstance(result, str) else list(result[key])


def allowed(result: Outcome) -> bool:
    """Whether the visitor's role may see what a tool returned: a page of several listings
    leaves out those it may not, rather than say so under each."""
    return result != FORBIDDEN


def counted(count: int | str, one: str, many: str) -> str:
    """The words after a count: ``one`` for exactly one, ``many`` for any other."""
    return one if str(count) == "1" else many
