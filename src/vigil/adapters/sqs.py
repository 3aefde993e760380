"""SQS adapters."""

from __future__ import annotations

from typing import Any

from vigil.timers import Timer


class SqsTimerQueue:
    def __init__(self, client: Any, queue_url: str) -> None:
        self.client = client
        self.queue_url = queue_url

    def send(self, timer: Timer, delay_seconds: int) -> None:
        self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=timer.model_dump_json(),
            DelaySeconds=delay_seconds,
        )
