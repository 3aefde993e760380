"""What an event says to a person, whatever the channel: a title, labelled facts, the request's
text and bound action if any, and links to the console. The Slack and email formats only lay
this out; the values here are raw text, each format escapes them for its own markup, except the
action, which is already as every place shows it (``vigil.kit.canonical.shown_json``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from vigil.clock import span
from vigil.kit.canonical import ShownJson, edits_in_words, shown_json
from vigil.kit.events import cut
from vigil.mailboxes.events import DeliveryDeadLettered, DeliveryWaiting
from vigil.notifications.events import AlertAcknowledged, ChannelTest, Event, console_link
from vigil.requests.events import RequestData
from vigil.sessions.events import InstructionPosted, SessionStale
from vigil.switches.events import (
    SwitchFired,
    SwitchFlapping,
    SwitchRanShort,
    SwitchRecovered,
    SwitchSettled,
)

TITLE_EXCERPT = 80
_KINDS = {"question": "Question", "approval": "Approval", "task": "Task"}


@dataclass(frozen=True)
class Link:
    """A link to the console: it only opens a page, where the person acts signed in."""

    id: str  # unique within one message
    label: str
    url: str
    style: Literal["primary", "danger"] | None = None


@dataclass(frozen=True)
class Summary:
    title: str  # one line
    fields: tuple[tuple[str, str], ...]  # (label, value)
    text: str | None  # a request's body
    action: ShownJson | None  # a bound action, as a person is shown it, and its warning
    footer: str  # where it comes from: the namespace, the event's type and id
    links: tuple[Link, ...]


def when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def summarise(event: Event, console_base: str | None) -> Summary:
    """What ``event`` says; with links under ``console_base`` (none without it). A repeated or
    escalated alert says so first."""
    summary = _summarise(event, console_base)
    reminder = event.reminder
    if reminder is None:
        return summary
    if reminder.kind == "repeat":
        prefix = f"Not acknowledged (reminder {reminder.number})"
    else:
        prefix = "Escalated, not acknowledged"
    return replace(summary, title=f"{prefix}: {summary.title}")


def _summarise(event: Event, console_base: str | None) -> Summary:
    data = event.data
    url = console_link(console_base, data)
    footer = f"Vigil · namespace {event.namespace} · {event.type} · {event.id}"
    match data:
        case SwitchFired():
            more = data.dependants_count
            return Summary(
                title=f"Switch fired: {data.scope}"
                + (f", and {more} {'dependant' if more == 1 else 'dependants'}" if more else ""),
                fields=_switch_fields(data),
                text=None,
                action=None,
                footer=footer,
                links=(Link("open", "Open the switch", url),) if url else (),
            )
        case SwitchRecovered():
            return Summary(
                title=f"Switch recovered: {data.scope}",
                fields=(
                    ("Scope", data.scope),
                    ("Down for", span(data.downtime_seconds)),
                    ("Down since", when(data.deadline)),
                    ("Fired at", when(data.fired_at)),
                    ("Recovered at", when(data.recovered_at)),
                    ("Beaten by", data.recovered_by),
                    ("Generation that died", str(data.generation)),
                ),
                text=None,
                action=None,
                footer=footer,
                links=(Link("open", "Open the switch", url),) if url else (),
            )
        case SwitchFlapping():
            return Summary(
                title=f"Switch flapping: {data.scope}",
                fields=(
                    ("Scope", data.scope),
                    ("Deaths", f"{data.deaths} in {span(data.window_seconds)}"),
                    ("Latest fired at", when(data.fired_at)),
                    ("Holder", data.holder),
                    ("Agent", data.agent_id or "(none given)"),
                ),
                text=(
                    "Its deaths and recoveries are recorded but not told from now on, until it "
                    f"goes {span(data.window_seconds)} without dying."
                ),
                action=None,
                footer=footer,
                links=(Link("open", "Open the switch", url),) if url else (),
            )
        case SwitchSettled():
            return Summary(
                title=f"Switch settled: {data.scope}",
                fields=(
                    ("Scope", data.scope),
                    ("Flapping since", when(data.flapping_since)),
                    ("Settled at", when(data.settled_at)),
                ),
                text="Its deaths are told again.",
                action=None,
                footer=footer,
                links=(Link("open", "Open the switch", url),) if url else (),
            )
        case SwitchRanShort():
            return Summary(
                title=f"Run too short: {data.scope}",
                fields=(
                    ("Scope", data.scope),
                    ("Ran for", span(data.run_seconds)),
                    ("Expected at least", span(data.min_run_seconds)),
                    ("Started at", when(data.started_at)),
                    ("Finished at", when(data.finished_at)),
                    ("Holder", data.holder),
                    ("Agent", data.agent_id or "(none given)"),
                ),
                text="It finished sooner than its start beat said it could: check its work.",
                action=None,
                footer=footer,
                links=(Link("open", "Open the switch", url),) if url else (),
            )
        case AlertAcknowledged():
            what = {
                "switch.fired": "switch fired",
                "switch.flapping": "switch flapping",
                "request.opened": "request opened",
            }[data.alert_type]
            return Summary(
                title=f"Alert acknowledged: {what}" + (f": {data.scope}" if data.scope else ""),
                fields=(
                    ("Alert", data.alert_id),
                    ("Acknowledged by", data.acknowledged_by),
                    ("Acknowledged at", when(data.acknowledged_at)),
                ),
                text=None,
                action=None,
                footer=footer,
                links=(),
            )
        case RequestData():
            return Summary(
                title=_request_title(event.type, data),
                fields=_request_fields(data),
                text=data.body,
                action=None if data.action is None else shown_json(data.action),
                footer=footer,
                links=_request_links(data, url),
            )
        case SessionStale():
            return Summary(
                title=f"Session stale: {data.session_id}",
                fields=(
                    ("Session", data.session_id),
                    ("Owner", data.owner),
                    ("Status", data.status),
                    ("Last beat", when(data.last_beat_at)),
                    ("Stale after", f"{data.stale_after_seconds} s without a beat"),
                ),
                text=None,
                action=None,
                footer=footer,
                links=(Link("open", "Open the session", url),) if url else (),
            )
        case DeliveryDeadLettered():
            return Summary(
                title=f"Delivery dead-lettered in {data.mailbox_owner}'s mailbox",
                fields=(
                    ("Mailbox owner", data.mailbox_owner),
                    ("Envelope", data.envelope_id),
                    ("Kind", data.kind),
                    ("Attempts", str(data.attempts)),
                    ("Dead-lettered at", when(data.dead_lettered_at)),
                ),
                text=None,
                action=None,
                footer=footer,
                links=(),
            )
        case DeliveryWaiting():
            # An agent's own events, for no channel; summed up all the same, as every event is.
            return Summary(
                title=f"Delivery waiting in {data.address}",
                fields=(("Envelope", data.envelope_id), ("Kind", data.kind), ("From", data.sender)),
                text=None,
                action=None,
                footer=footer,
                links=(),
            )
        case InstructionPosted():
            return Summary(
                title=f"Instruction posted to session {data.session_id}",
                fields=(("Instruction", data.instruction_id), ("Posted by", data.posted_by)),
                text=None,
                action=None,
                footer=footer,
                links=(),
            )
        case ChannelTest():
            return Summary(
                title="Test notification",
                fields=(
                    ("Channel", data.channel_id),
                    ("Requested by", data.requested_by),
                    ("Requested at", when(data.requested_at)),
                ),
                text="Nothing happened: an operator asked Vigil to show that this channel works.",
                action=None,
                footer=footer,
                links=(),
            )


def _switch_fields(data: SwitchFired) -> tuple[tuple[str, str], ...]:
    fields = [
        ("Scope", data.scope),
        ("Holder", data.holder),
        ("Agent", data.agent_id or "(none given)"),
        ("Generation", str(data.generation)),
        ("Deadline", when(data.deadline)),
        ("Fired at", when(data.fired_at)),
        ("Late by", f"{data.lateness_seconds:g} s"),
        ("Actions", ", ".join(data.actions) or "(none)"),
    ]
    if data.run_started_at is not None:
        fields.append(("Run started", f"{when(data.run_started_at)}, not finished in time"))
    if data.released_count is not None:
        named = ", ".join(f"{lease.resource} (gen {lease.generation})" for lease in data.released)
        more = data.released_count - len(data.released)
        fields.append(
            (
                "Released",
                f"{data.released_count} lease(s)"
                + (f": {named}" if named else "")
                + (f" and {more} more" if more > 0 else ""),
            )
        )
    if data.dependants_count:
        named = ", ".join(data.dependants)
        unnamed = data.dependants_count - len(data.dependants)
        fields.append(
            (
                "Dependants",
                f"{data.dependants_count}: {named}"
                + (f" and {unnamed} more" if unnamed > 0 else "")
                + " (their deaths while it is down are told here, not apart)",
            )
        )
    return tuple(fields)


def _request_title(event_type: str, data: RequestData) -> str:
    kind = _KINDS[data.kind]
    what = {
        "request.opened": "opened",
        "request.expiring": "expiring soon",
        # "Approval denied", "Task completed", "Approval approved with edits"
        "request.answered": (data.outcome or "answered")
        + (" with edits" if data.asked_action is not None and data.outcome == "approved" else ""),
        "request.expired": "expired",
        "request.withdrawn": "withdrawn",
    }[event_type]
    first_line = data.body.strip().splitlines()[0] if data.body.strip() else ""
    return f"{kind} {what}" + (f": {cut(first_line, TITLE_EXCERPT)}" if first_line else "")


def _request_fields(data: RequestData) -> tuple[tuple[str, str], ...]:
    fields = [
        ("Kind", data.kind),
        ("State", data.state),
        ("Requester", data.requester),
        ("Audience", ", ".join(data.audience)),
        ("Expires at", when(data.expires_at)),
    ]
    if data.choices:
        fields.append(("Choices", ", ".join(data.choices)))
    if data.outcome is not None:
        fields.append(("Outcome", data.outcome))
    if data.answered_by is not None:
        fields.append(("Answered by", data.answered_by))
    if data.asked_action is not None and data.action is not None:
        fields.append(("Edited", edits_in_words(data.asked_action, data.action)))
    return tuple(fields)


def _request_links(data: RequestData, url: str | None) -> tuple[Link, ...]:
    if url is None:
        return ()
    if data.kind == "approval" and data.state == "open":
        # Both open the console's page, which shows the exact action before anyone decides.
        return (
            Link("approve", "Approve in the console", url, "primary"),
            Link("deny", "Deny in the console", url, "danger"),
        )
    return (Link("open", "Open the request", url),)
