"""The people's commands' screens: rich tables of the tools' results, times relative to now.

Everything shown here was written by someone else (scopes, labels, request bodies): it goes
into ``Text`` (never parsed as rich markup) after ``printable`` has made every control and
format character visible, so that no text can move the cursor, recolour the screen or hide
what it says.
"""

from __future__ import annotations

import io
import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from vigil.kit.canonical import edits_in_words, shown_json
from vigil.kit.names import REFUSED_CATEGORIES
from vigil.switches.records import expiring_soon, pause_reaches

# A section of the status screen lists at most this many rows, and says how many more.
STATUS_ROWS = 10
TEXT_WIDTH = 60
# Where no principal's display name is known: each is shown by its id.
NO_NAMES: Mapping[str, str] = MappingProxyType({})
_UNITS = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))


# -- text -----------------------------------------------------------------------------------
def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that names refuse (controls, invisible format characters
    such as bidi overrides, separators) shown as an escape (\\x1b, \\u202e): none can act on
    the terminal or hide itself. Newlines too, unless ``keep_newlines``."""
    shown = []
    for char in text:
        if (char == "\n" and keep_newlines) or unicodedata.category(char) not in REFUSED_CATEGORIES:
            shown.append(char)
        elif ord(char) < 0x100:
            shown.append(f"\\x{ord(char):02x}")
        else:
            shown.append(f"\\u{ord(char):04x}")
    return "".join(shown)


def one_line(text: str, width: int = TEXT_WIDTH) -> str:
    flat = printable(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def span(seconds: float) -> str:
    """A length of time in its two largest units: 45s, 2m 10s, 3h, 1d 4h."""
    whole = int(abs(seconds))
    parts: list[str] = []
    for unit, size in _UNITS:
        count, whole = divmod(whole, size)
        if count and len(parts) < 2:
            parts.append(f"{count}{unit}")
        elif parts:
            break  # two units at most, and never one with a gap before it: 1h, not 1h 5s
    return " ".join(parts) or "0s"


def relative(when: datetime | str | None, now: datetime) -> str:
    """``when`` from ``now``'s point of view: "in 2m 10s", "3m ago", "now"; "-" for none."""
    if when is None:
        return "-"
    moment = datetime.fromisoformat(when) if isinstance(when, str) else when
    seconds = (moment - now).total_seconds()
    if abs(seconds) < 1:
        return "now"
    return f"in {span(seconds)}" if seconds > 0 else f"{span(seconds)} ago"


def _lateness(seconds: float) -> str:
    return f"{seconds:.2f}s" if seconds < 60 else span(seconds)


def _id(value: str) -> Text:
    return Text(printable(value), overflow="fold")


def _who(principal_id: str, names: Mapping[str, str], label: str | None = None) -> Text:
    """A principal by its display name (by its id where the name is not known), with the
    label an instance gave itself."""
    name = printable(names.get(principal_id, principal_id))
    return Text(f"{name} ({printable(label)})" if label else name, overflow="fold")


def known_as(principal_id: str, names: Mapping[str, str]) -> str:
    """A principal in a line of text: its display name with its id after it, or its id."""
    shown = printable(principal_id)
    return f"{printable(names[principal_id])} ({shown})" if principal_id in names else shown


NO_WIDTHS: Mapping[str, int] = MappingProxyType({})


def _table(
    title: str,
    columns: Sequence[str],
    ids: Sequence[str] = (),
    texts: Sequence[str] = (),
    widths: Mapping[str, int] = NO_WIDTHS,
) -> Table:
    """A table whose ``ids`` columns are the last to give up width: an id is pasted into
    another command whole, so the other columns wrap first (one folds only when nothing else
    can). A ``texts`` column (a request's body, a session's step), the widest, gives up width
    first; each of its cells is one line (``_line``), cut with an ellipsis where the screen is
    narrow, the whole text one command away. ``widths`` are the least some columns keep, so
    that a word of theirs is never cut."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        if column in ids:
            table.add_column(column, overflow="fold", no_wrap=True)
        elif column in texts:
            table.add_column(column, overflow="ellipsis", min_width=12)
        else:
            table.add_column(column, min_width=widths.get(column))
    return table


def _line(value: Any) -> Text:
    """A text cell kept to one line, cut with an ellipsis if its column is narrower."""
    return Text(one_line("" if value is None else str(value)), no_wrap=True, overflow="ellipsis")


def _add(table: Table, *cells: str | Text) -> None:
    """A row whose plain cells are shown as they are, never parsed as markup."""
    table.add_row(*(cell if isinstance(cell, Text) else Text(cell) for cell in cells))


def _none(what: str) -> Text:
    return Text(f"No {what}.", style="dim")


# -- switches -------------------------------------------------------------------------------
def condition(switch: dict[str, Any], now: datetime, pauses: Sequence[dict[str, Any]] = ()) -> str:
    """fired (failed or expired), paused (armed, and a pause in force reaches it: it does not
    fire), expiring (armed, under a third of its window left), armed or disarmed."""
    if switch["state"] in ("failed", "expired"):
        return "fired"
    if switch["state"] != "armed":
        return switch["state"]  # type: ignore[no-any-return]
    if any(pause_reaches(pause, switch) for pause in pauses):
        return "paused"
    deadline = datetime.fromisoformat(switch["deadline"])
    return "expiring" if expiring_soon(deadline, switch["expect_within_seconds"], now) else "armed"


def _missed_deadline(switch: dict[str, Any]) -> datetime:
    """When a fired switch's holder missed its deadline: its last beat plus its window."""
    last = datetime.fromisoformat(switch["last_beat_at"])
    return last + timedelta(seconds=switch["expect_within_seconds"])


_ARMED_AS = {"expiring": "armed, expiring soon", "paused": "armed, held by a pause"}
_STATE_STYLE = {
    "fired": "bold red",
    "expiring": "yellow",
    "armed": "green",
    "paused": "cyan",
    "disarmed": "dim",
}


def switches_table(
    switches: Sequence[dict[str, Any]],
    now: datetime,
    pauses: Sequence[dict[str, Any]] = (),
    *,
    names: Mapping[str, str] = NO_NAMES,
) -> RenderableType:
    """The switches, each in its condition: one a pause in ``pauses`` holds says so, past its
    deadline too (the pause keeps it from firing)."""
    if not switches:
        return _none("switches")
    table = _table(
        "Switches",
        ("scope", "state", "held by", "deadline", "last beat", "window", "gen"),
        ids=("scope",),
        widths={"state": len("(failed)")},
    )
    for switch in switches:
        shown = condition(switch, now, pauses)
        if shown == "fired":
            # A calendar's slot missed is not its last beat plus its grace: vigil deaths says.
            missed = None if switch.get("schedule") else _missed_deadline(switch)
            deadline = "missed" if missed is None else f"missed {relative(missed, now)}"
            # Fired, as the summary counts it; and marked failed where its actions did so.
            fired = "fired (failed)" if switch["state"] == "failed" else "fired"
            state = Text(fired, style=_STATE_STYLE["fired"])
        else:
            deadline = relative(switch["deadline"], now)
            state = Text(_ARMED_AS.get(shown, shown), style=_STATE_STYLE[shown])
        if switch.get("flapping_since"):
            state.append(" flapping")  # its deaths are not told until it settles
        _add(
            table,
            _id(switch["scope"]),
            state,
            _who(switch["holder"], names, switch["agent_id"]),
            deadline,
            relative(switch["last_beat_at"], now),
            switch.get("schedule") or span(switch["expect_within_seconds"]),
            str(switch["generation"]),
        )
    return table


def deaths_table(
    deaths: Sequence[dict[str, Any]], now: datetime, *, names: Mapping[str, str] = NO_NAMES
) -> RenderableType:
    if not deaths:
        return _none("deaths")
    table = _table(
        "Deaths",
        ("scope", "fired", "late", "down for", "held by", "done", "released"),
        ids=("scope",),
    )
    for death in deaths:
        done = ", ".join(death["completed"]) or "-"
        if len(death["completed"]) < len(death["actions"]):
            done += " (running)"
        released = death["released_count"]
        _add(
            table,
            _id(death["scope"]),
            relative(death["fired_at"], now),
            _lateness(death["lateness_seconds"]),
            # Until a beat arms it again, it is down still.
            "still" if death.get("downtime_seconds") is None else span(death["downtime_seconds"]),
            _who(death["holder"], names, death["agent_id"]),
            done,
            "-" if released is None else str(released),
        )
    return table


# -- the audit trail ------------------------------------------------------------------------
def audit_table(
    events: Sequence[dict[str, Any]], now: datetime, *, names: Mapping[str, str] = NO_NAMES
) -> RenderableType:
    """The audit trail, newest first: when, who (by name; the deployer has none), what was
    done to what, its versions before and after, and the surface a vote came from."""
    if not events:
        return _none("audit events")
    table = _table("Audit trail", ("when", "who", "what", "target", "versions"), ids=("target",))
    for event in events:
        target = event["target"]
        shown = _who(target, names) if event["target_kind"] == "principal" else _id(target)
        before, after = event["before_version"], event["after_version"]
        versions = "" if before is None and after is None else f"{before or 'new'} -> {after}"
        what = f"{event['action'].replace('_', ' ')} ({event['target_kind']})"
        if event["via"]:
            what += f" from {event['via']}"
        _add(
            table,
            relative(event["at"], now),
            _who(event["actor"], names) if event["actor"] else "the deployer",
            what,
            shown,
            versions,
        )
    return table


# -- sessions -------------------------------------------------------------------------------
def _progress(session: dict[str, Any]) -> str:
    parts = []
    if session["stepIndex"] is not None:
        parts.append(f"step {session['stepIndex']}/{session['stepCount']}")
    if session["progressPercent"] is not None:
        parts.append(f"{session['progressPercent']:g}%")
    return ", ".join(parts) or "-"


def sessions_table(
    sessions: Sequence[dict[str, Any]], now: datetime, *, names: Mapping[str, str] = NO_NAMES
) -> RenderableType:
    if not sessions:
        return _none("sessions")
    table = _table(
        "Sessions",
        ("session", "agent", "status", "progress", "current step", "last beat"),
        ids=("session",),
        texts=("current step",),
    )
    for session in sessions:
        last_beat = Text(relative(session["lastBeatAt"], now))
        if session["stale"]:
            last_beat.append(" (stale)", style="bold red")
        status = session["status"]
        if session["endedAt"] is not None:
            status = f"ended {session['outcome']} {relative(session['endedAt'], now)}"
        _add(
            table,
            _id(session["sessionId"]),
            _who(session["owner"], names),
            status,
            _progress(session),
            _line(session["currentStep"]),
            last_beat,
        )
    return table


# -- requests -------------------------------------------------------------------------------
def requests_table(
    requests: Sequence[dict[str, Any]],
    now: datetime,
    *,
    names: Mapping[str, str] = NO_NAMES,
    me: str = "",
) -> RenderableType:
    """The requests, each by its id (whole, to paste into vigil approve), what it is (with its
    state once it is not open, and ``me``'s vote on it), who asked it, who has it in hand
    (a column only where one of them is claimed) and its text."""
    from vigil.requests.views import VERBS, vote_of

    if not requests:
        return _none("requests")
    held = any(request.get("claim") for request in requests)
    columns = ("id", "what", "from", *(("in hand",) if held else ()), "asked", "expires", "text")
    table = _table("Requests", columns, ids=("id",), texts=("text",))
    for request in requests:
        what = request["kind"]
        expires = "-"
        if request["state"] == "open":
            expires = relative(request["expires_at"], now)
        else:
            what += f", {request['state']}"
        vote = vote_of(request, me)
        if vote is not None:
            what += f", you voted {VERBS[vote['outcome']]}"
        in_hand = (holder(request.get("claim"), now, names, me),) if held else ()
        _add(
            table,
            _id(request["id"]),
            what,
            _who(request["requester"], names),
            *in_hand,
            relative(request["asked_at"], now),
            expires,
            _line(request["body"]),
        )
    return table


# -- claims and routing ---------------------------------------------------------------------
def clock_time(when: str, now: datetime) -> str:
    """An instant within a day or so, on the clock: 14:05 UTC (with its date if not today)."""
    moment = datetime.fromisoformat(when).astimezone(UTC)
    same_day = moment.date() == now.astimezone(UTC).date()
    return moment.strftime("%H:%M UTC" if same_day else "%Y-%m-%d %H:%M UTC")


def holder(
    claim: Mapping[str, Any] | None, now: datetime, names: Mapping[str, str], me: str = ""
) -> Text:
    """For a listing: who has a request in hand, until when."""
    if not claim:
        return Text("-")
    who = "you" if claim["by"] == me else printable(names.get(claim["by"], claim["by"]))
    return Text(f"{who} until {clock_time(claim['until'], now)}", overflow="fold")


def claim_line(claim: Mapping[str, Any], now: datetime, names: Mapping[str, str]) -> str:
    """Who has a request in hand, in a sentence: In the hands of Pat (per_…) until 14:05 UTC
    (in 30m), assigned by routing rule 2."""
    rule = f", assigned by routing rule {claim['rule']}" if claim.get("rule") else ""
    return (
        f"In the hands of {known_as(claim['by'], names)} until "
        f"{clock_time(claim['until'], now)} ({relative(claim['until'], now)}){rule}."
    )


def claim_change(change: Mapping[str, Any], now: datetime, names: Mapping[str, str]) -> str:
    """A claim's change in words: Pat (per_…) claimed it until 14:05 UTC; Pat released it;
    Assigned to Sue (per_…) by routing rule 1, until 15:00 UTC."""
    held = change.get("claim") or {}
    if change["kind"] == "released":
        return f"{known_as(change['by'], names)} released it"
    if change["kind"] == "claimed":
        return f"{known_as(change['by'], names)} claimed it until {clock_time(held['until'], now)}"
    return (
        f"Assigned to {known_as(held['by'], names)} by routing rule {held.get('rule')}, "
        f"until {clock_time(held['until'], now)}"
    )


def rule_words(rule: Mapping[str, Any], names: Mapping[str, str] = NO_NAMES) -> str:
    """A routing rule in words, with names: approvals from deployer (agt_…) whose action's op
    is "pay": the first of Pat (per_…), Sue (per_…) who may decide it, for 60 minutes."""
    what = f"{rule['kind']}s" if rule.get("kind") else "requests"
    if rule.get("asker"):
        what += f" from {known_as(rule['asker'], names)}"
    if rule.get("op") is not None:
        what += f" whose action's op is {printable(json.dumps(rule['op']))}"
    people = ", ".join(known_as(p, names) for p in rule["to"])
    if len(rule["to"]) == 1:
        whom = f"{people}, if they may decide it"
    elif rule.get("least_recent"):
        whom = f"whichever of {people} was assigned longest ago"
    else:
        whom = f"the first of {people} who may decide it"
    minutes = rule["minutes"]
    return f"{what}: {whom}, for {_plural(minutes, 'minute')}"


def routing_text(found: Mapping[str, Any], names: Mapping[str, str] = NO_NAMES) -> str:
    """The namespace's routing rules in words, numbered, the first that picks a request
    deciding; and their version."""
    rules = found["rules"]
    if not rules:
        return (
            f"No routing rules (version {found['version']}): new requests are assigned to no "
            "one, and any of their deciders may claim them (vigil claim)."
        )
    lines = [f"Routing rules, version {found['version']} (the first that picks a request decides):"]
    lines += [f"{n}. {rule_words(rule, names)}" for n, rule in enumerate(rules, 1)]
    return "\n".join(lines)


def request_text(
    request: dict[str, Any], now: datetime, *, names: Mapping[str, str] = NO_NAMES
) -> str:
    """A request for a person deciding it: who asks (by name and id), what, and the exact
    action it binds."""
    lines = [
        f"{request['kind']} {printable(request['id'])} from "
        f"{known_as(request['requester'], names)}, "
        f"asked {relative(request['asked_at'], now)}, "
        f"expires {relative(request['expires_at'], now)}",
    ]
    if request.get("claim"):
        lines += [claim_line(request["claim"], now, names)]
    lines += ["", printable(request["body"], keep_newlines=True)]
    if request["choices"]:
        lines += ["", "choices: " + ", ".join(json.dumps(c) for c in request["choices"])]
    if request["kind"] == "approval":
        if request["action"] is None:
            lines += ["", "It binds no action: approving it only communicates a decision."]
        else:
            shown = shown_json(request["action"])
            lines += ["", "The action it binds, exactly:"]
            if shown.warning is not None:
                lines += [f"Warning: {shown.warning}"]
            lines += [shown.text]
        for change in request.get("history", ()):
            if change.get("via") == "standing" and change["by"]:
                lines += [
                    f"Approved at once by {known_as(change['by'], names)}'s standing approval "
                    f"{printable(change.get('standing') or '?')}"
                ]
            if change.get("edits"):
                who = known_as(change["by"], names) if change["by"] else "?"
                said = edits_in_words(change["edited_from"] or {}, change["edits"])
                lines += [f"Edited by {who} before approving: {said}"]
        editable = (request.get("policy") or {}).get("editable")
        if editable and request["state"] == "open":
            lines += [
                "You may change "
                + ", ".join(editable)
                + " before approving: vigil approve --edit MEMBER=JSON"
            ]
    from vigil.requests.records import CLAIM_CHANGES

    claims = [
        claim_change(change, now, names)
        for change in request.get("history", ())
        if change["kind"] in CLAIM_CHANGES
    ]
    if claims:
        lines += ["", "Its claims: " + "; ".join(claims) + "."]
    return "\n".join(lines)


# -- standing approvals ---------------------------------------------------------------------
def _plural(count: float, unit: str) -> str:
    return f"{count:g} {unit}" + ("" if count == 1 else "s")


def free_words(free: Mapping[str, Mapping[str, Any]]) -> str:
    """A standing approval's free members and their bounds in words (amount a number from 0
    to 1000; env one of "staging", "dev"), or "-" where every member is fixed."""
    from vigil.requests.standing import Bound

    return (
        printable("; ".join(f"{name} {Bound(**bound).describe()}" for name, bound in free.items()))
        or "-"
    )


def standing_terms(
    hours: float,
    uses: int | None,
    asker: str | None,
    free: Mapping[str, Mapping[str, Any]],
    names: Mapping[str, str] = NO_NAMES,
) -> str:
    """What a standing approval stands for, in words: for 8 hours, at most 5 uses, for
    deployer (agt_…) only: this action, with amount a number from 0 to 1000."""
    times = "any number of uses" if uses is None else f"at most {_plural(uses, 'use')}"
    whom = "for any agent" if asker is None else f"for {known_as(asker, names)} only"
    shape = "exactly this action" if not free else f"this action, with {free_words(free)}"
    return f"for {_plural(hours, 'hour')}, {times}, {whom}: {shape}"


def standing_table(
    standing: Sequence[dict[str, Any]], now: datetime, *, names: Mapping[str, str] = NO_NAMES
) -> RenderableType:
    """Standing approvals, each by its id (whole, to paste into vigil standing revoke): the
    agent it answers and who granted it, by name, the action as approved with its free
    members' bounds, its uses and when it expires."""
    from vigil.kit.canonical import canonical

    if not standing:
        return _none("standing approvals")
    columns = ("id", "asker", "granted by", "action", "free", "uses", "expires")
    table = _table("Standing approvals", columns, ids=("id",), texts=("action",))
    for each in standing:
        uses = f"{each['used']} of {each['uses']}" if each["uses"] else f"{each['used']}, no limit"
        _add(
            table,
            _id(each["id"]),
            "any agent" if each["asker"] is None else _who(each["asker"], names),
            _who(each["grantor"], names),
            _line(canonical(each["action"]).decode()),
            free_words(each["free"]),
            uses,
            relative(each["expires_at"], now),
        )
    return table


# -- profiles -------------------------------------------------------------------------------
def profiles_table(profiles: Sequence[dict[str, str]]) -> RenderableType:
    if not profiles:
        return _none("profiles")
    table = _table("Profiles", ("name", "endpoint"), ids=("endpoint",))
    for profile in profiles:
        _add(table, profile["name"], _id(profile["endpoint"]))
    return table


# -- the status screen ----------------------------------------------------------------------
@dataclass(frozen=True)
class Overview:
    """What ``vigil status`` and ``vigil watch`` show: every switch listed, the stale
    sessions, and the open requests whose audience includes the caller."""

    switches: list[dict[str, Any]]
    stale_sessions: list[dict[str, Any]]
    waiting: list[dict[str, Any]]
    truncated: bool = False  # the switches were more than one screen's walk reads
    pauses: list[dict[str, Any]] = field(default_factory=list)  # in force
    names: Mapping[str, str] = field(default_factory=dict)  # display names, by principal id

    def as_json(self) -> dict[str, Any]:
        return {
            "switches": self.switches,
            "stale_sessions": self.stale_sessions,
            "waiting_requests": self.waiting,
            "pauses": self.pauses,
        }


def _capped(rows: list[dict[str, Any]], what: str) -> tuple[list[dict[str, Any]], Text | None]:
    if len(rows) <= STATUS_ROWS:
        return rows, None
    more = len(rows) - STATUS_ROWS
    return rows[:STATUS_ROWS], Text(f"… and {more} more: see `vigil {what}`", style="dim")


def status_screen(
    overview: Overview, now: datetime, heading: str, problem: str | None = None
) -> Group:
    by_condition: dict[str, list[dict[str, Any]]] = {}
    for switch in overview.switches:
        by_condition.setdefault(condition(switch, now, overview.pauses), []).append(switch)
    expiring = sorted(by_condition.get("expiring", []), key=lambda s: str(s["deadline"]))
    fired = sorted(by_condition.get("fired", []), key=_missed_deadline, reverse=True)
    paused = len(by_condition.get("paused", []))
    armed = len(by_condition.get("armed", [])) + len(expiring) + paused
    parts: list[RenderableType] = [Text(printable(heading), style="bold")]
    if problem is not None:
        parts.append(Text(f"cannot refresh: {printable(problem)}", style="bold red"))
    summary = f"Switches: {armed} armed, {len(expiring)} expiring soon, {len(fired)} fired"
    if paused:
        summary += f", {paused} held by a pause"
    if overview.truncated:
        summary += " (of the first switches only: see `vigil switches --all`)"
    parts.append(Text(summary))
    attention, more = _capped(expiring + fired, "switches")
    if attention:
        parts.append(switches_table(attention, now, overview.pauses, names=overview.names))
    if more:
        parts.append(more)
    for title, rows, table, command in (
        ("Stale sessions", overview.stale_sessions, sessions_table, "sessions --stale"),
        ("Waiting for you", overview.waiting, requests_table, "requests"),
    ):
        parts.append(Text(f"\n{title}: {len(rows)}"))
        shown, more = _capped(rows, command)
        if shown:
            parts.append(table(shown, now, names=overview.names))
        if more:
            parts.append(more)
    return Group(*parts)


# -- output ---------------------------------------------------------------------------------
def console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def to_text(renderable: RenderableType, width: int = 160) -> str:
    """What ``renderable`` looks like on a plain terminal ``width`` columns wide."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, highlight=False).print(renderable)
    return out.getvalue()
