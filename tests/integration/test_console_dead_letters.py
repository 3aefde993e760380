"""Dead letters on the console, over HTTP, with the queues on SQS (moto): an operator sees how
many timers each dead-letter queue holds and sends their namespace's back, which the audit
trail records; nobody else sees the page or can post its form, and the form needs its
session's token and this console's origin, as every form does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from tests.integration.test_console_http import Browser
from tests.integration.test_console_operators import form_on
from tests.liveness_support import World
from vigil import wiring
from vigil.alarms.redrive import QUEUES, DeadLetters
from vigil.alarms.timers import Timer
from vigil.clock import ManualClock
from vigil.transports.router import Router

PAGE = "/console/dead-letters"
SEND_BACK = "/console/dead-letters/send-back"


def timer(namespace: str, key: str = "k") -> str:
    due = datetime(2026, 1, 1, tzinfo=UTC)
    return Timer(kind="switch", namespace=namespace, key=key, due_at=due).model_dump_json()


@pytest.fixture
def sqs(aws: None) -> Any:
    return boto3.client("sqs", region_name="us-east-1")


@pytest.fixture
def queues(sqs: Any) -> dict[str, str]:
    made = {name: sqs.create_queue(QueueName=f"vigil-{name}")["QueueUrl"] for name in QUEUES}
    for body in (timer("acme", "a1"), timer("acme", "a2"), timer("globex")):
        sqs.send_message(QueueUrl=made["TimerDLQ"], MessageBody=body)
    return made


@pytest.fixture
def router(clock: ManualClock, sqs: Any, queues: dict[str, str]) -> tuple[World, Router]:
    world = World(clock)
    dead_letters = DeadLetters(sqs, queues, wiring.timer_routes(), poll_seconds=0)
    return world, Router(world.app, frozenset(), lambda: dead_letters)


def signed_in(router: Router, secret: str) -> Browser:
    browser = Browser(router)
    assert browser.sign_in(secret).status == 303
    return browser


def depth(sqs: Any, url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(found[name]) for name in names)


def audited(world: World) -> list[tuple[str, str, str | None]]:
    events = world.call("list_audit_events")["events"]
    return [(e["action"], e["target"], e["actor"]) for e in events if e["action"] == "redrive"]


def test_an_operator_sees_the_counts_and_sends_their_namespaces_timers_back(
    router: tuple[World, Router], sqs: Any, queues: dict[str, str]
) -> None:
    world, front = router
    operator = signed_in(front, world.tenant.operator_secret)
    overview = operator.get("/console").body.decode()
    assert f'href="{PAGE}"' in overview

    page = operator.get(PAGE)
    assert page.status == 200
    body = page.body.decode()
    assert '<span class="count" id="dead-TimerDLQ">3</span>' in body
    assert '<span class="count" id="dead-NotifyDLQ">0</span>' in body
    assert "vigil redrive" in body  # what the rest is left for

    response = operator.post(SEND_BACK, form_on(body, SEND_BACK))
    assert response.status == 200
    said = response.body.decode()
    assert "2 to <code>TimerQueue</code>" in said
    assert '<span class="count" id="dead-TimerDLQ">1</span>' in said  # globex's stays
    assert depth(sqs, queues["TimerQueue"]) == 2
    assert depth(sqs, queues["TimerDLQ"]) == 1
    assert audited(world) == [("redrive", "TimerDLQ", world.tenant.operator.id)]

    # Nothing of acme's is left: a second click moves nothing and records nothing.
    again = operator.post(SEND_BACK, form_on(said, SEND_BACK))
    assert "none of your namespace" in again.body.decode()
    assert depth(sqs, queues["TimerDLQ"]) == 1
    assert len(audited(world)) == 1


def test_nobody_but_an_operator_sees_the_page_or_sends_anything_back(
    router: tuple[World, Router], sqs: Any, queues: dict[str, str]
) -> None:
    world, front = router
    operator = signed_in(front, world.tenant.operator_secret)
    form = form_on(operator.get(PAGE).body.decode(), SEND_BACK)
    _, secret = world.tenant.register(kind="person", name="pat")
    pat = signed_in(front, secret)

    assert PAGE not in pat.get("/console").body.decode()
    assert pat.get(PAGE).status == 403
    assert pat.post(SEND_BACK, {**form, "csrf": pat.csrf()}).status == 403
    assert Browser(front).post(SEND_BACK, form).status == 401  # not signed in
    assert depth(sqs, queues["TimerDLQ"]) == 3
    assert audited(world) == []


@pytest.mark.parametrize(
    ("change", "status", "said"),
    [
        ({"csrf": ""}, 403, "This form has expired"),
        ({"csrf": "forged"}, 403, "This form has expired"),
        ({"queue": "TimerQueue"}, 404, "no such dead-letter queue"),
    ],
)
def test_a_forged_form_sends_nothing_back(
    router: tuple[World, Router],
    sqs: Any,
    queues: dict[str, str],
    change: dict[str, str],
    status: int,
    said: str,
) -> None:
    world, front = router
    operator = signed_in(front, world.tenant.operator_secret)
    form = form_on(operator.get(PAGE).body.decode(), SEND_BACK)
    response = operator.post(SEND_BACK, {**form, **change})
    assert response.status == status
    assert said in response.body.decode()
    assert depth(sqs, queues["TimerDLQ"]) == 3
    assert audited(world) == []


def test_a_form_from_another_site_sends_nothing_back(
    router: tuple[World, Router], sqs: Any, queues: dict[str, str]
) -> None:
    world, front = router
    operator = signed_in(front, world.tenant.operator_secret)
    form = form_on(operator.get(PAGE).body.decode(), SEND_BACK)
    response = operator.post(SEND_BACK, form, headers={"sec-fetch-site": "cross-site"})
    assert response.status == 403
    assert depth(sqs, queues["TimerDLQ"]) == 3


def test_a_console_given_no_dead_letter_queues_says_so(clock: ManualClock) -> None:
    world = World(clock)
    operator = signed_in(Router(world.app, frozenset()), world.tenant.operator_secret)
    assert PAGE not in operator.get("/console").body.decode()
    response = operator.get(PAGE)
    assert response.status == 404
    assert "no dead-letter queues" in response.body.decode()
