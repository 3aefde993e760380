"""The local SQS checks a received message's retention without counting the queue."""

from __future__ import annotations

from typing import Any

import pytest
from moto.sqs.models import Queue, sqs_backends

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
