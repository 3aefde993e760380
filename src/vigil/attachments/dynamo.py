"""Attachment metadata on DynamoDB.

An attachment is one item (``NS#<ns>`` / ``ATT#<id>``); a file in a conversation also has a
copy under the conversation (``NS#<ns>#FILES#<conversation>`` / ``<list position>``), written
in the same transaction, so a conversation's files are one Query in the order they came.
"""

from __future__ import annotations

from typing import Any

from vigil.attachments.records import Attachment
from vigil.attachments.store import AttachmentStore
from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s


def _key(namespace: str, attachment_id: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"ATT#{attachment_id}")}


def _files_pk(namespace: str, conversation_id: str) -> dict[str, str]:
    return attr_s(f"NS#{namespace}#FILES#{conversation_id}")


class DynamoAttachments(DynamoBase, AttachmentStore):
    def save_attachment(self, attachment: Attachment, expected_version: int | None) -> DynamoWrite:
        doc = attr_s(attachment.model_dump_json())
        item = {
            **_key(attachment.namespace, attachment.id),
            "version": attr_n(attachment.version),
            "doc": doc,
        }
        if expected_version is None:
            write = self._put(item, "attribute_not_exists(pk)")
        else:
            write = self._put(
                item,
                "version = :expected",
                ExpressionAttributeValues={":expected": attr_n(expected_version)},
            )
        if attachment.conversation_id is not None:
            listed = {
                "pk": _files_pk(attachment.namespace, attachment.conversation_id),
                "sk": attr_s(attachment.list_position),
                "doc": doc,
            }
            write.items.append({"Put": {"TableName": self.table, "Item": listed}})
        return write

    def get_attachment(self, namespace: str, attachment_id: str) -> Attachment | None:
        key = _key(namespace, attachment_id)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return Attachment.model_validate_json(item["doc"]["S"]) if item else None

    def get_attachments(self, namespace: str, attachment_ids: list[str]) -> list[Attachment]:
        keys = [_key(namespace, i) for i in dict.fromkeys(attachment_ids)]
        items = self._batch_get(keys) if keys else []
        return [Attachment.model_validate_json(item["doc"]["S"]) for item in items]

    def files_of(
        self, namespace: str, conversation_id: str, after: str | None, limit: int
    ) -> list[Attachment]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": _files_pk(namespace, conversation_id)},
            "Limit": limit,
            "ConsistentRead": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {
                "pk": _files_pk(namespace, conversation_id),
                "sk": attr_s(after),
            }
        response = self._call(self.client.query, **request)
        return [Attachment.model_validate_json(item["doc"]["S"]) for item in response["Items"]]
