"""Conversations and their messages on DynamoDB.

| record         | pk                          | sk                         |
| -------------- | --------------------------- | -------------------------- |
| conversation   | ``NS#<ns>#CONV#<id>``       | ``CONV``                   |
| message        | ``NS#<ns>#CONV#<id>``       | ``MSG#<seq, 12 digits>``   |
| reused direct  | ``NS#<ns>``                 | ``DIRECT#<id>#<id>``       |

A conversation and its messages share a partition, so a page of history is one consistent
Query in number order. The conversation keeps ``version`` and ``last_seq`` at the top level for
the conditions (a send moves ``last_seq`` alone, conditional on both); a message keeps
``delivered`` there, the one thing that changes after it is stored. The reused direct
conversation of a pair is keyed by the two principal ids in sorted order.
"""

from __future__ import annotations

import json
from typing import Any

from vigil.attachments.store import Membership
from vigil.conversations.records import Conversation, Message
from vigil.conversations.store import ConversationStore
from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s

_SEQ_DIGITS = 12
_CONVERSATION_DOC_EXCLUDE = {"version", "last_seq"}


def _pk(namespace: str, conversation_id: str) -> dict[str, str]:
    return attr_s(f"NS#{namespace}#CONV#{conversation_id}")


def _conversation_key(namespace: str, conversation_id: str) -> dict[str, Any]:
    return {"pk": _pk(namespace, conversation_id), "sk": attr_s("CONV")}


def _message_key(namespace: str, conversation_id: str, seq: int) -> dict[str, Any]:
    return {"pk": _pk(namespace, conversation_id), "sk": attr_s(f"MSG#{seq:0{_SEQ_DIGITS}d}")}


def _direct_key(namespace: str, one: str, other: str) -> dict[str, Any]:
    first, second = sorted((one, other))
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"DIRECT#{first}#{second}")}


def _conversation(item: dict[str, Any]) -> Conversation:
    fields = json.loads(item["doc"]["S"])
    fields["version"] = int(item["version"]["N"])
    fields["last_seq"] = int(item["last_seq"]["N"])
    return Conversation.model_validate(fields)


def _message(item: dict[str, Any]) -> Message:
    fields = json.loads(item["doc"]["S"])
    fields["delivered"] = int(item["delivered"]["N"])
    return Message.model_validate(fields)


class DynamoConversations(DynamoBase, ConversationStore):
    def get_conversation(self, namespace: str, conversation_id: str) -> Conversation | None:
        item = self._get(f"NS#{namespace}#CONV#{conversation_id}", "CONV")
        return _conversation(item) if item else None

    def get_direct(self, namespace: str, one: str, other: str) -> str | None:
        key = _direct_key(namespace, one, other)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return item["conversation_id"]["S"] if item else None

    def _conversation_item(self, conversation: Conversation) -> dict[str, Any]:
        return {
            **_conversation_key(conversation.namespace, conversation.id),
            "version": attr_n(conversation.version),
            "last_seq": attr_n(conversation.last_seq),
            "doc": attr_s(conversation.model_dump_json(exclude=_CONVERSATION_DOC_EXCLUDE)),
        }

    def _message_put(self, message: Message) -> dict[str, Any]:
        item = {
            **_message_key(message.namespace, message.conversation_id, message.seq),
            "delivered": attr_n(message.delivered),
            "doc": attr_s(message.model_dump_json(exclude={"delivered"})),
        }
        return {
            "Put": {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def start_conversation(
        self, conversation: Conversation, first: Message, reused: bool = False
    ) -> DynamoWrite:
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": self._conversation_item(conversation),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            self._message_put(first),
        ]
        if reused:
            pair = _direct_key(conversation.namespace, *conversation.principal_ids)
            items.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": {**pair, "conversation_id": attr_s(conversation.id)},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        return DynamoWrite(items)

    def add_message(self, conversation: Conversation, message: Message) -> DynamoWrite:
        numbering = self._update(
            _conversation_key(conversation.namespace, conversation.id),
            UpdateExpression="SET last_seq = :seq",
            ConditionExpression="version = :version AND last_seq = :previous",
            ExpressionAttributeValues={
                ":seq": attr_n(message.seq),
                ":previous": attr_n(message.seq - 1),
                ":version": attr_n(conversation.version),
            },
        )
        return DynamoWrite([numbering, self._message_put(message)])

    def save_conversation(self, conversation: Conversation) -> DynamoWrite:
        return self._put(
            self._conversation_item(conversation),
            "version = :expected AND last_seq = :seq",
            ExpressionAttributeValues={
                ":expected": attr_n(conversation.version - 1),
                ":seq": attr_n(conversation.last_seq),
            },
        )

    def require_membership(self, membership: Membership) -> DynamoWrite:
        check = {
            "TableName": self.table,
            "Key": _conversation_key(membership.namespace, membership.conversation_id),
            "ConditionExpression": "version = :version",
            "ExpressionAttributeValues": {":version": attr_n(membership.version)},
        }
        return DynamoWrite([{"ConditionCheck": check}])

    def get_message(self, namespace: str, conversation_id: str, seq: int) -> Message | None:
        key = _message_key(namespace, conversation_id, seq)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return _message(item) if item else None

    def list_messages(
        self, namespace: str, conversation_id: str, after: int, limit: int
    ) -> list[Message]:
        request = {
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": {
                ":pk": _pk(namespace, conversation_id),
                ":first": _message_key(namespace, conversation_id, after + 1)["sk"],
                ":last": attr_s("MSG#" + "9" * _SEQ_DIGITS),
            },
            "Limit": limit,
            "ConsistentRead": True,
        }
        found: list[Message] = []
        # A page stops at 1 MB as well as at the limit; bodies are large enough to meet it.
        for page in self._pages(request):
            found += [_message(item) for item in page.get("Items", [])]
            if len(found) >= limit:
                break
        return found[:limit]

    def mark_delivered(self, message: Message, count: int) -> None:
        self._call(
            self.client.update_item,
            TableName=self.table,
            Key=_message_key(message.namespace, message.conversation_id, message.seq),
            UpdateExpression="SET delivered = :count",
            ConditionExpression="attribute_exists(pk) AND delivered < :count",
            ExpressionAttributeValues={":count": attr_n(count)},
        )
