"""The dead-letter page on the local runtime: the API function is given the queues' URLs by
the template, as on AWS, so the local operator sees the counts and sends a timer back."""

from __future__ import annotations

import html
import os
import re
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from tests.e2e.test_console_sign_out import Client
from vigil.alarms.timers import Timer

pytestmark = pytest.mark.e2e


def test_the_local_operator_sees_the_dead_letters_and_sends_a_timer_back(
    state: dict[str, Any],
) -> None:
    sqs = boto3.client("sqs")  # the runtime's environment points it at its moto
    # A timer of a request that does not exist: its handler, run again, has nothing to do.
    gone = Timer(
        kind="request", namespace=state["namespace"], key="req_gone", due_at=datetime.now(UTC)
    )
    sqs.send_message(QueueUrl=os.environ["TIMER_DLQ_URL"], MessageBody=gone.model_dump_json())

    client = Client(state["mcp_url"].removesuffix("/mcp"))
    csrf = client.csrf("/console/sign-in")
    status, _ = client.send(
        "POST", "/console/sign-in", {"csrf": csrf, "secret": state["operator_secret"]}
    )
    assert status == 303
    _, overview = client.send("GET", "/console")
    assert 'href="/console/dead-letters"' in overview

    status, page = client.send("GET", "/console/dead-letters")
    assert status == 200
    assert '<span class="count" id="dead-TimerDLQ">1</span>' in page
    csrf = re.search(r'name="csrf" value="([^"]*)"', page)
    assert csrf is not None

    status, said = client.send(
        "POST",
        "/console/dead-letters/send-back",
        {"csrf": html.unescape(csrf.group(1)), "queue": "TimerDLQ"},
    )
    assert status == 200
    assert "1 to <code>TimerQueue</code>" in said
    assert '<span class="count" id="dead-TimerDLQ">0</span>' in said
