"""Dead-lettered timers, counted and sent back: what the deployer's `vigil redrive` and the
console's "Dead letters" page do, each with its own SQS client.

A timer reaches a dead-letter queue when its handler kept failing (``maxReceiveCount``
receives on its queue), or when the Scheduler or an asynchronous invocation could not deliver
it to its function. Either way its body is the timer. Sending it back is always safe, as every
handler is idempotent; it goes to the queue that serves its kind today, as ``AwsAlarms`` would
arm it (``vigil.wiring.alarms``): for a timer its own queue dead-lettered, that is the queue it
came from; for one the Scheduler or an invocation left, the queue of its function.

SQS's own redrive (StartMessageMoveTask) moves a queue's dead letters back to their source
queue only, which the Scheduler's and the invocations' dead letters have none of. So each
message is received, sent to its queue, and only then deleted: a failure between the send and
the delete leaves the timer in both places, and it runs twice, which its handler absorbs. A
message that is no timer (a missed sweep's event), or a timer of a kind nothing serves, is left
where it is and reported. Each run is bounded, so a deep queue takes several."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from vigil.alarms import kinds
from vigil.alarms.timers import Timer
from vigil.kit.aws import error_code
from vigil.observability import get_logger, log_event, log_failure

log = get_logger("vigil.alarms.redrive")

# The stack's dead-letter queues of timers, by their logical ids in template.yaml, with what
# each holds.
DEAD_LETTER_QUEUES: Mapping[str, str] = {
    "TimerDLQ": "switches' and requests' timers whose handler kept failing",
    "AlarmDLQ": "timers the Scheduler or an invocation could not deliver to the alarm function",
    "NotifyDLQ": (
        "notification attempts, reminders and watches whose handler kept failing, or that "
        "could not be delivered to the notify function"
    ),
}
# The queues timers are sent back to, by their logical ids.
TIMER_QUEUE, NOTIFY_QUEUE, WATCH_QUEUE = "TimerQueue", "NotifyQueue", "WatchQueue"
QUEUES = (*DEAD_LETTER_QUEUES, TIMER_QUEUE, NOTIFY_QUEUE, WATCH_QUEUE)

# A received message stays hidden from other receivers this long: longer than a bounded run,
# so that one run sees each message once, and what it leaves is made visible again at its end.
VISIBILITY_SECONDS = 120
# Long polling asks every SQS server, so a queue that answers nothing is empty; a short poll
# may miss messages held by servers it did not sample.
POLL_SECONDS = 1
_BATCH = 10  # SQS's most messages per receive and per batch call


def notify_routes() -> dict[str, str]:
    """The queue (its logical id) of each kind of timer the notify function serves, as
    ``vigil.wiring.alarms`` routes them; the alarm function's kinds go to TIMER_QUEUE, and
    ``vigil.wiring.timer_routes`` adds them, as they are named above this layer."""
    return {
        kinds.NOTIFY: NOTIFY_QUEUE,
        kinds.SLACK_RESPONSE: NOTIFY_QUEUE,
        **dict.fromkeys(kinds.WATCH_KINDS, WATCH_QUEUE),
    }


def queues_of_stack(cloudformation: Any, stack: str) -> dict[str, str]:
    """The URLs of the stack's timer queues and their dead-letter queues, by logical id (a
    queue's physical id is its URL)."""
    found: dict[str, str] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page.get("StackResourceSummaries", []):
            if resource["LogicalResourceId"] in QUEUES:
                found[resource["LogicalResourceId"]] = resource["PhysicalResourceId"]
    missing = [name for name in QUEUES if name not in found]
    if missing:
        raise LookupError(f"the stack {stack} has no {', '.join(missing)}")
    return found


@dataclass(frozen=True)
class Kept:
    """A message left in its dead-letter queue, and why."""

    message_id: str
    why: str


@dataclass
class Outcome:
    """What one run did to one dead-letter queue. ``moved`` counts the timers sent back, by the
    queue they went to (in a dry run, would have gone to); ``kept`` the messages left because
    they are no timer or nothing serves their kind; ``others`` the timers of other namespaces
    (and, for a namespace's run, every message that is no timer), left for the deployer;
    ``failed`` the timers SQS would not take, left for the next run; ``left`` how many the queue
    holds after the run (approximate, as SQS counts)."""

    queue: str
    dry_run: bool
    moved: dict[str, int] = field(default_factory=dict)
    kept: list[Kept] = field(default_factory=list)
    others: int = 0
    failed: int = 0
    left: int = 0

    @property
    def moved_count(self) -> int:
        return sum(self.moved.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "would_move" if self.dry_run else "moved": self.moved,
            "kept": [{"message_id": k.message_id, "why": k.why} for k in self.kept],
            "others": self.others,
            "failed": self.failed,
            "left": self.left,
        }


class DeadLetters:
    """The stack's dead-letter queues of timers, on ``sqs``. ``queues`` maps the logical ids of
    QUEUES to their URLs, ``routes`` each kind of timer to the queue that serves it (a logical
    id): a timer of another kind stays where it is."""

    def __init__(
        self,
        sqs: Any,
        queues: Mapping[str, str],
        routes: Mapping[str, str],
        *,
        poll_seconds: int = POLL_SECONDS,
    ) -> None:
        self.sqs = sqs
        self.queues = dict(queues)
        self.routes = dict(routes)
        self.poll_seconds = poll_seconds

    def depths(self) -> dict[str, int]:
        """How many messages each dead-letter queue holds, received by a run or not."""
        return {name: self._depth(name) for name in DEAD_LETTER_QUEUES}

    def send_back(
        self, queue: str, *, limit: int, dry_run: bool = False, namespace: str | None = None
    ) -> Outcome:
        """Sends the timers of the dead-letter queue ``queue`` (a logical id) back, looking at
        ``limit`` messages at most; only ``namespace``'s, if one is given. A dry run sends and
        deletes nothing. Whatever is left is visible again when the run ends."""
        if queue not in DEAD_LETTER_QUEUES:
            raise ValueError(f"not a dead-letter queue of timers: {queue}")
        url = self.queues[queue]
        outcome = Outcome(queue, dry_run)
        leave: dict[str, str] = {}  # receipt handles of what stays, by message id
        for batch in self._receive(url, limit):
            sending: dict[str, list[dict[str, Any]]] = {}
            for message in batch:
                target = self._target(message, namespace, outcome)
                if target is None or dry_run:
                    leave[message["MessageId"]] = message["ReceiptHandle"]
                    if target is not None:
                        outcome.moved[target] = outcome.moved.get(target, 0) + 1
                    continue
                sending.setdefault(target, []).append(message)
            for target, messages in sending.items():
                sent = self._send(target, messages, outcome)
                self._delete(url, sent)
                ids = {m["MessageId"] for m in sent}
                leave.update(
                    (m["MessageId"], m["ReceiptHandle"])
                    for m in messages
                    if m["MessageId"] not in ids
                )
        self._release(url, leave)
        outcome.left = self._depth(queue)
        return outcome

    # -- the steps ------------------------------------------------------------------------------
    def _receive(self, url: str, limit: int) -> Iterator[list[dict[str, Any]]]:
        """Batches of messages, ``limit`` at most in all, until the queue answers none."""
        taken = 0
        while taken < limit:
            answer = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(_BATCH, limit - taken),
                VisibilityTimeout=VISIBILITY_SECONDS,
                WaitTimeSeconds=self.poll_seconds,
            )
            messages: list[dict[str, Any]] = answer.get("Messages", [])
            if not messages:
                return
            taken += len(messages)
            yield messages

    def _target(
        self, message: Mapping[str, Any], namespace: str | None, outcome: Outcome
    ) -> str | None:
        """The queue ``message``'s timer goes back to, or None (and why, in ``outcome``)."""
        message_id = message["MessageId"]
        try:
            timer = Timer.model_validate_json(message["Body"])
        except ValidationError:
            if namespace is not None:
                outcome.others += 1
            else:
                outcome.kept.append(Kept(message_id, "not a timer"))
            return None
        if namespace is not None and timer.namespace != namespace:
            outcome.others += 1
            return None
        target = self.routes.get(timer.kind)
        if target is None:
            outcome.kept.append(Kept(message_id, f"no queue serves timers of kind {timer.kind!r}"))
        return target

    def _send(
        self, target: str, messages: Sequence[dict[str, Any]], outcome: Outcome
    ) -> list[dict[str, Any]]:
        """Sends ``messages``' bodies to ``target``; returns those SQS took."""
        answer = self.sqs.send_message_batch(
            QueueUrl=self.queues[target],
            Entries=[{"Id": str(i), "MessageBody": m["Body"]} for i, m in enumerate(messages)],
        )
        taken = {entry["Id"] for entry in answer.get("Successful", [])}
        sent = [m for i, m in enumerate(messages) if str(i) in taken]
        outcome.failed += len(messages) - len(sent)
        if sent:
            outcome.moved[target] = outcome.moved.get(target, 0) + len(sent)
        return sent

    def _delete(self, url: str, sent: Sequence[Mapping[str, Any]]) -> None:
        """Deletes what was sent back. One that cannot be deleted comes back to its dead-letter
        queue and would be sent again by a later run: a second delivery, which is safe."""
        if not sent:
            return
        answer = self.sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(sent)
            ],
        )
        for failure in answer.get("Failed", []):
            log_event(log, "sent back, not deleted", logging.WARNING, code=failure.get("Code"))

    def _release(self, url: str, leave: Mapping[str, str]) -> None:
        """Makes what the run leaves visible again at once rather than when its receive's
        visibility ends."""
        receipts = list(leave.values())
        for start in range(0, len(receipts), _BATCH):
            chunk = receipts[start : start + _BATCH]
            try:
                self.sqs.change_message_visibility_batch(
                    QueueUrl=url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": r, "VisibilityTimeout": 0}
                        for i, r in enumerate(chunk)
                    ],
                )
            except Exception as error:
                if error_code(error) is None:
                    raise
                # They are visible again when their visibility ends, in a minute or two.
                log_failure(log, "dead letters not released", error)

    def _depth(self, queue: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queues[queue],
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )
