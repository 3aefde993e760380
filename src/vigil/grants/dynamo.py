"""The authorization server's records on DynamoDB. A client registered here and a code are
items of their own partitions (``OAUTH#CLIENT#<id>``, ``OAUTH#CODE#<digest>``), found by what
a request names; a code carries ``ttl``, so DynamoDB deletes it once it has expired. Grants
are listed under their namespace's partition (``GRANT#<id>``), each deleted the same way once
it has been neither used nor ended for GRANT_KEPT_DAYS."""

from __future__ import annotations

from typing import Any

from vigil.grants.records import Client, Code, Grant
from vigil.grants.store import OAuthStore
from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s


def _client_key(client_id: str) -> dict[str, Any]:
    return {"pk": attr_s(f"OAUTH#CLIENT#{client_id}"), "sk": attr_s("CLIENT")}


def _code_key(code_hash: str) -> dict[str, Any]:
    return {"pk": attr_s(f"OAUTH#CODE#{code_hash}"), "sk": attr_s("CODE")}


def _grant_key(namespace: str, grant_id: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"GRANT#{grant_id}")}


class DynamoOAuth(DynamoBase, OAuthStore):
    def add_client(self, client: Client) -> None:
        item = {**_client_key(client.client_id), "doc": attr_s(client.model_dump_json())}
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
        )

    def get_client(self, client_id: str) -> Client | None:
        key = _client_key(client_id)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return Client.model_validate_json(item["doc"]["S"]) if item else None

    def add_code(self, code: Code) -> None:
        item = {
            **_code_key(code.code_hash),
            "doc": attr_s(code.model_dump_json()),
            "ttl": attr_n(int(code.expires_at.timestamp())),
        }
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
        )

    def get_code(self, code_hash: str) -> Code | None:
        key = _code_key(code_hash)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return Code.model_validate_json(item["doc"]["S"]) if item else None

    def redeem_code(self, code: Code) -> DynamoWrite:
        redeemed = code.model_copy(update={"redeemed": True})
        update = self._update(
            _code_key(code.code_hash),
            UpdateExpression="SET doc = :doc, redeemed = :yes",
            ConditionExpression="attribute_exists(pk) AND attribute_not_exists(redeemed)",
            ExpressionAttributeValues={
                ":doc": attr_s(redeemed.model_dump_json()),
                ":yes": {"BOOL": True},
            },
        )
        return DynamoWrite([update])

    def get_grant(self, namespace: str, grant_id: str) -> Grant | None:
        key = _grant_key(namespace, grant_id)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return Grant.model_validate_json(item["doc"]["S"]) if item else None

    def get_grants(self, namespace: str, grant_ids: list[str]) -> list[Grant]:
        keys = [_grant_key(namespace, grant_id) for grant_id in sorted(set(grant_ids))]
        return [Grant.model_validate_json(i["doc"]["S"]) for i in self._batch_get(keys)]

    def list_grants(self, namespace: str, start_after: str | None, limit: int) -> list[Grant]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {
                ":pk": attr_s(f"NS#{namespace}"),
                ":prefix": attr_s("GRANT#"),
            },
            "Limit": limit,
        }
        if start_after is not None:
            request["ExclusiveStartKey"] = _grant_key(namespace, start_after)
        items = self._call(self.client.query, **request).get("Items", [])
        return [Grant.model_validate_json(item["doc"]["S"]) for item in items]

    def _grant_item(self, grant: Grant) -> dict[str, Any]:
        return {
            **_grant_key(grant.namespace, grant.id),
            "version": attr_n(grant.version),
            "doc": attr_s(grant.model_dump_json()),
            "ttl": attr_n(int(grant.kept_until.timestamp())),
        }

    def add_grant(self, grant: Grant) -> DynamoWrite:
        return self._put(self._grant_item(grant), "attribute_not_exists(pk)")

    def save_grant(self, grant: Grant) -> DynamoWrite:
        return self._put(
            self._grant_item(grant),
            "#v = :expected",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":expected": attr_n(grant.version - 1)},
        )
