"""Channels on DynamoDB: one partition per namespace, ``NS#<ns>#CHANNELS``, sorted by channel
id, so a namespace's channels are one query; every write is conditional on the version."""

from __future__ import annotations

from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.notifications.records import Channel
from vigil.notifications.store import ChannelStore


def _pk(namespace: str) -> str:
    return f"NS#{namespace}#CHANNELS"


def _key(namespace: str, channel_id: str) -> dict[str, Any]:
    return {"pk": attr_s(_pk(namespace)), "sk": attr_s(channel_id)}


def _item(channel: Channel) -> dict[str, Any]:
    return {
        **_key(channel.namespace, channel.id),
        "version": attr_n(channel.version),
        "doc": attr_s(channel.model_dump_json()),
    }


def _at_version(version: int) -> dict[str, Any]:
    """The condition that the stored channel is at ``version``."""
    return {
        "ConditionExpression": "#v = :expected",
        "ExpressionAttributeNames": {"#v": "version"},
        "ExpressionAttributeValues": {":expected": attr_n(version)},
    }


class DynamoChannels(DynamoBase, ChannelStore):
    def get_channel(self, namespace: str, channel_id: str) -> Channel | None:
        item = self._get(_pk(namespace), channel_id)
        return Channel.model_validate_json(item["doc"]["S"]) if item else None

    def list_channels(self, namespace: str) -> list[Channel]:
        request = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": attr_s(_pk(namespace))},
            "ConsistentRead": True,
        }
        return [
            Channel.model_validate_json(item["doc"]["S"])
            for page in self._pages(request)
            for item in page["Items"]
        ]

    def add_channel(self, channel: Channel) -> DynamoWrite:
        return self._put(_item(channel), "attribute_not_exists(pk)")

    def save_channel(self, channel: Channel) -> DynamoWrite:
        put = {"TableName": self.table, "Item": _item(channel), **_at_version(channel.version - 1)}
        return DynamoWrite([{"Put": put}])

    def delete_channel(self, channel: Channel) -> DynamoWrite:
        delete = {
            "TableName": self.table,
            "Key": _key(channel.namespace, channel.id),
            **_at_version(channel.version),
        }
        return DynamoWrite([{"Delete": delete}])
