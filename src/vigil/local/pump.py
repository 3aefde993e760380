"""The event pump: what AWS would do on its own, and moto does not.

moto stores schedules but never fires them, and runs no Lambda function without Docker. The
pump plays four parts, each in-process and on the injected clock:

- **Event source mappings.** Each mapped queue is received from when the timetable says a
  message sent to it has become visible, again at once while receives bring messages, and
  otherwise every ``QUEUE_IDLE_POLL_SECONDS`` (which finds failed records come back, and what
  was sent before a restart). A batch becomes a real-shaped SQS event for the function's
  handler (``vigil.local.lambda_events``); the records that succeeded are deleted. As Lambda's
  pollers do, several batches of a queue run at once, each on a thread of its own, while the
  queue's thread goes on receiving: ``MAX_CONCURRENT_BATCHES``, or fewer when the mapping's
  ``ScalingConfig`` ``MaximumConcurrency`` or the function's ``ReservedConcurrentExecutions``
  is lower (``concurrent_batches``). Failed
  records are left in flight, so SQS itself brings them back after the visibility timeout and
  moves them to the dead-letter queue after ``maxReceiveCount`` receives. moto implements
  both, and hides a message sent with ``DelaySeconds`` until it is due, so the pump adds
  nothing there. Those three timings run on moto's clock, which is the wall clock, not the
  pump's.
- **EventBridge Scheduler.** One-shot ``at()`` schedules of the stack's schedule groups are
  fired when due, at least once, then deleted or marked done per ``ActionAfterCompletion``.
  The Scheduler's retry policy and dead-letter queue apply when the target cannot be reached.
  A recurring ``rate()`` schedule (the template's sweep) fires once a period, the first time a
  period after the pump first sees it (made, updated, or found at a restart); when the clock
  jumps several periods, it fires once for them. A target it cannot reach is logged, and the
  next occurrence tries again. ``cron()`` schedules are not played.
  A pass takes from the timetable (``vigil.local.timetable``) only the schedules now due and
  reads each back from moto before firing it: it costs what is due, not what is pending.
- **Asynchronous invocation.** The Scheduler invokes a function asynchronously, so a function
  error is Lambda's to retry (``MaximumRetryAttempts``, one then two minutes apart), after
  which the event goes to the function's dead-letter queue or on-failure destination.
- **DynamoDB's TTL.** DynamoDB Local deletes expired items only from tables without a global
  secondary index, and on the wall clock. The pump's sweep (``vigil.local.expiry_sweep``)
  deletes the items whose TTL has passed on the pump's clock, from an index of what is about
  to expire; it scans a table only once, to fill the index when it first watches it.

Progress that lives only in the pump (pending retries, schedules fired but kept) is lost when
the process stops; a schedule that was not yet deleted is back on the timetable after a restart
and fires again, which is the Scheduler's at-least-once promise anyway.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from vigil.clock import Clock, SystemClock
from vigil.kit.aws import error_code
from vigil.local.deployment import LocalDeployment, LocalEventSourceMapping, LocalFunction
from vigil.local.expiry_sweep import ExpirySweeper
from vigil.local.lambda_events import failed_records, sqs_event
from vigil.local.stack import AwsClients
from vigil.local.timetable import Timetable, fire_time, queue_name, rate_period
from vigil.observability import get_logger, log_event, log_failure

log = get_logger("vigil.local.pump")

Handler = Callable[[dict[str, Any], Any], Any]

# SQS returns at most ten messages per receive; a larger BatchSize only lets Lambda gather
# several receives within a batching window, which a local poll has no reason to imitate.
_MAX_RECEIVE = 10
_SCHEDULER_MAX_BACKOFF_SECONDS = 60
_ASYNC_RETRY_BASE_SECONDS = 60
QUEUE_IDLE_POLL_SECONDS = 2.0
# Batches of one queue handed to its function at once, at most. Lambda starts a queue with five
# concurrent batches and adds more as the backlog lasts, up to the mapping's ScalingConfig
# MaximumConcurrency or the function's reserved concurrency; locally every batch shares this
# process's interpreter and the machine's cores with the HTTP API, moto and DynamoDB Local, so
# the runtime stays at five, or fewer if the template says so: enough to overlap the fires'
# waits on DynamoDB Local, not so many that beats wait behind them.
MAX_CONCURRENT_BATCHES = 5
# How long a stop waits for the batches under way, from when receiving stops: a batch of ten
# takes a second or two while a burst fires. The runtime waits for its HTTP requests meanwhile
# (as long, at most), and stops within five. A batch still running after that is left; what it
# did not delete comes back after the visibility timeout, as a failed record's does.
BATCHES_FINISH_SECONDS = 3.0


def concurrent_batches(mapping: LocalEventSourceMapping, function: LocalFunction) -> int:
    """How many batches of ``mapping``'s queue its function is handed at once: the lowest of
    ``MAX_CONCURRENT_BATCHES``, the mapping's MaximumConcurrency and the function's reserved
    concurrency."""
    limits = [
        limit
        for limit in (mapping.maximum_concurrency, function.reserved_concurrency)
        if limit is not None
    ]
    return max(1, min([MAX_CONCURRENT_BATCHES, *limits]))


def _string_attributes(values: Mapping[str, str]) -> dict[str, dict[str, str]]:
    return {
        name: {"DataType": "String", "StringValue": value}
        for name, value in values.items()
        if value
    }


class TargetError(Exception):
    """The Scheduler could not hand the event to its target."""


@dataclass
class _ScheduleDelivery:
    version: str
    failures: int = 0
    next_attempt: datetime | None = None


@dataclass
class _AsyncInvocation:
    function: LocalFunction
    event: Any
    received_at: datetime
    next_attempt: datetime
    failures: int = 0
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


class EventPump:
    def __init__(
        self,
        deployment: LocalDeployment,
        clients: AwsClients,
        handlers: Mapping[str, Handler],
        clock: Clock | None = None,
        poll_interval: float = 0.2,
        *,
        timetable: Timetable,
        expiry: ExpirySweeper | None = None,
    ) -> None:
        missing = sorted(
            {m.function for m in deployment.event_source_mappings if m.function not in handlers}
        )
        if missing:
            raise ValueError(f"no handler for mapped functions: {', '.join(missing)}")
        self.deployment = deployment
        self.clients = clients
        self.handlers = dict(handlers)
        self.clock = clock or SystemClock()
        self.poll_interval = poll_interval
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.timetable = timetable
        # Per mapped queue, on moto's clock: when its thread receives again unprompted.
        self._next_receive: dict[str, float] = {}
        # Per (group, name): the retries of a schedule whose target could not be reached.
        self._deliveries: dict[tuple[str, str], _ScheduleDelivery] = {}
        # Per (group, name) of a recurring schedule: the version it was seen at, and when it
        # fires next.
        self._recurring: dict[tuple[str, str], tuple[str, datetime]] = {}
        self._async: list[_AsyncInvocation] = []
        # None: TTL is not played (the runtime always plays it).
        self.expiry = expiry
        # The batches being handed to functions by the background threads.
        self._batches: set[threading.Thread] = set()
        self._batches_changed = threading.Condition()
        self._finish_by: float | None = None

    # ---------------------------------------------------------------- running

    def tick(self) -> None:
        """One pass over every event source, in turn; the background threads repeat them."""
        for mapping in self.deployment.event_source_mappings:
            if mapping.enabled:
                self._poll_safely(mapping)
        self._tick_rest()

    def _tick_rest(self) -> None:
        with self._lock:
            for one_pass in (
                self._fire_schedules,
                self._run_async_invocations,
                self._sweep_expired,
            ):
                # One source failing (moto restarting, a bug here) must not starve the others.
                try:
                    one_pass()
                except Exception:
                    log.exception("event pump pass failed")

    def _poll_safely(self, mapping: LocalEventSourceMapping) -> int:
        try:
            return self._poll(mapping)
        except Exception:
            log.exception("event pump pass failed")
            return 0

    def poll_when_due(self, mapping: LocalEventSourceMapping, now: float) -> None:
        """One receive and its batch, in this thread, when a message may be waiting: what a
        mapping's thread does each interval, but for handing the batch to a thread of its own."""
        if self._receive_due(mapping, now):
            received = self._poll_safely(mapping)
            self._received(mapping, now, received)

    def _receive_due(self, mapping: LocalEventSourceMapping, now: float) -> bool:
        """Whether a message may be waiting: an idle queue costs a receive every
        ``QUEUE_IDLE_POLL_SECONDS``."""
        queue = self.deployment.queues[mapping.queue]
        sent = self.timetable.messages_due(queue_name(queue.url), now)
        return sent or now >= self._next_receive.get(mapping.queue, 0.0)

    def _received(self, mapping: LocalEventSourceMapping, now: float, count: int) -> None:
        self._next_receive[mapping.queue] = now + (0.0 if count else QUEUE_IDLE_POLL_SECONDS)

    def start(self) -> None:
        """Polls each event source mapping on a thread of its own, as Lambda runs each
        function in sandboxes of its own: a notification waiting on a slow receiver holds up
        no switch's timer. The batches it receives run on threads of their own, at most
        ``concurrent_batches`` at once, while it receives the next. Schedules, asynchronous
        invocations and TTL share one more thread."""
        if self._threads:
            return
        self._stopping.clear()
        loops: list[tuple[str, Callable[[], None]]] = [
            (f"vigil-pump-{m.function}-{m.queue}", functools.partial(self._serve_queue, m))
            for m in self.deployment.event_source_mappings
            if m.enabled
        ]
        loops.append(("vigil-event-pump", functools.partial(self._loop, self._tick_rest)))
        for name, loop in loops:
            thread = threading.Thread(target=loop, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stops receiving, then lets the batches under way finish (``finish``)."""
        self.stop_receiving()
        self.finish()

    def stop_receiving(self) -> None:
        """Stops every pass; the batches under way go on."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        self._threads = []
        self._finish_by = time.monotonic() + BATCHES_FINISH_SECONDS

    def finish(self) -> None:
        """Waits for the batches under way, until ``BATCHES_FINISH_SECONDS`` after receiving
        stopped."""
        deadline = self._finish_by or time.monotonic() + BATCHES_FINISH_SECONDS
        with self._batches_changed:
            while self._batches and self._batches_changed.wait(deadline - time.monotonic()):
                pass
            if self._batches:
                log_event(
                    log,
                    "stopped with batches under way; their records return after the "
                    "visibility timeout",
                    batches=len(self._batches),
                )

    def _loop(self, one_pass: Callable[[], None]) -> None:
        while not self._stopping.wait(self.poll_interval):
            one_pass()

    def _serve_queue(self, mapping: LocalEventSourceMapping) -> None:
        """A mapping's thread: it receives whenever a batch may start and a message may be
        waiting, and hands each batch to a thread of its own."""
        function = self.deployment.functions[mapping.function]
        slots = threading.BoundedSemaphore(concurrent_batches(mapping, function))
        while not self._stopping.is_set():
            # Waits for a batch to finish when as many as allowed are under way.
            if not slots.acquire(timeout=self.poll_interval):
                continue
            handed = False
            try:
                now = time.time()
                if self._receive_due(mapping, now):
                    messages = self._receive_safely(mapping)
                    self._received(mapping, now, len(messages))
                    if messages:
                        self._hand_over(mapping, messages, slots)
                        handed = True
            finally:
                if not handed:
                    slots.release()
            # After a batch, at once again: more may be waiting.
            if not handed:
                self._stopping.wait(self.poll_interval)

    def _hand_over(
        self,
        mapping: LocalEventSourceMapping,
        messages: list[dict[str, Any]],
        slots: threading.BoundedSemaphore,
    ) -> None:
        def run() -> None:
            try:
                self._run_batch_safely(mapping, messages)
            finally:
                with self._batches_changed:
                    self._batches.discard(thread)
                    self._batches_changed.notify_all()
                slots.release()

        # A daemon: a batch left running at a stop does not hold up the process's exit.
        thread = threading.Thread(
            target=run, name=f"vigil-batch-{mapping.function}-{mapping.queue}", daemon=True
        )
        with self._batches_changed:
            self._batches.add(thread)
        thread.start()

    # ---------------------------------------------------------------- event source mappings

    def _poll(self, mapping: LocalEventSourceMapping) -> int:
        """Delivers one batch, in this thread; returns how many messages it received."""
        messages = self._receive(mapping)
        if messages:
            self._run_batch(mapping, messages)
        return len(messages)

    def _receive(self, mapping: LocalEventSourceMapping) -> list[dict[str, Any]]:
        # WaitTimeSeconds=0 overrides the queue's long polling, which would hold the pass.
        messages: list[dict[str, Any]] = self.clients.sqs.receive_message(
            QueueUrl=self.deployment.queues[mapping.queue].url,
            MaxNumberOfMessages=max(1, min(mapping.batch_size, _MAX_RECEIVE)),
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        return messages

    def _receive_safely(self, mapping: LocalEventSourceMapping) -> list[dict[str, Any]]:
        try:
            return self._receive(mapping)
        except Exception:
            log.exception("event pump pass failed")
            return []

    def _run_batch_safely(
        self, mapping: LocalEventSourceMapping, messages: list[dict[str, Any]]
    ) -> None:
        try:
            self._run_batch(mapping, messages)
        except Exception:
            log.exception("event pump pass failed")

    def _run_batch(self, mapping: LocalEventSourceMapping, messages: list[dict[str, Any]]) -> None:
        """Hands a batch to the function; deletes the records that succeeded."""
        queue = self.deployment.queues[mapping.queue]
        function = self.deployment.functions[mapping.function]
        event = sqs_event(messages, queue.arn, self.deployment.names.region)
        try:
            response = self.handlers[mapping.function](event, function.context())
        except Exception as error:
            log_failure(
                log,
                "batch failed; its messages return after the visibility timeout",
                error,
                function=function.name,
                size=len(messages),
            )
            return
        failed = failed_records(mapping, response, {m["MessageId"] for m in messages})
        if failed is None:
            log_event(
                log, "invalid batchItemFailures: the whole batch failed", function=function.name
            )
            return
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self.clients.sqs.delete_message_batch(
                QueueUrl=queue.url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        log_event(
            log, "batch delivered", function=function.name, done=len(done), failed=len(failed)
        )

    # ---------------------------------------------------------------- TTL

    def _sweep_expired(self) -> None:
        if self.expiry is not None:
            self.expiry.sweep(self.clock.now())

    # ---------------------------------------------------------------- scheduler

    def _fire_schedules(self) -> None:
        now = self.clock.now()
        for group in self.deployment.schedule_groups.values():
            for name in self.timetable.pop_due(group, now):
                try:
                    self._fire_if_due(group, name, now)
                except Exception:
                    log.exception("schedule pass failed", extra={"fields": {"schedule": name}})
                    # Taken off the timetable but not fired: it comes up again next pass.
                    self.timetable.set(group, name, now)

    def _fire_if_due(self, group: str, name: str, now: datetime) -> None:
        """Fires a schedule the timetable says is due, as moto holds it now: one deleted, or
        updated to a later time, since the timetable heard of it fires nothing."""
        try:
            schedule = self.clients.scheduler.get_schedule(GroupName=group, Name=name)
        except Exception as error:
            if error_code(error) == "ResourceNotFoundException":
                self._deliveries.pop((group, name), None)
                self._recurring.pop((group, name), None)
                return
            raise
        if schedule.get("State", "ENABLED") != "ENABLED":
            # An update that enables it puts it back on the timetable.
            self._deliveries.pop((group, name), None)
            self._recurring.pop((group, name), None)
            return
        period = rate_period(schedule["ScheduleExpression"])
        if period is not None:
            self._fire_recurring(group, name, schedule, period, now)
            return
        due = fire_time(schedule["ScheduleExpression"], schedule.get("ScheduleExpressionTimezone"))
        if due is None:
            log_event(log, "cron schedules are not played locally", schedule=schedule["Arn"])
            return
        if now < due:
            self.timetable.set(group, name, due)
            return
        version = str(schedule.get("LastModificationDate"))
        delivery = self._deliveries.get((group, name))
        if delivery is None or delivery.version != version:
            # An updated schedule is a new one: its retries start afresh.
            delivery = self._deliveries[(group, name)] = _ScheduleDelivery(version)
        if delivery.next_attempt is not None and now < delivery.next_attempt:
            self.timetable.set(group, name, delivery.next_attempt)
            return
        try:
            self._deliver(schedule["Target"], now)
        except Exception as error:
            delivery.failures += 1
            policy = schedule["Target"].get("RetryPolicy") or {}
            max_retries = int(policy.get("MaximumRetryAttempts", 185))
            max_age = int(policy.get("MaximumEventAgeInSeconds", 86400))
            if delivery.failures > max_retries:
                self._dead_letter_schedule(schedule, error, "MaximumRetryAttempts", delivery)
            elif (now - due).total_seconds() >= max_age:
                self._dead_letter_schedule(schedule, error, "MaximumEventAgeInSeconds", delivery)
            else:
                backoff = min(_SCHEDULER_MAX_BACKOFF_SECONDS, 2 ** (delivery.failures - 1))
                delivery.next_attempt = now + timedelta(seconds=backoff)
                self.timetable.set(group, name, delivery.next_attempt)
                log_event(log, "schedule target failed; will retry", schedule=schedule["Arn"])
                return
        self._complete(group, name, schedule)

    def _fire_recurring(
        self, group: str, name: str, schedule: Mapping[str, Any], period: timedelta, now: datetime
    ) -> None:
        version = str(schedule.get("LastModificationDate"))
        seen = self._recurring.get((group, name))
        if seen is None or seen[0] != version:
            due = now + period  # made, updated, or found at a restart: a period from now
        else:
            due = seen[1]
            if now >= due:
                try:
                    self._deliver(schedule["Target"], now)
                except Exception:
                    log.exception(
                        "recurring schedule target failed; its next occurrence tries again",
                        extra={"fields": {"schedule": schedule["Arn"]}},
                    )
                due += period * ((now - due) // period + 1)
        self._recurring[(group, name)] = (version, due)
        self.timetable.set(group, name, due)

    def _deliver(self, target: Mapping[str, Any], now: datetime) -> None:
        arn = target["Arn"]
        service = arn.split(":")[2] if arn.count(":") >= 5 else ""
        payload = target.get("Input")
        if service == "lambda":
            function = self.deployment.function_by_reference(arn)
            if function is None or function.logical_id not in self.handlers:
                raise TargetError(f"no local function {arn}")
            try:
                event = json.loads(payload) if payload else {}
            except ValueError:
                raise TargetError("a Lambda target's Input must be JSON") from None
            self._async.append(_AsyncInvocation(function, event, now, next_attempt=now))
        elif service == "sqs":
            message: dict[str, Any] = {"QueueUrl": self._queue_url(arn), "MessageBody": payload}
            group_id = (target.get("SqsParameters") or {}).get("MessageGroupId")
            if group_id:
                message["MessageGroupId"] = group_id
            self.clients.sqs.send_message(**message)
        else:
            raise TargetError(f"{service or arn} targets are not played locally")

    def _queue_url(self, arn: str) -> str:
        queue = self.deployment.queue_by_arn(arn)
        if queue is not None:
            return queue.url
        _, _, _, _, account, name = arn.split(":", 5)
        url: str = self.clients.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)[
            "QueueUrl"
        ]
        return url

    def _dead_letter_schedule(
        self,
        schedule: Mapping[str, Any],
        error: Exception,
        condition: str,
        delivery: _ScheduleDelivery,
    ) -> None:
        target = schedule["Target"]
        dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
        log_event(log, "schedule target failed for good", schedule=schedule["Arn"], dlq=dlq)
        if not dlq:
            return
        try:
            self.clients.sqs.send_message(
                QueueUrl=self._queue_url(dlq),
                MessageBody=target.get("Input") or "{}",
                MessageAttributes=_string_attributes(
                    {
                        "ERROR_CODE": type(error).__name__,
                        "ERROR_MESSAGE": str(error)[:256],
                        "EXHAUSTED_RETRY_CONDITION": condition,
                        "RETRY_ATTEMPTS": str(delivery.failures - 1),
                        "SCHEDULE_ARN": schedule["Arn"],
                        "TARGET_ARN": target["Arn"],
                    }
                ),
            )
        except Exception:
            log.exception("could not dead-letter a schedule", extra={"fields": {"dlq": dlq}})

    def _complete(self, group: str, name: str, schedule: Mapping[str, Any]) -> None:
        # Off the timetable already, so it fires no more, even when its deletion fails.
        self._deliveries.pop((group, name), None)
        if schedule.get("ActionAfterCompletion") == "DELETE":
            try:
                self.clients.scheduler.delete_schedule(GroupName=group, Name=name)
            except Exception as error:
                if error_code(error) != "ResourceNotFoundException":
                    log.exception("could not delete a completed schedule")

    # ---------------------------------------------------------------- asynchronous invocation

    def _run_async_invocations(self) -> None:
        now = self.clock.now()
        due = [i for i in self._async if i.next_attempt <= now]
        self._async = [i for i in self._async if i.next_attempt > now]
        for invocation in due:
            function = invocation.function
            try:
                self.handlers[function.logical_id](
                    invocation.event, function.context(invocation.request_id)
                )
            except Exception as error:
                invocation.failures += 1
                retries = invocation.failures - 1
                age = (now - invocation.received_at).total_seconds()
                if (
                    retries >= function.async_retry_attempts
                    or age >= function.async_max_event_age_seconds
                ):
                    self._async_failed(invocation, error)
                    continue
                log_failure(
                    log,
                    "asynchronous invocation failed; Lambda retries it",
                    error,
                    function=function.name,
                )
                delay = _ASYNC_RETRY_BASE_SECONDS * 2**retries
                invocation.next_attempt = now + timedelta(seconds=delay)
                self._async.append(invocation)

    def _async_failed(self, invocation: _AsyncInvocation, error: Exception) -> None:
        function = invocation.function
        log.warning(
            "asynchronous invocation failed for good",
            exc_info=True,
            extra={"fields": {"function": function.name, "dlq": function.dead_letter_arn}},
        )
        body = json.dumps(invocation.event)
        destinations = []
        if function.dead_letter_arn:
            destinations.append(
                (
                    function.dead_letter_arn,
                    body,
                    _string_attributes(
                        {
                            "RequestID": invocation.request_id,
                            "ErrorCode": "200",
                            "ErrorMessage": type(error).__name__,
                        }
                    ),
                )
            )
        if function.on_failure_arn:
            record = {
                "version": "1.0",
                "timestamp": self.clock.now().isoformat(),
                "requestContext": {
                    "requestId": invocation.request_id,
                    "functionArn": f"{function.arn}:$LATEST",
                    "condition": "RetriesExhausted",
                    "approximateInvokeCount": invocation.failures,
                },
                "requestPayload": invocation.event,
                "responseContext": {
                    "statusCode": 200,
                    "executedVersion": "$LATEST",
                    "functionError": "Unhandled",
                },
                "responsePayload": {"errorType": type(error).__name__},
            }
            destinations.append((function.on_failure_arn, json.dumps(record), {}))
        for arn, message, attributes in destinations:
            if arn.split(":")[2] != "sqs":
                log_event(log, "only SQS failure destinations are played locally", arn=arn)
                continue
            try:
                self.clients.sqs.send_message(
                    QueueUrl=self._queue_url(arn), MessageBody=message, MessageAttributes=attributes
                )
            except Exception:
                log.exception("could not dead-letter an invocation", extra={"fields": {"dlq": arn}})
