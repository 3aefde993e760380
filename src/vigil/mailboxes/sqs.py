"""Mailbox queues on SQS: one standard queue per mailbox, created on first use, each with its
dead-letter queue."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from vigil.errors import VigilError
from vigil.kit.aws import aws_failure, error_code
from vigil.mailboxes.queues import MailboxQueues, QueueMessage, QueueRef
from vigil.mailboxes.records import MAX_HANDOUTS

T = TypeVar("T")

# A dead letter outlives the queue it came from: SQS keeps a moved message's original enqueue
# time, so a dead-letter queue with the same retention would drop it on arrival.
QUEUE_RETENTION_SECONDS = 4 * 24 * 3600
DLQ_RETENTION_SECONDS = 14 * 24 * 3600
_MAX_QUEUE_NAME = 80
_DLQ_SUFFIX = "-dlq"
_GONE = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
_STALE_RECEIPT = frozenset({"ReceiptHandleIsInvalid", "InvalidParameterValue"})
_EXISTS_OTHERWISE = frozenset({"QueueAlreadyExists", "QueueNameExists"})


STACK_TAG = "vigil:stack"


def tls_only_policy(queue_arn: str) -> str:
    """The queue policy of every Vigil queue: no request that is not made over TLS."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": queue_arn,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        },
        separators=(",", ":"),
    )


def _code(error: Exception) -> str:
    return error_code(error) or ""


class SqsMailboxQueues(MailboxQueues):
    def __init__(self, client: Any, prefix: str, stack: str = "") -> None:
        longest = len(prefix) + 1 + 32 + len(_DLQ_SUFFIX)
        if longest > _MAX_QUEUE_NAME:
            raise ValueError(
                f"mailbox queue prefix {prefix!r} is too long: queue names would reach "
                f"{longest} characters, SQS allows {_MAX_QUEUE_NAME}"
            )
        super().__init__(prefix)
        self.client = client
        # Every queue made here is tagged with its stack, as the template's are by
        # CloudFormation, so that what outlives a `sam delete` can be found (vigil cleanup).
        self.tags = {STACK_TAG: stack} if stack else {}
        # Queues are created once and never change, so a sandbox looks each up once.
        self._refs: dict[str, QueueRef] = {}
        self._lock = threading.Lock()

    # -- plumbing -------------------------------------------------------------------------
    def _call(self, operation: Callable[..., T], ref: QueueRef | None = None, **kwargs: Any) -> T:
        try:
            return operation(**kwargs)
        except Exception as error:
            if error_code(error) is None:
                raise
            raise self._translate(error, ref) from None

    def _translate(self, error: Exception, ref: QueueRef | None) -> VigilError:
        code = _code(error)
        if code in _GONE and ref is not None:
            # Deleted behind our back: the next call creates it again.
            with self._lock:
                self._refs.pop(ref.name, None)
        return aws_failure(code, "the mailbox queue")

    def _create(self, name: str, attributes: dict[str, str]) -> str:
        try:
            response = self.client.create_queue(
                QueueName=name, Attributes=attributes, tags=self.tags
            )
            return str(response["QueueUrl"])
        except Exception as error:
            if _code(error) not in _EXISTS_OTHERWISE:
                raise
        # It exists with other attributes (created by an earlier version): bring it in line.
        url = str(self.client.get_queue_url(QueueName=name)["QueueUrl"])
        self.client.set_queue_attributes(QueueUrl=url, Attributes=attributes)
        if self.tags:
            self.client.tag_queue(QueueUrl=url, Tags=self.tags)
        return url

    def _provision(self, name: str) -> QueueRef:
        """The dead-letter queue, then the queue that redrives into it: both encrypted, both
        refusing any request not made over TLS, as the template's queues are."""
        dlq_url = self._create(
            name + _DLQ_SUFFIX,
            {
                "MessageRetentionPeriod": str(DLQ_RETENTION_SECONDS),
                "SqsManagedSseEnabled": "true",
            },
        )
        dlq_arn = self.client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        # A queue's policy names its ARN, known only once one queue of the account exists.
        self.client.set_queue_attributes(
            QueueUrl=dlq_url, Attributes={"Policy": tls_only_policy(dlq_arn)}
        )
        queue_arn = dlq_arn.removesuffix(_DLQ_SUFFIX)
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_HANDOUTS}
        url = self._create(
            name,
            {
                "MessageRetentionPeriod": str(QUEUE_RETENTION_SECONDS),
                "SqsManagedSseEnabled": "true",
                "RedrivePolicy": json.dumps(redrive, separators=(",", ":")),
                "Policy": tls_only_policy(queue_arn),
            },
        )
        return QueueRef(name=name, url=url, dlq_url=dlq_url)

    # -- the port -------------------------------------------------------------------------
    def ensure(self, name: str) -> QueueRef:
        with self._lock:
            found = self._refs.get(name)
        if found is not None:
            return found
        ref = self._call(self._provision, name=name)
        with self._lock:
            self._refs[name] = ref
        return ref

    def find(self, name: str) -> QueueRef | None:
        with self._lock:
            found = self._refs.get(name)
        if found is not None:
            return found

        def look_up() -> QueueRef | None:
            try:
                url = self.client.get_queue_url(QueueName=name)["QueueUrl"]
                dlq_url = self.client.get_queue_url(QueueName=name + _DLQ_SUFFIX)["QueueUrl"]
            except Exception as error:
                if _code(error) in _GONE:
                    return None
                raise
            return QueueRef(name=name, url=str(url), dlq_url=str(dlq_url))

        ref = self._call(look_up)
        if ref is not None:
            with self._lock:
                self._refs[name] = ref
        return ref

    def remove(self, name: str) -> None:
        ref = self.find(name)
        with self._lock:
            self._refs.pop(name, None)
        if ref is None:
            return
        for url in (ref.url, ref.dlq_url):
            try:
                self._call(self.client.delete_queue, QueueUrl=url)
            except VigilError:
                # Gone already (another sandbox's removal won): nothing is left to delete.
                if self.find(name) is not None:
                    raise

    def depth(self, ref: QueueRef) -> int:
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        response = self._call(
            self.client.get_queue_attributes, ref, QueueUrl=ref.url, AttributeNames=names
        )
        attributes = response.get("Attributes", {})
        return sum(int(attributes.get(name, 0)) for name in names)

    def send(self, ref: QueueRef, body: str) -> str:
        response = self._call(self.client.send_message, ref, QueueUrl=ref.url, MessageBody=body)
        return str(response["MessageId"])

    def _receive(self, ref: QueueRef, url: str, **kwargs: Any) -> list[QueueMessage]:
        response = self._call(
            self.client.receive_message,
            ref,
            QueueUrl=url,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
            **kwargs,
        )
        return [
            QueueMessage(
                message_id=message["MessageId"],
                receipt_handle=message["ReceiptHandle"],
                body=message["Body"],
                receive_count=int(message.get("Attributes", {}).get("ApproximateReceiveCount", 1)),
            )
            for message in response.get("Messages", [])
        ]

    def receive(
        self, ref: QueueRef, max_messages: int, wait_seconds: int, visibility_seconds: int
    ) -> list[QueueMessage]:
        return self._receive(
            ref,
            ref.url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_seconds,
            VisibilityTimeout=visibility_seconds,
        )

    def delete(self, ref: QueueRef, receipt_handle: str) -> None:
        try:
            self.client.delete_message(QueueUrl=ref.url, ReceiptHandle=receipt_handle)
        except Exception as error:
            if error_code(error) is None:
                raise
            # SQS refuses the handle of a message already gone, or one too old to use. Neither
            # is for the caller to fix: a message that remains is simply received again.
            if _code(error) not in _STALE_RECEIPT:
                raise self._translate(error, ref) from None

    def peek_dead_letters(self, ref: QueueRef, max_messages: int) -> list[QueueMessage]:
        return self._receive(
            ref,
            ref.dlq_url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=0,
            VisibilityTimeout=0,
        )
