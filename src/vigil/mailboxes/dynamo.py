"""Mailboxes, deliveries and usage on DynamoDB, under the namespace's partition.

| record   | sk                        | top-level attributes for conditions       |
| -------- | ------------------------- | ----------------------------------------- |
| mailbox  | ``MAILBOX#<address>``     | -                                         |
| delivery | ``DELIVERY#<envelope id>``| version, generation, state, leased_until  |
| usage    | ``USAGE#<envelope id>``   | -                                         |

Usage days are counters under their own partition, ``NS#<ns>#USAGE`` / ``<day>#<principal>``,
added to in the transaction that records a usage.

A named box's address begins with its owner's address, so one agent's boxes are one range.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s, epoch_ms
from vigil.kit.uow import ConditionFailed
from vigil.mailboxes.records import (
    USAGE_KINDS,
    Delivery,
    Mailbox,
    UsageDay,
    UsageEvent,
    agent_address,
)
from vigil.mailboxes.store import MailboxStore, usage_counts, usage_pk

# A delivery record must outlive every SQS copy of its envelope, or a late duplicate would be
# handed out again; SQS keeps no message longer than 14 days.
DELIVERY_RETAIN = timedelta(days=15)


def _key(namespace: str, sk: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(sk)}


class DynamoMailboxes(DynamoBase, MailboxStore):
    # -- mailboxes ------------------------------------------------------------------------
    def add_mailbox(self, mailbox: Mailbox) -> DynamoWrite:
        item = {
            **_key(mailbox.namespace, f"MAILBOX#{mailbox.address}"),
            "doc": attr_s(mailbox.model_dump_json()),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def get_mailbox(self, namespace: str, address: str) -> Mailbox | None:
        item = self._get(f"NS#{namespace}", f"MAILBOX#{address}")
        return Mailbox.model_validate_json(item["doc"]["S"]) if item else None

    def list_mailboxes(self, namespace: str, owner: str, limit: int) -> list[Mailbox]:
        response = self._call(
            self.client.query,
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={
                ":pk": attr_s(f"NS#{namespace}"),
                ":prefix": attr_s(f"MAILBOX#{agent_address(owner)}/"),
            },
            Limit=limit,
            ConsistentRead=True,
        )
        return [Mailbox.model_validate_json(item["doc"]["S"]) for item in response["Items"]]

    # -- deliveries -----------------------------------------------------------------------
    def _delivery_item(self, delivery: Delivery) -> dict[str, Any]:
        return {
            **_key(delivery.namespace, f"DELIVERY#{delivery.envelope_id}"),
            "version": attr_n(delivery.version),
            "generation": attr_n(delivery.generation),
            "state": attr_s(delivery.state),
            "leased_until": attr_n(epoch_ms(delivery.leased_until)),
            "ttl": attr_n(int((delivery.leased_until + DELIVERY_RETAIN).timestamp())),
            "doc": attr_s(delivery.model_dump_json()),
        }

    def get_delivery(self, namespace: str, envelope_id: str) -> Delivery | None:
        item = self._get(f"NS#{namespace}", f"DELIVERY#{envelope_id}")
        return Delivery.model_validate_json(item["doc"]["S"]) if item else None

    def lease_delivery(self, delivery: Delivery, expected_version: int | None) -> None:
        condition: dict[str, Any]
        if expected_version is None:
            condition = {"ConditionExpression": "attribute_not_exists(pk)"}
        else:
            condition = {
                "ConditionExpression": "#v = :expected AND #st = :leased",
                "ExpressionAttributeNames": {"#v": "version", "#st": "state"},
                "ExpressionAttributeValues": {
                    ":expected": attr_n(expected_version),
                    ":leased": attr_s("leased"),
                },
            }
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item=self._delivery_item(delivery),
            **condition,
        )

    def acknowledge_delivery(self, delivery: Delivery, now: datetime) -> None:
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item=self._delivery_item(delivery),
            ConditionExpression=(
                "#v = :expected AND #g = :generation AND #st = :leased AND #lu > :now"
            ),
            ExpressionAttributeNames={
                "#v": "version",
                "#g": "generation",
                "#st": "state",
                "#lu": "leased_until",
            },
            ExpressionAttributeValues={
                ":expected": attr_n(delivery.version - 1),
                ":generation": attr_n(delivery.generation),
                ":leased": attr_s("leased"),
                ":now": attr_n(epoch_ms(now)),
            },
        )

    # -- usage ----------------------------------------------------------------------------
    def record_usage(self, usage: UsageEvent) -> bool:
        recorded = self._put(
            {
                **_key(usage.namespace, f"USAGE#{usage.envelope_id}"),
                "doc": attr_s(usage.model_dump_json()),
            },
            "attribute_not_exists(pk)",
        )
        try:
            self.commit([DynamoWrite(recorded.items, counts=usage_counts(usage))])
        except ConditionFailed:
            return False
        return True

    def usage_days(
        self, namespace: str, first_day: str, last_day: str, after: str | None, limit: int
    ) -> list[UsageDay]:
        pk = attr_s(usage_pk(namespace))
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": {
                ":pk": pk,
                # Every principal id sorts after "#" and before "~".
                ":first": attr_s(f"{first_day}#"),
                ":last": attr_s(f"{last_day}#~"),
            },
            "Limit": limit,
            "ConsistentRead": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {"pk": pk, "sk": attr_s(after)}
        items = self._call(self.client.query, **request).get("Items", [])
        return [
            UsageDay(
                day=item["sk"]["S"][:10],
                principal=item["sk"]["S"][11:],
                deliveries=int(item["deliveries"]["N"]),
                by_kind={k: int(item[k]["N"]) if k in item else 0 for k in USAGE_KINDS},
            )
            for item in items
        ]
