"""Namespaces and principals on DynamoDB, under the namespace's partition; the console's
sign-ins, each session under its namespace's partition too, each counter of attempts an item of
its own per window. Both carry ``ttl``, so DynamoDB deletes what has ended."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from vigil.identity.records import AttemptWindow, Namespace, Principal, SignInSession
from vigil.identity.store import IdentityStore, SignInStore
from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.kit.principals import KIND_PREFIX, Kind
from vigil.kit.uow import ConditionFailed


def _principal_item(principal: Principal) -> dict[str, Any]:
    return {
        "pk": attr_s(f"NS#{principal.namespace}"),
        "sk": attr_s(f"PRINCIPAL#{principal.id}"),
        "version": attr_n(principal.version),
        "doc": attr_s(principal.model_dump_json()),
    }


def _sign_in_key(session: SignInSession) -> dict[str, Any]:
    return {
        "pk": attr_s(f"NS#{session.namespace}"),
        "sk": attr_s(f"CONSOLE#{session.principal_id}#{session.session_id}"),
    }


def _seconds(moment: datetime) -> dict[str, str]:
    return attr_n(int(moment.timestamp()))


class DynamoIdentity(DynamoBase, IdentityStore, SignInStore):
    def add_namespace(self, namespace: Namespace) -> DynamoWrite:
        item = {
            "pk": attr_s(f"NS#{namespace.name}"),
            "sk": attr_s("NAMESPACE"),
            "doc": attr_s(namespace.model_dump_json()),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def get_namespace(self, name: str) -> Namespace | None:
        item = self._get(f"NS#{name}", "NAMESPACE")
        return Namespace.model_validate_json(item["doc"]["S"]) if item else None

    def get_principal(
        self, namespace: str, principal_id: str, *, consistent: bool = True
    ) -> Principal | None:
        item = self._get(f"NS#{namespace}", f"PRINCIPAL#{principal_id}", consistent=consistent)
        return Principal.model_validate_json(item["doc"]["S"]) if item else None

    def get_principals(self, namespace: str, principal_ids: list[str]) -> list[Principal]:
        keys = [
            {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"PRINCIPAL#{i}")}
            for i in sorted(set(principal_ids))
        ]
        return [Principal.model_validate_json(i["doc"]["S"]) for i in self._batch_get(keys)]

    def add_principal(self, principal: Principal) -> DynamoWrite:
        return self._put(_principal_item(principal), "attribute_not_exists(pk)")

    def save_principal(self, principal: Principal) -> DynamoWrite:
        return self._put(
            _principal_item(principal),
            "#v = :expected",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":expected": attr_n(principal.version - 1)},
        )

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

    def open_sign_in(self, session: SignInSession) -> None:
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item={**_sign_in_key(session), "ttl": _seconds(session.ends_at)},
            ConditionExpression="attribute_not_exists(pk)",
        )

    def sign_in_live(self, session: SignInSession, now: datetime) -> bool:
        # Its ttl is its end: DynamoDB deletes an ended item only within a day or two, so a
        # present item is live only until then.
        key = _sign_in_key(session)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return item is not None and int(item["ttl"]["N"]) > now.timestamp()

    def extend_sign_in(self, session: SignInSession, now: datetime) -> bool:
        try:
            self._call(
                self.client.update_item,
                TableName=self.table,
                Key=_sign_in_key(session),
                UpdateExpression="SET #ttl = :ends",
                ConditionExpression="attribute_exists(pk) AND #ttl > :now",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":ends": _seconds(session.ends_at),
                    ":now": attr_n(int(now.timestamp())),
                },
            )
        except ConditionFailed:
            return False
        return True

    def end_sign_in(self, session: SignInSession) -> None:
        self._call(self.client.delete_item, TableName=self.table, Key=_sign_in_key(session))

    def count_sign_in_attempt(self, counter: str, window: AttemptWindow, limit: int) -> bool:
        with contextlib.suppress(ConditionFailed):
            self._call(
                self.client.update_item,
                TableName=self.table,
                Key={
                    "pk": attr_s(f"SIGN-IN#{counter}"),
                    "sk": attr_s(f"WINDOW#{int(window.starts_at.timestamp())}"),
                },
                UpdateExpression="ADD attempts :one SET #ttl = :ends",
                ConditionExpression="attribute_not_exists(attempts) OR attempts < :limit",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":one": attr_n(1),
                    ":limit": attr_n(limit),
                    ":ends": _seconds(window.ends_at),
                },
            )
            return True
        return False
