"""Notifications end to end: channels made through the MCP SDK client on the local runtime, events
raised by real switches and requests, delivered by the notify function that the event pump runs
off the notify queue, and received by a webhook receiver on this machine that verifies every
request with the Standard Webhooks reference library (``tests/e2e/webhook_receiver.py``).

What is not played here: retries after the first backoff (30 s and growing, covered by the unit
tests with a moved clock), and Slack: a Slack channel's URL must be
https://hooks.slack.com/..., so no local receiver can stand in for it (its messages are checked
in the unit tests, with the transport injected); the last test shows the refusal. Slack's
interactions, whose response_url may be local on the local runtime, are played in
``test_slack_interactions.py``.

These tests wait in real time; they poll with a deadline, never sleep blind.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import jsonschema
import pytest

from tests.e2e.clients import Session, open_session
from tests.e2e.test_deadman import MAX_LATENESS_SECONDS, _poll, _register
from tests.e2e.webhook_receiver import HANG, OK, Answer, Received, WebhookReceiver
from vigil.local.runtime import LOCAL_EMAIL_SENDER

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
# A switch of 2 s fires within about 2 s of its deadline; its first delivery follows at once.
DELIVERY_DEADLINE_SECONDS = 20.0
RECIPIENT = "someone@example.com"


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running
    assert running.unverified() == [], "a request failed Standard Webhooks verification"


def _schema(event_type: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (ROOT / "docs" / "events" / f"{event_type}.schema.json").read_text()
    )
    return schema


def _valid(received: Received) -> None:
    """The body validates against the published schema of its type, and its webhook-id is
    the event's id."""
    validator = jsonschema.Draft202012Validator
    jsonschema.validate(
        received.body,
        _schema(received.type),
        cls=validator,
        format_checker=validator.FORMAT_CHECKER,
    )
    assert received.webhook_id == received.body["id"]


def _path(stem: str) -> str:
    return f"/{stem}-{uuid.uuid4().hex[:8]}"


async def _webhook(
    operator: Session,
    receiver: WebhookReceiver,
    path: str,
    rules: list[dict[str, Any]],
    answer: Answer = OK,
) -> dict[str, Any]:
    """A webhook channel to ``path`` on the receiver, whose secret the receiver verifies with."""
    issued = await operator.call(
        "create_channel", name=path, kind="webhook", url=receiver.url(path), rules=rules
    )
    secret = issued["signing_secret"]
    assert secret.startswith("whsec_")
    receiver.expect(path, secret, answer)
    channel: dict[str, Any] = issued["channel"]
    assert (channel["state"], channel["target"]) == ("enabled", receiver.url(path))
    return channel


async def _arm_and_die(worker: Session, scope: str) -> dict[str, Any]:
    """A lease under ``scope`` and a 2 s switch that releases it; then no beat ever again.
    The lease, as acquired."""
    lease: dict[str, Any] = (
        await worker.call("acquire_lease", resource=f"repo:{scope}", scope=scope, ttl_seconds=600)
    )["lease"]
    armed = await worker.call(
        "heartbeat", scope=scope, expect_within_seconds=2, on_expiry=["release_leases"]
    )
    assert armed["state"] == "armed"
    return lease


async def _arrival(receiver: WebhookReceiver, path: str, event_type: str) -> list[Received]:
    """The events of ``event_type`` received at ``path``, once there is one."""

    async def arrived() -> tuple[bool, dict[str, Any]]:
        found = receiver.events(path, event_type)
        return bool(found), {"events": found, "attempts": receiver.attempts_at(path)}

    seen = await _poll(arrived, DELIVERY_DEADLINE_SECONDS)
    events: list[Received] = seen["events"]
    return events


def test_a_fired_switch_reaches_its_webhook_once_signed_and_as_published(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"notify-{uuid.uuid4().hex[:8]}"
    path = _path("fired")
    console = state["console_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            worker_id, worker_secret = await _register(operator, "notify-worker")
            worker = await open_session(stack, url, worker_secret)
            rules: list[dict[str, Any]] = [
                {"events": ["switch.fired"], "scope_prefix": scope},
                {"events": ["request.opened", "request.answered", "request.expired"]},
            ]
            channel = await _webhook(operator, receiver, path, rules)
            assert [r["events"] for r in channel["rules"]] == [r["events"] for r in rules]

            lease = await _arm_and_die(worker, scope)
            [fired] = await _arrival(receiver, path, "switch.fired")
            _valid(fired)
            body, data = fired.body, fired.body["data"]
            assert (body["namespace"], body["scope"]) == (state["namespace"], scope)
            assert body["console_url"] == f"{console}/switch?{urlencode({'scope': scope})}"
            assert (data["scope"], data["holder"]) == (scope, worker_id)
            assert data["actions"] == ["release_leases"]
            assert data["released_count"] == 1
            assert data["released"] == [
                {"resource": lease["resource"], "generation": lease["generation"]}
            ]
            # occurred_at is when the switch fired, as the death records it.
            packet = await operator.call("resume_packet", scope=scope)
            death = packet["death"]
            assert body["occurred_at"] == data["fired_at"]
            assert (data["fired_at"], data["deadline"]) == (death["fired_at"], death["deadline"])
            # The console link leads somewhere the runtime serves (a sign-in page, unsigned).
            with urllib.request.urlopen(body["console_url"], timeout=10) as page:
                assert page.status == 200

            # One request, answered 200: nothing was sent again.
            attempts = receiver.attempts_at(path)
            assert [(a.webhook_id, a.answered) for a in attempts] == [(fired.webhook_id, 200)]
            assert receiver.duplicates == 0
            await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)


def test_test_channel_delivers_a_signed_channel_test(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    path = _path("tested")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            rules = [{"events": ["session.stale"], "scope_prefix": path}]
            channel = await _webhook(operator, receiver, path, rules)

            tested = await operator.call("test_channel", id=channel["id"])
            assert (tested["delivered"], tested["outcome"], tested["status"]) == (
                True,
                "delivered",
                200,
            )
            # test_channel answers once the receiver has: it is there already.
            [received] = receiver.events(path, "channel.test")
            _valid(received)
            assert received.webhook_id == tested["event_id"]
            data = received.body["data"]
            assert (data["channel_id"], data["requested_by"]) == (
                channel["id"],
                state["operator_id"],
            )
            await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)


def test_after_a_rotation_a_receiver_knowing_either_secret_verifies(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    path = _path("rotated")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            rules = [{"events": ["session.stale"], "scope_prefix": path}]
            issued = await operator.call(
                "create_channel", name=path, kind="webhook", url=receiver.url(path), rules=rules
            )
            old, channel = issued["signing_secret"], issued["channel"]
            rotated = await operator.call(
                "rotate_channel_secret", id=channel["id"], version=channel["version"]
            )
            new = rotated["signing_secret"]
            assert new.startswith("whsec_")
            assert new != old
            assert [s["until"] is None for s in rotated["channel"]["signing_secrets"]] == [
                True,
                False,
            ]
            # A receiver that still knows only the old secret accepts, and one that knows only
            # the new one: each delivery carries both signatures.
            for secret in (old, new):
                receiver.expect(path, secret)
                tested = await operator.call("test_channel", id=channel["id"])
                assert tested["delivered"] is True, tested
                [received] = [
                    r for r in receiver.events(path) if r.webhook_id == tested["event_id"]
                ]
                signatures = received.headers["webhook-signature"].split(" ")
                assert [s.split(",")[0] for s in signatures] == ["v1", "v1"]
            await operator.call(
                "delete_channel", id=channel["id"], version=rotated["channel"]["version"]
            )

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("answer", "outcome", "status"),
    [
        (Answer(status=500), "retry", 500),
        (Answer(status=429, retry_after="120"), "retry", 429),
        (Answer(status=410), "gone", 410),
        (Answer(status=302), "rejected", 302),
        (HANG, "retry", None),
    ],
    ids=["500", "429", "410", "302", "hang"],
)
def test_test_channel_reports_what_a_failing_receiver_answered(
    state: dict[str, Any],
    receiver: WebhookReceiver,
    answer: Answer,
    outcome: str,
    status: int | None,
) -> None:
    path = _path("failing")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            rules = [{"events": ["session.stale"], "scope_prefix": path}]
            channel = await _webhook(operator, receiver, path, rules, answer)
            started = time.monotonic()
            tested = await operator.call("test_channel", id=channel["id"])
            took = time.monotonic() - started
            assert (tested["delivered"], tested["outcome"], tested["status"]) == (
                False,
                outcome,
                status,
            )
            if answer.hang:
                # The attempt's limit, not the receiver's patience, ended it.
                assert tested["reason"] == "no answer within 10 s"
                assert 10 <= took < 15
            [attempt] = receiver.attempts_at(path)
            assert (attempt.webhook_id, attempt.verified) == (tested["event_id"], True)
            assert receiver.events(path) == []
            # A test changes nothing: the channel is as it was, even after a 410.
            listed = await operator.call("list_channels")
            [now] = [c for c in listed["channels"] if c["id"] == channel["id"]]
            assert (now["state"], now["version"]) == ("enabled", channel["version"])
            await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)


def test_a_410_disables_the_channel_and_a_replay_delivers_the_same_event(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"gone-{uuid.uuid4().hex[:8]}"
    path = _path("gone")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, worker_secret = await _register(operator, "gone-worker")
            worker = await open_session(stack, url, worker_secret)
            rules = [{"events": ["switch.fired"], "scope_prefix": scope}]
            channel = await _webhook(operator, receiver, path, rules, Answer(status=410))

            await _arm_and_die(worker, scope)

            async def failed_and_disabled() -> tuple[bool, dict[str, Any]]:
                failures = await operator.call("list_delivery_failures", channel_id=channel["id"])
                listed = await operator.call("list_channels")
                [now] = [c for c in listed["channels"] if c["id"] == channel["id"]]
                done = bool(failures["failures"]) and now["state"] == "disabled"
                return done, {"failures": failures["failures"], "channel": now}

            seen = await _poll(failed_and_disabled, DELIVERY_DEADLINE_SECONDS)
            [failure], disabled = seen["failures"], seen["channel"]
            [attempt] = receiver.attempts_at(path)
            assert (attempt.verified, attempt.answered) == (True, 410)
            assert failure["event_id"] == attempt.webhook_id
            assert (failure["event_type"], failure["attempts"], failure["status"]) == (
                "switch.fired",
                1,
                410,
            )
            assert failure["reason"].startswith("HTTP 410")
            assert disabled["disabled_reason"] == "the receiver answered 410 Gone"
            assert disabled["version"] == channel["version"] + 1
            assert receiver.events(path) == []

            # The receiver is back; the operator enables the channel and replays the event.
            receiver.script(path, OK)
            enabled = await operator.call(
                "set_channel_state", id=channel["id"], version=disabled["version"], state="enabled"
            )
            assert (enabled["channel"]["state"], enabled["channel"]["disabled_reason"]) == (
                "enabled",
                None,
            )
            replayed = await operator.call(
                "replay_delivery", channel_id=channel["id"], event_id=failure["event_id"]
            )
            assert (replayed["event_id"], replayed["next_attempt"]) == (failure["event_id"], 2)
            [fired] = await _arrival(receiver, path, "switch.fired")
            _valid(fired)
            assert fired.webhook_id == failure["event_id"]
            assert fired.body["scope"] == scope
            assert [a.answered for a in receiver.attempts_at(path)] == [410, 200]
            after = await operator.call("list_delivery_failures", channel_id=channel["id"])
            assert after["failures"] == []
            # Replayed once, it cannot be replayed again: it is no longer a failure.
            again = await operator.attempt(
                "replay_delivery", channel_id=channel["id"], event_id=failure["event_id"]
            )
            assert again["error"]["code"] == "not_found"
            await operator.call(
                "delete_channel", id=channel["id"], version=enabled["channel"]["version"]
            )

    anyio.run(scenario)


def test_an_approval_asked_of_a_person_is_announced_with_its_action_verbatim(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    path = _path("opened")
    action = {
        "op": "deploy",
        "service": "billing",
        "version": "2.4.1",
        "regions": ["eu-west-1", "us-east-1"],
        "dry_run": False,
        "note": "Ünïcode, <b>not markup</b> & quotes \"'",
    }

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, asker_secret = await _register(operator, "notify-asker")
            asker = await open_session(stack, url, asker_secret)
            person = await operator.call("register", kind="person", name="notify-approver")
            person_id = person["principal"]["id"]
            channel = await _webhook(operator, receiver, path, [{"events": ["request.opened"]}])

            asked = await asker.call(
                "ask",
                target={"kind": "person", "id": person_id},
                body="May I deploy billing 2.4.1?",
                kind="approval",
                action=action,
                expires_in_seconds=600,
            )
            [opened] = await _arrival(receiver, path, "request.opened")
            _valid(opened)
            data = opened.body["data"]
            assert data["request_id"] == asked["id"]
            assert data["action"] == action
            assert (data["kind"], data["state"], data["audience"]) == (
                "approval",
                "open",
                [person_id],
            )
            assert data["body"] == "May I deploy billing 2.4.1?"
            await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)


def test_a_receiver_that_hangs_holds_up_no_other_switch(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    """The notify and alarm functions run apart, locally as on AWS (the event pump polls each
    queue on a thread of its own): an attempt held to its 10 s limit delays no expiry."""
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"hung-{uuid.uuid4().hex[:8]}"
    path = _path("hung")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, worker_secret = await _register(operator, "hung-worker")
            worker = await open_session(stack, url, worker_secret)
            rules = [{"events": ["switch.fired"], "scope_prefix": scope}]
            channel = await _webhook(operator, receiver, path, rules, HANG)
            try:
                await _arm_and_die(worker, scope)

                async def hanging() -> tuple[bool, dict[str, Any]]:
                    attempts = receiver.attempts_at(path)
                    return bool(attempts), {"attempts": attempts}

                await _poll(hanging, DELIVERY_DEADLINE_SECONDS)
                # While the attempt hangs, another switch (no channel wants it) comes due.
                other = f"unrelated-{uuid.uuid4().hex[:8]}"
                await worker.call("heartbeat", scope=other, expect_within_seconds=2)

                async def fired() -> tuple[bool, dict[str, Any]]:
                    packet = await operator.call("resume_packet", scope=other)
                    return packet["death"] is not None, packet

                death = (await _poll(fired, DELIVERY_DEADLINE_SECONDS))["death"]
                assert death["lateness_seconds"] < MAX_LATENESS_SECONDS
            finally:
                # Its retries then find no channel, and hang nothing.
                await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)


def _sent_emails(runtime: Any) -> list[dict[str, Any]]:
    """The messages moto's SES keeps (sesv2 SendEmail stores them as SES v1 ``Message``s), as
    its model dump at /moto-api/data.json shows them: id, source, destinations, subject, body
    (the HTML part when there is one). The dump is asked for as any tool would, signed with
    the runtime's key from its state directory."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    key = json.loads((Path(runtime.state_dir) / "keys.json").read_text())["runtime"]
    request = AWSRequest("GET", f"{runtime.aws_endpoint_url}/moto-api/data.json")
    SigV4Auth(Credentials(key["id"], key["secret"]), "moto", "us-east-1").add_auth(request)
    signed = urllib.request.Request(request.url, headers=dict(request.headers.items()))
    with urllib.request.urlopen(signed, timeout=10) as answer:
        models = json.loads(answer.read())
    messages: list[dict[str, Any]] = models.get("ses", {}).get("Message", [])
    return messages


def test_a_fired_switch_is_mailed_through_ses(runtime: Any, state: dict[str, Any]) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"mailed-{uuid.uuid4().hex[:8]}"
    console = state["console_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, worker_secret = await _register(operator, "mailed-worker")
            worker = await open_session(stack, url, worker_secret)
            issued = await operator.call(
                "create_channel",
                name="on-call mail",
                kind="email",
                email=RECIPIENT,
                rules=[{"events": ["switch.fired"], "scope_prefix": scope}],
            )
            channel = issued["channel"]
            assert (issued["signing_secret"], channel["target"]) == (None, RECIPIENT)

            await _arm_and_die(worker, scope)

            async def mailed() -> tuple[bool, dict[str, Any]]:
                found = [
                    m
                    for m in _sent_emails(runtime)
                    if scope in m["subject"] and RECIPIENT in m["destinations"]["ToAddresses"]
                ]
                return bool(found), {"messages": found}

            [message] = (await _poll(mailed, DELIVERY_DEADLINE_SECONDS))["messages"]
            assert message["source"] == LOCAL_EMAIL_SENDER
            assert message["destinations"]["ToAddresses"] == [RECIPIENT]
            assert message["subject"] == f"[Vigil] Switch fired: {scope}"
            link = f"{console}/switch?{urlencode({'scope': scope})}"
            assert f'href="{link}"' in message["body"]
            assert "Open the switch" in message["body"]
            await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)


def test_a_slack_channel_cannot_point_at_a_local_receiver(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    """Why Slack is not played end to end: only Slack's own https URL is accepted."""

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            refused = await operator.attempt(
                "create_channel",
                name="slack",
                kind="slack",
                url=receiver.url("/slack"),
                rules=[{"events": ["switch.fired"]}],
            )
            assert refused["error"]["code"] == "invalid_argument"
            assert receiver.attempts_at("/slack") == []

    anyio.run(scenario)


def test_a_host_and_its_fifty_jobs_die_and_one_alert_names_the_fifty(
    state: dict[str, Any], receiver: WebhookReceiver
) -> None:
    """On the local runtime (DynamoDB Local, the timer queue's real alarms): a host and 50 jobs
    that depend on it, beaten in one batch, stop together. Their 51 deaths are recorded; the
    channel gets one alert, the host's, naming the 50, and then 51 recoveries."""
    prefix = f"fleet-{uuid.uuid4().hex[:6]}/"
    host, jobs = f"{prefix}host", [f"{prefix}job-{n:02d}" for n in range(50)]
    path = _path("fleet")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            _, secret = await _register(operator, "fleet-host")
            agent = await open_session(stack, state["mcp_url"], secret)
            rules: list[dict[str, Any]] = [{"events": ["switch.fired"], "scope_prefix": prefix}]
            channel = await _webhook(operator, receiver, path, rules)
            beats = [{"scope": host, "expect_within_seconds": 3}] + [
                {"scope": job, "expect_within_seconds": 3, "depends_on": host} for job in jobs
            ]
            armed = await agent.call("heartbeat_batch", beats=beats)
            assert armed["failed"] == 0

            [alert] = await _arrival(receiver, path, "switch.fired")
            _valid(alert)
            assert alert.body["scope"] == host
            assert alert.body["data"]["dependants_count"] == 50
            assert alert.body["data"]["dependants"] == jobs

            async def all_dead() -> tuple[bool, dict[str, Any]]:
                page = await operator.call("list_switches", scope_prefix=prefix)
                listed = page["switches"]
                if page["next_cursor"]:
                    more = await operator.call(
                        "list_switches", scope_prefix=prefix, cursor=page["next_cursor"]
                    )
                    listed += more["switches"]
                states = [s["state"] for s in listed]
                return states.count("failed") == 51, {"states": states}

            await _poll(all_dead, DELIVERY_DEADLINE_SECONDS)
            await anyio.sleep(MAX_LATENESS_SECONDS)
            assert len(receiver.events(path, "switch.fired")) == 1  # none told apart

            again = await agent.call(
                "heartbeat_batch", beats=[{**b, "expect_within_seconds": 600} for b in beats]
            )
            assert again["failed"] == 0

            async def recovered() -> tuple[bool, dict[str, Any]]:
                found = receiver.events(path, "switch.recovered")
                return len(found) == 51, {"recovered": len(found)}

            await _poll(recovered, DELIVERY_DEADLINE_SECONDS)
            for event in receiver.events(path, "switch.recovered"):
                _valid(event)
            await agent.call("heartbeat_batch", beats=[{**b, "disarm": True} for b in beats])
            await operator.call("delete_channel", id=channel["id"], version=channel["version"])

    anyio.run(scenario)
