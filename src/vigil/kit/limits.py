"""The AWS service limits Vigil is designed within, in one place, and how the in-memory fakes
enforce them: a fake that accepted a 500 KB item or a 150-item transaction would hide exactly
the failures that stop a deployed stack.

DynamoDB refuses an item over 400 KB and a transaction over 100 items or 4 MB with a
``ValidationException``; SQS refuses a message over its maximum size with an
``InvalidParameterValue``. The fakes raise what the adapters turn those into, through the same
translation (``aws_failure``), so a test sees on the fake what a caller would see on AWS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def dynamo_item_bytes(item: Mapping[str, Any]) -> int:
    """The size of an item, in DynamoDB's typed form (``{"name": {"S": "…"}}``), by DynamoDB's
    rules: each attribute's name in UTF-8 plus its value; a string its UTF-8 bytes, a binary its
    raw bytes, a number 1 byte per two significant digits plus 1, a boolean or null 1, a list or
    map 3 bytes plus 1 per element plus its elements (a map's names counted as names), a set its
    members. Write units are charged per started KB of it, read units per started 4 KB."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    ((kind, content),) = value.items()
    if kind == "S":
        return len(content.encode())
    if kind == "N":
        return _number_bytes(content)
    if kind == "B":
        return len(content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(member.encode()) for member in content)
    if kind == "NS":
        return sum(_number_bytes(member) for member in content)
    if kind == "BS":
        return sum(len(member) for member in content)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(member) for member in content)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_bytes(v) for k, v in content.items())
    raise ValueError(f"not a DynamoDB attribute value: {kind}")


def _number_bytes(text: str) -> int:
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "").strip("0")
    return (len(digits) + 1) // 2 + 1 + (1 if text.startswith("-") else 0)


def item_bytes(key: object, record: BaseModel | None = None) -> int:
    """The size a DynamoDB item would have, as the fakes count it: the key's text and the
    record as JSON (the adapters store records as a JSON document beside their keys), by
    ``dynamo_item_bytes``, with room for the attributes the adapters keep beside them."""
    item = {"pk": {"S": str(key)}}
    if record is not None:
        item["doc"] = {"S": record.model_dump_json()}
    return dynamo_item_bytes(item) + _ITEM_OVERHEAD


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
