"""What Lambda's SQS poller hands a function and reads back: the event for a batch of messages,
and which of them the function reported as failed (``ReportBatchItemFailures``). The local
event pump plays the poller with these."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from vigil.local.deployment import LocalEventSourceMapping


def sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda's SQS poller hands to a function for ``messages``."""
    records = []
    for message in messages:
        record: dict[str, Any] = {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message.get("Body", ""),
            "attributes": dict(message.get("Attributes") or {}),
            "messageAttributes": {
                name: _lambda_message_attribute(value)
                for name, value in (message.get("MessageAttributes") or {}).items()
            },
            "md5OfBody": message.get("MD5OfBody"),
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": region,
        }
        if "MD5OfMessageAttributes" in message:
            record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
        records.append(record)
    return {"Records": records}


def _lambda_message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    attribute: dict[str, Any] = {
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": value["DataType"],
    }
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return attribute


def failed_records(
    mapping: LocalEventSourceMapping, response: Any, message_ids: set[str]
) -> set[str] | None:
    """Ids to keep after a successful invocation; None when the whole batch failed."""
    if not mapping.report_batch_item_failures or not isinstance(response, dict):
        return set()
    failures = response.get("batchItemFailures")
    if not failures:
        return set()
    if not isinstance(failures, list):
        return None
    failed = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if identifier not in message_ids:
            # Lambda treats a malformed or unknown identifier as the failure of the batch.
            return None
        failed.add(identifier)
    return failed
