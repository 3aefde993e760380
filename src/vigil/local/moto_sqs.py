"""What the local runtime changes in moto's SQS, and why.

moto's ``ReceiveMessage`` checks each message it hands out against the queue's retention period
by asking for the queue's attributes, every one of them: the approximate counts among them,
each a pass over every message of the queue with a clock reading per message. A receive of ten
thus cost thirty passes over the queue, and a burst of timers due at once cost the square of
its size: 1,000 timers made each receive of the pump take longer than the fires it brought.
The check reads the retention period alone here, as SQS keeps it.
"""

from __future__ import annotations

from moto.core.utils import unix_time
from moto.sqs.models import Message, SQSBackend


def _within_retention(self: SQSBackend, queue_name: str, message: Message) -> bool:
    if message.sent_timestamp is None:
        return True
    retention = int(self.get_queue(queue_name).message_retention_period)
    return bool(message.sent_timestamp / 1000 + retention > unix_time())


def patch() -> None:
    """Makes moto's receive check retention without counting the queue (idempotent)."""
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign]
