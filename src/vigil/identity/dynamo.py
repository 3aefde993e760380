"""Namespaces and principals on DynamoDB; the console's sign-ins, each session under its
namespace's partition, each counter of attempts an item of its own per window. Both carry
``ttl``, so DynamoDB deletes what has ended.

A principal is written twice, in one transaction: under its namespace's partition, which the
listings query, and in a partition of its own (``PRINCIPAL#<ns>#<id>``), which every read by id
uses, the authentication of every call among them. A namespace's calls would otherwise all read
one partition, which takes 3,000 read units a second: about 6,000 calls a second for a whole
namespace, however many agents it has. A principal stored before it had its own copy is read
from the namespace's partition, and ``spread_principal`` (run by ``vigil backfill-indexes``)
gives it one, or a newer one where a version that wrote no copy changed it since (a rollback)."""

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


def _own_key(namespace: str, principal_id: str) -> dict[str, Any]:
    """Where a principal's own copy is: the partition its reads by id use."""
    return {"pk": attr_s(f"PRINCIPAL#{namespace}#{principal_id}"), "sk": attr_s("PRINCIPAL")}


def _own_item(listed: dict[str, Any]) -> dict[str, Any]:
    """The principal's own copy of its item as listed: the same version and document."""
    namespace = listed["pk"]["S"].removeprefix("NS#")
    principal_id = listed["sk"]["S"].removeprefix("PRINCIPAL#")
    return {**listed, **_own_key(namespace, principal_id)}


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
        own = _own_key(namespace, principal_id)
        item = self._get(own["pk"]["S"], own["sk"]["S"], consistent=consistent)
        if item is None:  # stored before principals had their own copy
            item = self._get(f"NS#{namespace}", f"PRINCIPAL#{principal_id}", consistent=consistent)
        return Principal.model_validate_json(item["doc"]["S"]) if item else None

    def get_principals(self, namespace: str, principal_ids: list[str]) -> list[Principal]:
        wanted = sorted(set(principal_ids))
        found = self._batch_get([_own_key(namespace, i) for i in wanted])
        seen = {item["pk"]["S"].rpartition("#")[2] for item in found}
        older = [
            {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"PRINCIPAL#{i}")}
            for i in wanted
            if i not in seen
        ]
        if older:
            found += self._batch_get(older)
        return [Principal.model_validate_json(i["doc"]["S"]) for i in found]

    def add_principal(self, principal: Principal) -> DynamoWrite:
        listed = _principal_item(principal)
        return self._with_own_copy(self._put(listed, "attribute_not_exists(pk)"), listed)

    def save_principal(self, principal: Principal) -> DynamoWrite:
        listed = _principal_item(principal)
        put = self._put(
            listed,
            "#v = :expected",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":expected": attr_n(principal.version - 1)},
        )
        return self._with_own_copy(put, listed)

    def _with_own_copy(self, write: DynamoWrite, listed: dict[str, Any]) -> DynamoWrite:
        """``write`` and the principal's own copy, which the listed item's condition guards:
        both commit, or neither."""
        copy = {"Put": {"TableName": self.table, "Item": _own_item(listed)}}
        return DynamoWrite([*write.items, copy])

    def spread_principal(self, listed: dict[str, Any]) -> bool:
        """Gives a principal its own copy as listed (``listed`` is its item in the namespace's
        partition) where it has none, or an older one; whether it wrote one. An older copy can
        only come from a write by a version of Vigil that wrote no copy, after one that did (a
        rollback): this repairs it. A copy as new as the listed item is left as it is."""
        if not listed["sk"]["S"].startswith("PRINCIPAL#") or not listed["pk"]["S"].startswith(
            "NS#"
        ):
            return False
        return self._written(
            self.client.put_item,
            Item=_own_item(listed),
            ConditionExpression="attribute_not_exists(pk) OR #v < :listed",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":listed": listed["version"]},
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
