"""Namespaces, principals and idempotency records on DynamoDB."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from typing import Any

from vigil.adapters.dynamo_base import DynamoBase, attr_n, attr_s, epoch_ms, idem_key
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.identity import KIND_PREFIX, Kind, Namespace, Principal
from vigil.ports.identity import IdentityPort
from vigil.store import ConditionFailed


class DynamoIdentity(DynamoBase, IdentityPort):
    # -- namespaces -----------------------------------------------------------------------
    def create_namespace(self, namespace: Namespace) -> None:
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item={
                "pk": attr_s(f"NS#{namespace.name}"),
                "sk": attr_s("NAMESPACE"),
                "doc": attr_s(namespace.model_dump_json()),
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def get_namespace(self, name: str) -> Namespace | None:
        item = self._get(f"NS#{name}", "NAMESPACE")
        return Namespace.model_validate_json(item["doc"]["S"]) if item else None

    # -- principals -----------------------------------------------------------------------
    @staticmethod
    def _principal_item(principal: Principal) -> dict[str, Any]:
        return {
            "pk": attr_s(f"NS#{principal.namespace}"),
            "sk": attr_s(f"PRINCIPAL#{principal.id}"),
            "version": attr_n(principal.version),
            "doc": attr_s(principal.model_dump_json()),
        }

    def get_principal(self, namespace: str, principal_id: str) -> Principal | None:
        item = self._get(f"NS#{namespace}", f"PRINCIPAL#{principal_id}")
        return Principal.model_validate_json(item["doc"]["S"]) if item else None

    def create_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        put = {
            "Put": {
                "TableName": self.table,
                "Item": self._principal_item(principal),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        self._transact(self._with_completion(put, completes))

    def update_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        put = {
            "Put": {
                "TableName": self.table,
                "Item": self._principal_item(principal),
                "ConditionExpression": "#v = :expected",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":expected": attr_n(principal.version - 1)},
            }
        }
        self._transact(self._with_completion(put, completes))

    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        prefix = f"PRINCIPAL#{KIND_PREFIX[kind]}_"
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {
                ":pk": attr_s(f"NS#{namespace}"),
                ":prefix": attr_s(prefix),
            },
            "Limit": limit,
        }
        if start_after is not None:
            request["ExclusiveStartKey"] = {
                "pk": attr_s(f"NS#{namespace}"),
                "sk": attr_s(f"PRINCIPAL#{start_after}"),
            }
        items = self._call(self.client.query, **request).get("Items", [])
        return [Principal.model_validate_json(item["doc"]["S"]) for item in items]

    # -- idempotency ----------------------------------------------------------------------
    def claim_idempotency(
        self, record: IdempotencyRecord, now: datetime
    ) -> IdempotencyRecord | None:
        item = {
            **idem_key(record),
            "status": attr_s(record.status),
            "token": attr_s(record.token),
            "fingerprint": attr_s(record.fingerprint),
            "locked_until": attr_n(epoch_ms(record.locked_until)),
            "expires_at": attr_n(epoch_ms(record.expires_at)),
            "ttl": attr_n(int(record.expires_at.timestamp())),
            "doc": attr_s(record.model_dump_json(exclude={"result"})),
        }
        try:
            self._call(
                self.client.put_item,
                TableName=self.table,
                Item=item,
                ConditionExpression=(
                    "attribute_not_exists(pk) OR expires_at <= :now"
                    " OR (#st = :pending AND locked_until <= :now)"
                ),
                ExpressionAttributeNames={"#st": "status"},
                ExpressionAttributeValues={
                    ":now": attr_n(epoch_ms(now)),
                    ":pending": attr_s("pending"),
                },
            )
            return None
        except ConditionFailed:
            existing = self._get(item["pk"]["S"], item["sk"]["S"])
            if existing is None:  # expired and deleted between the two calls: claim again
                return self.claim_idempotency(record, now)
            stored = IdempotencyRecord.model_validate_json(existing["doc"]["S"])
            stored.status = existing["status"]["S"]
            stored.token = existing["token"]["S"]
            if "result" in existing:
                stored.result = json.loads(existing["result"]["S"])
            return stored

    def complete_idempotency(self, record: IdempotencyRecord) -> None:
        self._transact([self._completion(record)])

    def release_idempotency(self, record: IdempotencyRecord) -> None:
        # Someone else's claim by now, or already gone: then nothing of ours is left to release.
        with contextlib.suppress(ConditionFailed):
            self._call(
                self.client.delete_item,
                TableName=self.table,
                Key=idem_key(record),
                ConditionExpression="#st = :pending AND #tok = :tok",
                ExpressionAttributeNames={"#st": "status", "#tok": "token"},
                ExpressionAttributeValues={
                    ":pending": attr_s("pending"),
                    ":tok": attr_s(record.token),
                },
            )
