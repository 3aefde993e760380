"""What the console's pages show: HTML made from the tools' results, nothing else.

Each function takes what tools returned (JSON, as any client gets it) and returns ``Html``;
none reads the store. Times are shown in UTC; a deadline carries its instant in
``data-deadline``, from which the page's script keeps a countdown running between refreshes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from vigil.console.html import Html, esc, join, render
from vigil.switches.records import expiring_soon, pause_reaches

NAV = (
    ("/console", "Overview"),
    ("/console/switches", "Switches"),
    ("/console/sessions", "Sessions"),
    ("/console/runs", "Runs and leases"),
    ("/console/requests", "Requests"),
    ("/console/conversations", "Conversations"),
    ("/console/channels", "Channels"),
)


def parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def when(value: str | None) -> Html:
    """An instant, readable and machine-readable."""
    at = parse_time(value)
    if at is None:
        return Html("—")
    return render(
        '<time datetime="{iso}">{text}</time>', iso=value, text=at.strftime("%Y-%m-%d %H:%M:%S UTC")
    )


def span(seconds: float) -> str:
    """3 s, 2 min 5 s, 1 h 4 min, 2 d 3 h."""
    whole = int(abs(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def countdown(deadline: str | None, now: datetime) -> Html:
    """Time left until ``deadline``, kept running by the page's script."""
    at = parse_time(deadline)
    if at is None:
        return Html("—")
    left = (at - now).total_seconds()
    text = f"in {span(left)}" if left > 0 else f"due {span(left)} ago"
    return render(
        '<span class="countdown" data-deadline="{iso}">{text}</span>', iso=deadline, text=text
    )


def ago(value: str | None, now: datetime) -> Html:
    at = parse_time(value)
    if at is None:
        return Html("—")
    return render(
        '<time datetime="{iso}" title="{full}">{text} ago</time>',
        iso=value,
        full=at.strftime("%Y-%m-%d %H:%M:%S UTC"),
        text=span((now - at).total_seconds()),
    )


def link(path: str, text: Any, **query: str) -> Html:
    from urllib.parse import urlencode

    href = f"{path}?{urlencode(query)}" if query else path
    return render('<a href="{href}">{text}</a>', href=href, text=text)


def badge(state: str) -> Html:
    return render('<span class="badge state-{state}">{state}</span>', state=state)


def table(
    caption: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    empty: str,
    table_id: str | None = None,
) -> Html:
    """A table labelled for screen readers (caption, column headers), or a line saying it is
    empty."""
    body = [
        Html("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>") for row in rows
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


def fields(pairs: Iterable[tuple[str, Any]]) -> Html:
    """A description list of name and value."""
    return join(render("<dt>{name}</dt><dd>{value}</dd>", name=n, value=v) for n, v in pairs)


def verbatim(value: Any) -> Html:
    """A JSON value exactly as stored: every key in its order, nothing summarised."""
    return render(
        '<pre class="verbatim">{text}</pre>', text=json.dumps(value, indent=2, ensure_ascii=False)
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


def shown(result: Outcome, draw: Callable[[Mapping[str, Any]], Html]) -> Html:
    return problem(result) if isinstance(result, str) else draw(result)


# -- the frame ---------------------------------------------------------------------------------
def frame(
    title: str,
    body: Html,
    *,
    assets: Mapping[str, str],
    who: Mapping[str, Any] | None,
    csrf: str | None,
    here: str,
    now: datetime,
) -> Html:
    nav = Html("")
    account = Html("")
    if who is not None and csrf is not None:
        items = join(
            render(
                '<li><a href="{href}"{current}>{text}</a></li>',
                href=href,
                text=text,
                current=Html(' aria-current="page"') if href == here else Html(""),
            )
            for href, text in NAV
        )
        nav = render('<nav aria-label="Console"><ul>{items}</ul></nav>', items=items)
        account = render(
            '<div class="account"><span>{name} · {role} · {namespace}</span>'
            '<form method="post" action="/console/sign-out">'
            '<input type="hidden" name="csrf" value="{csrf}">'
            '<button type="submit">Sign out</button></form></div>',
            name=who.get("name") or who.get("principal_id"),
            role=who.get("role"),
            namespace=who.get("namespace"),
            csrf=csrf,
        )
    return render(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} · Vigil</title>"
        '<link rel="icon" href="{icon}" type="image/svg+xml">'
        '<link rel="stylesheet" href="{css}"><script src="{js}" defer></script></head>'
        '<body data-now="{now}"><a class="skip" href="#main">Skip to content</a>'
        '<header><a class="brand" href="/console">Vigil</a>{nav}{account}</header>'
        '<main id="main" tabindex="-1"><h1>{title}</h1>{body}</main></body></html>',
        title=title,
        css=assets["console.css"],
        js=assets["console.js"],
        icon=assets["icon.svg"],
        now=now.isoformat(),
        nav=nav,
        account=account,
        body=body,
    )


# How often a page's script fetches its live part again, in ms: a listing of the whole
# namespace (the overview, a switch's page) less often than a page about one thing. Around a
# deadline on the page, the script asks every two seconds whatever this says.
REFRESH_MS = 5000
REFRESH_LISTINGS_MS = 10000


def live(body: Html, every_ms: int = REFRESH_MS) -> Html:
    """The part of a page its script fetches again every few seconds, without a reload."""
    return render(
        '<div id="live" data-refresh="{every}" aria-live="polite" aria-busy="false">{body}</div>',
        every=every_ms,
        body=body,
    )


def sign_in(csrf: str, error: str | None) -> Html:
    return render(
        '{error}<form method="post" action="/console/sign-in" class="sign-in">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<label for="secret">Your secret</label>'
        '<input id="secret" name="secret" type="password" autocomplete="current-password" '
        'required autofocus spellcheck="false">'
        '<p class="hint">The bearer secret you were given when you were registered. It is '
        "checked once and never kept: the console holds a signed session for up to an hour "
        "of inactivity.</p>"
        '<button type="submit">Sign in</button></form>',
        error=problem(error) if error else Html(""),
        csrf=csrf,
    )


# -- switches ----------------------------------------------------------------------------------
def switch_rows(
    switches: Iterable[Mapping[str, Any]],
    now: datetime,
    pauses: Sequence[Mapping[str, Any]] = (),
) -> list[list[Any]]:
    """A row per switch; an armed switch under a pause in ``pauses`` says so beside its
    deadline (past it, the pause holds it)."""
    return [
        [
            link("/console/switch", s["scope"], scope=s["scope"]),
            badge(s["state"]),
            _fires(s, now, pauses),
            s["holder"] + (f" ({s['agent_id']})" if s.get("agent_id") else ""),
            s["generation"],
            ago(s["last_beat_at"], now),
        ]
        for s in switches
    ]


def _fires(switch: Mapping[str, Any], now: datetime, pauses: Sequence[Mapping[str, Any]]) -> Html:
    if switch["state"] != "armed":
        return Html("—")
    if pausing(pauses, switch):
        return join([countdown(switch["deadline"], now), badge("paused")], " ")
    return countdown(switch["deadline"], now)


SWITCH_HEADERS = ("Scope", "State", "Fires", "Holder", "Generation", "Last beat")


def switches_table(
    caption: str,
    switches: Iterable[Mapping[str, Any]],
    now: datetime,
    pauses: Sequence[Mapping[str, Any]] = (),
) -> Html:
    return table(caption, SWITCH_HEADERS, switch_rows(switches, now, pauses), "None.")


def pausing(
    pauses: Iterable[Mapping[str, Any]], switch: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """The pauses of ``pauses`` (in force, as list_pauses returns them) whose prefix begins
    the switch's scope; one until the next beat covers it only while it is not beaten since."""
    return [pause for pause in pauses if pause_reaches(pause, switch)]


def pause_rows(pauses: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            link("/console/switches", pause["scope_prefix"], scope_prefix=pause["scope_prefix"]),
            _pause_end(pause, now),
            pause["paused_by"],
            ago(pause["paused_at"], now),
            pause["reason"] or "—",
        ]
        for pause in pauses
    ]


PAUSE_HEADERS = ("Scopes beginning with", "Ends", "Set by", "Set", "Reason")


def _pause_end(pause: Mapping[str, Any], now: datetime) -> Html:
    parts = []
    if pause["until"] is not None:
        parts.append(countdown(pause["until"], now))
    if pause["until_next_beat"]:
        parts.append(Html("at each switch's next beat"))
    return join(parts, " or ")


def paused_by(pauses: Sequence[Mapping[str, Any]], now: datetime) -> Html:
    """One line on a switch's page: which pause holds it, or that none does."""
    if not pauses:
        return Html("no")
    return join(
        (
            render(
                "{badge} under {prefix}, ending {end}",
                badge=badge("paused"),
                prefix=pause["scope_prefix"],
                end=_pause_end(pause, now),
            )
            for pause in pauses
        ),
        "; ",
    )


def expiring(switch: Mapping[str, Any], now: datetime) -> bool:
    deadline = parse_time(switch.get("deadline"))
    return deadline is not None and expiring_soon(deadline, switch["expect_within_seconds"], now)


def death_rows(deaths: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            link("/console/switch", d["scope"], scope=d["scope"]),
            d["generation"],
            d["holder"],
            ago(d["fired_at"], now),
            f"{d['lateness_seconds']:.3f} s",
            "—" if d["released_count"] is None else d["released_count"],
            ", ".join(d["completed"]) or "—",
        ]
        for d in deaths
    ]


DEATH_HEADERS = ("Scope", "Generation", "Holder", "Fired", "Lateness", "Leases released", "Done")


def lease_rows(leases: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            lease["resource"],
            lease["holder"] + (f" ({lease['holder_label']})" if lease.get("holder_label") else ""),
            lease["generation"],
            countdown(lease["expires_at"], now),
        ]
        for lease in leases
    ]


# -- channels ----------------------------------------------------------------------------------
def _rules(rules: Iterable[Mapping[str, Any]]) -> str:
    return "; ".join(
        ", ".join(r["events"]) + (f" under {r['scope_prefix']}" if r["scope_prefix"] else "")
        for r in rules
    )


def channel_rows(channels: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            c["name"],
            c["kind"],
            c["target"],
            _rules(c["rules"]),
            render("{state} {why}", state=badge(c["state"]), why=c["disabled_reason"] or ""),
            ago(c["updated_at"], now),
            c["version"],
        ]
        for c in channels
    ]


CHANNEL_HEADERS = ("Name", "Kind", "Sends to", "Events", "State", "Changed", "Version")


# -- sessions and instructions -------------------------------------------------------------------
def session_rows(sessions: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            link("/console/session", s["session_id"], id=s["session_id"]),
            s["owner"],
            badge(s["status"]),
            "—" if s["progress_percent"] is None else f"{s['progress_percent']:g} %",
            _step(s),
            ago(s["last_beat_at"], now),
            badge("stale") if s["stale"] else "fresh",
        ]
        for s in sessions
    ]


SESSION_HEADERS = ("Session", "Agent", "Status", "Progress", "Step", "Last beat", "Staleness")


def _step(session: Mapping[str, Any]) -> str:
    step = session.get("current_step") or "—"
    if session.get("step_index") is not None and session.get("step_count"):
        return f"{step} ({session['step_index']}/{session['step_count']})"
    return str(step)


def instruction_rows(instructions: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            render('<span class="body">{body}</span>', body=i["body"]),
            render(
                '<span class="badge state-{state}" data-instruction="{id}">{state}</span>',
                state=i["state"],
                id=i["id"],
            ),
            i["posted_by"],
            ago(i["posted_at"], now),
            i["delivery_count"],
            ago(i["acknowledged_at"], now) if i["acknowledged_at"] else "—",
        ]
        for i in instructions
    ]


INSTRUCTION_HEADERS = ("Instruction", "State", "Posted by", "Posted", "Deliveries", "Acknowledged")


# -- requests ----------------------------------------------------------------------------------
def request_rows(requests: Iterable[Mapping[str, Any]], me: str, now: datetime) -> list[list[Any]]:
    return [
        [
            link("/console/request", first_line(r["body"]), id=r["id"]),
            r["kind"],
            badge(r["state"]),
            r["requester"],
            "you decide" if me in r["audience"] else "you asked",
            countdown(r["expires_at"], now) if r["state"] == "open" else ago(r["expires_at"], now),
        ]
        for r in requests
    ]


REQUEST_HEADERS = ("Request", "Kind", "State", "Asked by", "Yours to", "Expires")


def first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(empty)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def acknowledge_form(alert_id: str, scope: str, csrf: str) -> Html:
    """Acknowledging a fired switch's alert: its repeats stop, and it does not escalate."""
    return render(
        '<form method="post" action="/console/alerts/acknowledge">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="event_id" value="{alert}">'
        '<input type="hidden" name="scope" value="{scope}">'
        "<p>Its alert ({alert}) repeats or escalates on the channels whose rules ask for it "
        "until a person acknowledges it.</p>"
        '<button type="submit">Acknowledge the alert</button></form>',
        csrf=csrf,
        alert=alert_id,
        scope=scope,
    )


def reply_form(request: Mapping[str, Any], csrf: str) -> Html:
    """The decision a person can make on an open request, bound to the version they read: if
    the request changes before they submit (replaced, answered by someone else), the reply is
    refused instead of applied to something they did not see."""
    hidden = render(
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<input type="hidden" name="version" value="{version}">',
        csrf=csrf,
        id=request["id"],
        version=request["version"],
    )
    kind = request["kind"]
    if kind == "approval":
        controls = Html(
            '<div class="decision">'
            '<button type="submit" name="outcome" value="approved" class="approve">Approve</button>'
            '<button type="submit" name="outcome" value="denied" class="deny">Deny</button></div>'
        )
    elif kind == "task":
        controls = Html(
            '<label for="answer">Result (optional)</label>'
            '<textarea id="answer" name="answer" rows="3"></textarea><div class="decision">'
            '<button type="submit" name="outcome" value="completed">Completed</button>'
            '<button type="submit" name="outcome" value="failed">Failed</button>'
            '<button type="submit" name="outcome" value="rejected">Reject</button></div>'
        )
    elif request.get("choices"):
        options = join(
            render(
                '<div><input type="radio" name="answer" id="choice-{n}" value="{choice}" required>'
                '<label for="choice-{n}">{choice}</label></div>',
                n=n,
                choice=choice,
            )
            for n, choice in enumerate(request["choices"])
        )
        controls = render(
            "<fieldset><legend>Your answer</legend>{options}</fieldset>"
            '<button type="submit" name="outcome" value="answered">Answer</button>',
            options=options,
        )
    else:
        controls = Html(
            '<label for="answer">Your answer</label>'
            '<textarea id="answer" name="answer" rows="4" required></textarea>'
            '<button type="submit" name="outcome" value="answered">Answer</button>'
        )
    return render(
        '<form method="post" action="/console/requests/reply" class="reply">{hidden}{controls}'
        "</form>",
        hidden=hidden,
        controls=controls,
    )


def history_rows(history: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [[c["kind"], c["by"] or "(expiry)", ago(c["at"], now), c["version"]] for c in history]


# -- conversations -----------------------------------------------------------------------------
def message_list(messages: Iterable[Mapping[str, Any]], now: datetime) -> Html:
    items = [
        render(
            '<li><p class="meta"><strong>{sender}</strong> · {sent}</p>'
            '<p class="body">{body}</p>{files}</li>',
            sender=m["sender"],
            sent=ago(m["sent_at"], now),
            body=m["body"],
            files=(
                render(
                    '<p class="files">Files: {names}</p>',
                    names=", ".join(f"{a['file_name']} ({a['size']} B)" for a in m["attachments"]),
                )
                if m["attachments"]
                else Html("")
            ),
        )
        for m in messages
    ]
    if not items:
        return Html('<p class="empty">No messages you may read yet.</p>')
    return render('<ol class="messages">{items}</ol>', items=join(items))
