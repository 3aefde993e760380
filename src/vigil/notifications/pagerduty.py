"""An event as a PagerDuty Events API v2 message.

What pages is an alert event, posted to ``/v2/enqueue`` and keyed by its ``dedup_key``: one
PagerDuty alert per thing that went wrong, opened by ``trigger`` and moved on by
``acknowledge`` or ``resolve`` with the same key. What only informs is a change event, posted to
``/v2/change/enqueue``: it shows on the service's timeline and pages nobody.

==========================  ===========  ========================================  ========
event                       action       dedup_key                                 severity
==========================  ===========  ========================================  ========
switch.fired                trigger      its id; a reminder's, the first alert's   critical
request.opened              trigger      its id; a reminder's, the first alert's   error
request.expiring            trigger      the request.opened id                     error
session.stale               trigger      its id                                    warning
delivery.dead_lettered      trigger      its id                                    error
switch.recovered            resolve      the id of the switch.fired it ends
request.answered, expired,  resolve      the request.opened id
withdrawn
alert.acknowledged          acknowledge  the acknowledged alert's id
channel.test, and the rest  change
==========================  ===========  ========================================  ========

A request is one PagerDuty alert from the moment it opens to the moment it ends, keyed by the
id of its request.opened event (``event_id(namespace, "request.opened", request_id)``),
whichever event tells of it. request.expiring triggers that key again: on the open alert it
only adds to its log (an acknowledged alert stays quiet), and where the opening was not sent
(a rule that takes only request.expiring) it opens the alert, which the request's end then
resolves.

The severity sets the incident's urgency where the service's urgency follows severity:
critical and error are high urgency (an agent is down, someone must decide, a message is
lost), warning is low (a session went quiet, and may beat again).

Every documented limit is kept: a summary of at most 1024 characters (cut with "…"), a
dedup_key of at most 255 (an event id has 30), and a body of at most 512 KB, for which an
oversized event's data gives up its largest values, and names them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from vigil.kit.events import cut, event_id
from vigil.mailboxes.events import DeliveryDeadLettered, DeliveryWaiting
from vigil.notifications.events import AlertAcknowledged, Event
from vigil.notifications.summary import Summary, summarise
from vigil.requests.events import RequestData
from vigil.sessions.events import InstructionPosted, SessionStale
from vigil.switches.events import SwitchFired, SwitchFlapping, SwitchRecovered, SwitchSettled

# The Events API's host is the account's service region's.
US_HOST = "https://events.pagerduty.com"
EU_HOST = "https://events.eu.pagerduty.com"
ALERT_PATH = "/v2/enqueue"
CHANGE_PATH = "/v2/change/enqueue"

CLIENT = "Vigil"
MAX_SUMMARY = 1024
MAX_DEDUP_KEY = 255
# "512 KB", counted on the body as sent: JSON with every non-ASCII character escaped.
MAX_BODY_BYTES = 512 * 1000

Severity = Literal["critical", "error", "warning", "info"]
EventAction = Literal["trigger", "acknowledge", "resolve"]

SEVERITIES: dict[str, Severity] = {
    "switch.fired": "critical",
    "switch.flapping": "critical",
    "request.opened": "error",
    "request.expiring": "error",
    "session.stale": "warning",
    "delivery.dead_lettered": "error",
}
# The request events after which nobody can answer the request.
REQUEST_ENDS = frozenset({"request.answered", "request.expired", "request.withdrawn"})
TOO_LARGE = "Too large for PagerDuty: the values named in left_out are in the console."


@dataclass(frozen=True)
class PagerDutyMessage:
    """One POST to the Events API: ``path`` under the region's host, and its JSON ``body``."""

    path: str
    body: dict[str, Any]


def request_alert_key(namespace: str, request_id: str) -> str:
    """The dedup_key of a request's alert: the id of its request.opened event."""
    return event_id(namespace, "request.opened", request_id)


def pagerduty_message(event: Event, routing_key: str, console_base: str | None) -> PagerDutyMessage:
    """The Events API v2 message for ``event``, sent with ``routing_key`` (the 32-character key
    of an Events API v2 integration), with links to the console under ``console_base`` (none
    without)."""
    data = event.data
    match data:
        case AlertAcknowledged():
            return _follow_up(routing_key, "acknowledge", data.alert_id)
        case SwitchRecovered():
            return _follow_up(routing_key, "resolve", data.fired_event_id)
        case SwitchSettled():
            return _follow_up(routing_key, "resolve", data.flapping_event_id)
        case RequestData() if event.type in REQUEST_ENDS:
            key = request_alert_key(event.namespace, data.request_id)
            return _follow_up(routing_key, "resolve", key)
        case RequestData() if event.type == "request.expiring":
            key = request_alert_key(event.namespace, data.request_id)
            return _trigger(event, routing_key, console_base, key)
        case (
            SwitchFired()
            | SwitchFlapping()
            | RequestData()
            | SessionStale()
            | DeliveryDeadLettered()
        ):
            # A repeat or an escalation is the first alert again, not an alert of its own.
            key = event.reminder.of if event.reminder is not None else event.id
            return _trigger(event, routing_key, console_base, key)
        case _:
            return _change(event, routing_key, console_base)


def _follow_up(routing_key: str, action: EventAction, dedup_key: str) -> PagerDutyMessage:
    """An acknowledge or a resolve: its key is all PagerDuty reads of it."""
    body = {"routing_key": routing_key, "event_action": action, "dedup_key": dedup_key}
    return PagerDutyMessage(ALERT_PATH, body)


def _trigger(
    event: Event, routing_key: str, console_base: str | None, dedup_key: str
) -> PagerDutyMessage:
    summary = summarise(event, console_base)
    source, component = _subject(event)
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": dedup_key,
        "payload": {
            "summary": _one_line(summary.title),
            "source": source,
            "severity": SEVERITIES[event.type],
            "timestamp": event.occurred_at.isoformat(),
            "component": component,
            "group": event.namespace,
            "class": event.type,
            "custom_details": _details(event),
        },
        "client": CLIENT,
    }
    if console_base is not None:
        body["client_url"] = f"{console_base.rstrip('/')}/console"
    return PagerDutyMessage(ALERT_PATH, _fit(_with_links(body, summary)))


def _change(event: Event, routing_key: str, console_base: str | None) -> PagerDutyMessage:
    """A change event: on the service's timeline, paging nobody."""
    summary = summarise(event, console_base)
    source, _ = _subject(event)
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "payload": {
            "summary": _one_line(summary.title),
            "source": source,
            "timestamp": event.occurred_at.isoformat(),
            "custom_details": _details(event),
        },
    }
    return PagerDutyMessage(CHANGE_PATH, _fit(_with_links(body, summary)))


def _subject(event: Event) -> tuple[str, str]:
    """``(source, component)``: the agent or person whose trouble it is, and the thing of
    theirs it concerns."""
    data = event.data
    match data:
        case SwitchFired() | SwitchFlapping():
            return data.holder, data.scope
        case RequestData():
            return data.requester, data.request_id
        case SessionStale():
            return data.owner, data.session_id
        case DeliveryDeadLettered() | DeliveryWaiting():
            return data.mailbox_owner, data.envelope_id
        case InstructionPosted():
            return data.session_owner, data.session_id
        case _:
            return f"vigil/{event.namespace}", event.type


def _details(event: Event) -> dict[str, Any]:
    """The alert's details in PagerDuty: the event's data, as a signed webhook carries it, and
    what the event is."""
    details: dict[str, Any] = {
        "event_id": event.id,
        "event_type": event.type,
        "namespace": event.namespace,
    }
    if event.reminder is not None:
        details["reminder"] = event.reminder.model_dump(mode="json")
    if event.console_url is not None:
        details["console_url"] = event.console_url
    details["data"] = event.data.model_dump(mode="json")
    return details


def _with_links(body: dict[str, Any], summary: Summary) -> dict[str, Any]:
    """``body`` with the summary's links to the console, one per page."""
    links: list[dict[str, str]] = []
    for link in summary.links:
        if all(link.url != seen["href"] for seen in links):
            links.append({"href": link.url, "text": link.label})
    return {**body, "links": links} if links else body


def _one_line(text: str) -> str:
    return cut(" ".join(text.split()), MAX_SUMMARY)


def _size(body: dict[str, Any]) -> int:
    return len(json.dumps(body).encode())


def _fit(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` within the Events API's 512 KB: the largest values of the event's data are left
    out, largest first, and named, until it fits."""
    if _size(body) <= MAX_BODY_BYTES:
        return body
    payload = body["payload"]
    data = dict(payload["custom_details"]["data"])
    left_out: list[str] = []
    fitted = body
    for key in sorted(data, key=lambda key: len(json.dumps(data[key])), reverse=True):
        del data[key]
        left_out.append(key)
        details = {**payload["custom_details"], "data": data, "left_out": left_out}
        details["note"] = TOO_LARGE
        fitted = {**body, "payload": {**payload, "custom_details": details}}
        if _size(fitted) <= MAX_BODY_BYTES:
            break
    return fitted
