"""The AWS service limits Vigil is designed within, in one place, and how the in-memory fakes
enforce them: a fake that accepted a 500 KB item or a 150-item transaction would hide exactly
the failures that stop a deployed stack.

DynamoDB refuses an item over 400 KB and a transaction over 100 items or 4 MB with a
``ValidationException``; SQS refuses a message over its maximum size with an
``InvalidParameterValue``. The fakes raise what the adapters turn those into, through the same
translation (``aws_failure``), so a test sees on the fake what a caller would see on AWS.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from vigil.errors import VigilError
from vigil.kit.aws import aws_failure

MAX_ITEM_BYTES = 400 * 1024
MAX_TRANSACTION_ITEMS = 100  # also the most keys one BatchGetItem takes
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
# SQS accepts up to 1 MiB since 2025; Vigil keeps to the long-standing 256 KiB, which every
# region and every SQS stand-in accepts.
MAX_MESSAGE_BYTES = 256 * 1024

# What the fake adds to a record's JSON for the key and the attributes beside the document.
_ITEM_OVERHEAD = 100


def item_bytes(key: object, record: BaseModel | None = None) -> int:
    """The size a DynamoDB item would have, as the fakes count it: the key's text and the
    record as JSON (the adapters store records as a JSON document beside their keys)."""
    size = len(str(key).encode()) + _ITEM_OVERHEAD
    if record is not None:
        size += len(record.model_dump_json().encode())
    return size


def _refused(what: str) -> VigilError:
    return aws_failure("ValidationException", what)


def require_transaction(sizes: Sequence[int]) -> None:
    """Raises what DynamoDB's refusal becomes unless items of ``sizes`` fit one transaction."""
    if any(size > MAX_ITEM_BYTES for size in sizes):
        raise _refused("the store")
    if len(sizes) > MAX_TRANSACTION_ITEMS or sum(sizes) > MAX_TRANSACTION_BYTES:
        raise _refused("the store")


def require_message(body: str, what: str = "the mailbox queue") -> None:
    """Raises what SQS's refusal becomes unless ``body`` fits one message."""
    if len(body.encode()) > MAX_MESSAGE_BYTES:
        raise aws_failure("InvalidParameterValue", what)
