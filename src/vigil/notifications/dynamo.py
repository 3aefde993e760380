"""Channels on DynamoDB: one partition per namespace, ``NS#<ns>#CHANNELS``, sorted by channel
id, so a namespace's channels are one query; every write is conditional on the version.

A notification is one item, ``NS#<ns>#NOTICE#<event id>``: the event (``doc``) and a map of its
deliveries by channel id, each ``{attempt, state, doc}``, so that a delivery's claim and outcome
are conditional updates of its own entry, and notifications to different channels of one event
do not contend on versions. A channel's failures are a partition of their own,
``NS#<ns>#CHANNEL#<id>#FAILURES``, sorted by when they failed. Both expire after
NOTIFICATION_RETENTION (TTL).

The accounts people linked on a channel's far side are one partition, ``NS#<ns>#ACCOUNTS``,
sorted by ``<surface>#<account>``; what a Slack interaction is owed is an item of its own,
``NS#<ns>#SLACK#<id>``, deleted (TTL) when its response_url stops working.

A principal's feed is a partition, ``NS#<ns>#FEED#<principal>``: its record (``FEED``, with its
subscriptions) and its ring's slots (``SLOT#<n>``), each slot read by its key. The record expires
NOTIFICATION_RETENTION after the last listener could have, a slot that long after its event."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.notifications.feeds import Feed, FeedEntry
from vigil.notifications.records import (
    NOTIFICATION_RETENTION,
    RESPONSE_URL_LIFETIME,
    AccountLink,
    AccountSurface,
    Acknowledgement,
    Channel,
    ChannelDelivery,
    DeliveryFailure,
    Notification,
    SlackResponse,
)
from vigil.notifications.store import ChannelStore, FeedStore


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


def _notice_key(namespace: str, event_id: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#NOTICE#{event_id}"), "sk": attr_s("NOTICE")}


def _failures_pk(namespace: str, channel_id: str) -> str:
    return f"NS#{namespace}#CHANNEL#{channel_id}#FAILURES"


def _delivery_value(delivery: ChannelDelivery) -> dict[str, Any]:
    return {
        "M": {
            "attempt": attr_n(delivery.attempt),
            "state": attr_s(delivery.state),
            "doc": attr_s(delivery.model_dump_json()),
        }
    }


def _ttl(notification_time: Any) -> dict[str, str]:
    return attr_n(int((notification_time + NOTIFICATION_RETENTION).timestamp()))


def _feed_pk(namespace: str, principal: str) -> str:
    return f"NS#{namespace}#FEED#{principal}"


def _slot(feed: Feed, seq: int) -> str:
    return f"SLOT#{feed.slot(seq):06d}"


def _slot_key(feed: Feed, seq: int) -> dict[str, Any]:
    return {"pk": attr_s(_feed_pk(feed.namespace, feed.principal)), "sk": attr_s(_slot(feed, seq))}


class DynamoChannels(DynamoBase, ChannelStore, FeedStore):
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

    # -- notifications --------------------------------------------------------------------------
    def add_notification(self, notification: Notification) -> DynamoWrite:
        doc = notification.model_dump_json(exclude={"deliveries", "acknowledged"})
        item = {
            **_notice_key(notification.namespace, notification.event_id),
            "doc": attr_s(doc),
            "deliveries": {
                "M": {cid: _delivery_value(d) for cid, d in notification.deliveries.items()}
            },
            "ttl": _ttl(notification.created_at),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def get_notification(self, namespace: str, event_id: str) -> Notification | None:
        item = self._get(f"NS#{namespace}#NOTICE#{event_id}", "NOTICE")
        if item is None:
            return None
        fields = json.loads(item["doc"]["S"])
        fields["deliveries"] = {
            cid: json.loads(value["M"]["doc"]["S"])
            for cid, value in item["deliveries"]["M"].items()
        }
        if "ack" in item:
            fields["acknowledged"] = json.loads(item["ack"]["S"])
        return Notification.model_validate(fields)

    def acknowledge(
        self, namespace: str, event_id: str, acknowledgement: Acknowledgement
    ) -> DynamoWrite:
        update = self._update(
            _notice_key(namespace, event_id),
            UpdateExpression="SET ack = :ack",
            ConditionExpression="attribute_exists(pk) AND attribute_not_exists(ack)",
            ExpressionAttributeValues={":ack": attr_s(acknowledgement.model_dump_json())},
        )
        return DynamoWrite([update])

    def save_channel_delivery(
        self, namespace: str, event_id: str, delivery: ChannelDelivery, expected: ChannelDelivery
    ) -> DynamoWrite:
        update = self._update(
            _notice_key(namespace, event_id),
            UpdateExpression="SET deliveries.#c = :new",
            ConditionExpression="deliveries.#c.attempt = :attempt AND deliveries.#c.#s = :state",
            ExpressionAttributeNames={"#c": delivery.channel_id, "#s": "state"},
            ExpressionAttributeValues={
                ":new": _delivery_value(delivery),
                ":attempt": attr_n(expected.attempt),
                ":state": attr_s(expected.state),
            },
        )
        return DynamoWrite([update])

    def add_failure(self, failure: DeliveryFailure) -> DynamoWrite:
        item = {
            "pk": attr_s(_failures_pk(failure.namespace, failure.channel_id)),
            "sk": attr_s(failure.position),
            "doc": attr_s(failure.model_dump_json()),
            "ttl": _ttl(failure.failed_at),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def remove_failure(self, failure: DeliveryFailure) -> DynamoWrite:
        delete = {
            "TableName": self.table,
            "Key": {
                "pk": attr_s(_failures_pk(failure.namespace, failure.channel_id)),
                "sk": attr_s(failure.position),
            },
            "ConditionExpression": "attribute_exists(pk)",
        }
        return DynamoWrite([{"Delete": delete}])

    def list_failures(
        self, namespace: str, channel_id: str, before: str | None, limit: int
    ) -> list[DeliveryFailure]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk" + (" AND sk < :before" if before else ""),
            "ExpressionAttributeValues": {
                ":pk": attr_s(_failures_pk(namespace, channel_id)),
                **({":before": attr_s(before)} if before else {}),
            },
            "ScanIndexForward": False,
            "Limit": limit,
            "ConsistentRead": True,
        }
        response = self._call(self.client.query, **request)
        return [DeliveryFailure.model_validate_json(i["doc"]["S"]) for i in response["Items"]]

    # -- feeds ------------------------------------------------------------------------------------
    def get_feed(self, namespace: str, principal: str) -> Feed | None:
        item = self._get(_feed_pk(namespace, principal), "FEED")
        return Feed.model_validate_json(item["doc"]["S"]) if item else None

    def save_feed(self, feed: Feed) -> DynamoWrite:
        item = {
            "pk": attr_s(_feed_pk(feed.namespace, feed.principal)),
            "sk": attr_s("FEED"),
            "version": attr_n(feed.version),
            "doc": attr_s(feed.model_dump_json()),
        }
        until = feed.listens_until()
        if until is not None:
            item["ttl"] = _ttl(until)
        if feed.version == 1:
            return self._put(item, "attribute_not_exists(pk)")
        put = {"TableName": self.table, "Item": item, **_at_version(feed.version - 1)}
        return DynamoWrite([{"Put": put}])

    def put_feed_entry(self, feed: Feed, entry: FeedEntry) -> DynamoWrite:
        occurred = datetime.fromisoformat(entry.event["occurred_at"])
        item = {
            **_slot_key(feed, entry.seq),
            "doc": attr_s(entry.model_dump_json()),
            "ttl": _ttl(occurred),
        }
        return self._put(item)

    def get_feed_entries(self, feed: Feed, seqs: list[int]) -> list[FeedEntry]:
        found = self._batch_get([_slot_key(feed, seq) for seq in seqs])
        by_slot = {i["sk"]["S"]: FeedEntry.model_validate_json(i["doc"]["S"]) for i in found}
        slots = [_slot(feed, seq) for seq in seqs]
        return [by_slot[slot] for slot in slots if slot in by_slot]

    # -- accounts and Slack's responses --------------------------------------------------------
    def link_account(self, link: AccountLink) -> DynamoWrite:
        item = {
            **_account_key(link.namespace, link.surface, link.account),
            "doc": attr_s(link.model_dump_json()),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def linked_account(self, namespace: str, surface: AccountSurface, account: str) -> str | None:
        key = _account_key(namespace, surface, account)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return AccountLink.model_validate_json(item["doc"]["S"]).principal_id if item else None

    def unlink_account(
        self, namespace: str, surface: AccountSurface, account: str, principal_id: str
    ) -> DynamoWrite:
        delete = {
            "TableName": self.table,
            "Key": _account_key(namespace, surface, account),
            "ConditionExpression": "contains(doc, :linked)",
            "ExpressionAttributeValues": {":linked": attr_s(f'"principal_id":"{principal_id}"')},
        }
        return DynamoWrite([{"Delete": delete}])

    def add_slack_response(self, response: SlackResponse) -> bool:
        ends = response.created_at + RESPONSE_URL_LIFETIME
        item = {
            **_response_key(response.namespace, response.id),
            "doc": attr_s(response.model_dump_json()),
            "ttl": attr_n(int(ends.timestamp())),
        }
        return self._put_new(item)

    def get_slack_response(self, namespace: str, response_id: str) -> SlackResponse | None:
        key = _response_key(namespace, response_id)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return SlackResponse.model_validate_json(item["doc"]["S"]) if item else None


def _account_key(namespace: str, surface: str, account: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#ACCOUNTS"), "sk": attr_s(f"{surface}#{account}")}


def _response_key(namespace: str, response_id: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#SLACK#{response_id}"), "sk": attr_s("RESPONSE")}
