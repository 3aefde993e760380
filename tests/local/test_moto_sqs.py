"""The local SQS checks a received message's retention without counting the queue, and reads
the clock once a pass over a queue."""

from __future__ import annotations

from typing import Any

import pytest
from moto.sqs.models import Queue, sqs_backends

from vigil.local import moto_sqs
from vigil.local.deployment import LocalDeployment
from vigil.local.stack import AwsClients


def test_a_receive_reads_the_retention_period_alone(
    deployment: LocalDeployment, clients: AwsClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = deployment.queues["TimerQueue"]
    clients.sqs.send_message(QueueUrl=queue.url, MessageBody="kept")
    _, _, _, region, account, name = queue.arn.split(":")
    backend = sqs_backends[account][region]
    [message] = backend.get_queue(name)._messages

    def counted(self: Queue) -> Any:
        raise AssertionError("the queue's attributes were computed")

    # The attributes include the approximate counts: a pass over every message each.
    monkeypatch.setattr(Queue, "attributes", property(counted))
    assert backend.is_message_valid_based_on_retention_period(name, message)
    retention = backend.get_queue(name).message_retention_period
    message.sent_timestamp -= (int(retention) + 1) * 1000
    assert not backend.is_message_valid_based_on_retention_period(name, message)


def test_the_passes_over_a_queue_read_the_clock_once_and_decide_as_moto_does(
    deployment: LocalDeployment, clients: AwsClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = deployment.queues["TimerQueue"]
    for body in ("taken", "ready", "delayed"):
        clients.sqs.send_message(
            QueueUrl=queue.url, MessageBody=body, DelaySeconds=60 if body == "delayed" else 0
        )
    received = clients.sqs.receive_message(
        QueueUrl=queue.url, MaxNumberOfMessages=1, VisibilityTimeout=60
    )["Messages"]
    assert [m["Body"] for m in received] == ["taken"]
    clients.sqs.send_message(QueueUrl=queue.url, MessageBody="later")
    _, _, _, region, account, name = queue.arn.split(":")
    q = sqs_backends[account][region].get_queue(name)
    # moto's own decisions, a clock reading per message and property.
    visible = [m.body for m in q._messages if m.visible and not m.delayed]
    not_visible = sum(1 for m in q._messages if not m.visible)
    delayed = sum(1 for m in q._messages if m.delayed)
    assert (sorted(visible), not_visible, delayed) == (["later", "ready"], 1, 1)

    readings = 0
    clock = moto_sqs.unix_time_millis

    def counted() -> float:
        nonlocal readings
        readings += 1
        return clock()

    monkeypatch.setattr(moto_sqs, "unix_time_millis", counted)
    assert sorted(m.body for m in q.messages) == sorted(visible)
    assert q.approximate_number_of_messages_not_visible == not_visible
    assert q.approximate_number_of_messages_delayed == delayed
    assert readings == 3
