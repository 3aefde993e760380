"""What the local runtime changes in moto's SQS, and why.

moto's ``ReceiveMessage`` checks each message it hands out against the queue's retention period
by asking for the queue's attributes, every one of them: the approximate counts among them,
each a pass over every message of the queue with a clock reading per message. A receive of ten
thus cost thirty passes over the queue, and a burst of timers due at once cost the square of
its size: 1,000 timers made each receive of the pump take longer than the fires it brought.
The check reads the retention period alone here, as SQS keeps it.

The passes that remain (the visible messages a receive walks, the approximate counts) read the
clock once a pass, not twice a message: with 1,000 timers in flight, the clock readings of
each receive held the interpreter lock that the functions and the HTTP API share for longer
than the rest of the receive.
"""

from __future__ import annotations

from moto.core.utils import unix_time, unix_time_millis
from moto.sqs.models import Message, Queue, SQSBackend


def _within_retention(self: SQSBackend, queue_name: str, message: Message) -> bool:
    if message.sent_timestamp is None:
        return True
    retention = int(self.get_queue(queue_name).message_retention_period)
    return bool(message.sent_timestamp / 1000 + retention > unix_time())


# As moto's Message.visible and Message.delayed decide, at one reading of the clock.
def _messages(self: Queue) -> list[Message]:
    now = unix_time_millis()
    return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]


def _not_visible(self: Queue) -> int:
    now = unix_time_millis()
    return sum(1 for m in self._messages if not now > m.visible_at)


def _delayed(self: Queue) -> int:
    now = unix_time_millis()
    return sum(1 for m in self._messages if now < m.delayed_until)


def patch() -> None:
    """Makes moto's receive check retention without counting the queue, and its passes over
    a queue read the clock once (idempotent)."""
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign]
    Queue.messages = property(_messages)  # type: ignore[method-assign,assignment]
    Queue.approximate_number_of_messages_not_visible = property(_not_visible)  # type: ignore[method-assign,assignment]
    Queue.approximate_number_of_messages_delayed = property(_delayed)  # type: ignore[method-assign,assignment]
