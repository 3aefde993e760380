"""Requests on DynamoDB.

| record                 | pk                          | sk                                  |
| ---------------------- | --------------------------- | ----------------------------------- |
| request                | ``NS#<ns>#REQ#<id>``        | ``REQ``                             |
| its execution intent   | ``NS#<ns>#REQ#<id>``        | ``EXEC``                            |
| a principal's listing  | ``NS#<ns>#REQS#<principal>``| ``<asked at, epoch ms, 15 digits>#<id>`` |
| the namespace's listing| ``NS#<ns>#REQS#*``          | the same                            |
| blocking edges         | ``NS#<ns>``                 | ``WAITS``                           |
| a shared answer        | ``NS#<ns>``                 | ``SHARED#<digest of the key>``      |
| a standing approval    | ``NS#<ns>#STA#<id>``        | ``STA``                             |
| routing rules          | ``NS#<ns>``                 | ``ROUTING``                         |
| a person's last routing| ``NS#<ns>``                 | ``ASSIGNED#<person>``               |

A standing approval, while active, carries the index keys ``gsi1pk`` ``NS#<ns>#STANDING`` and
``gsi1sk`` ``<asker, or *>#<expires at, epoch ms, 15 digits>#<id>``: an ask reads the range of
its asker (and of ``*``) from now on, so no expired one is read; one revoked or used up is put
without them, and leaves the index. Its ``ttl`` removes it a week after it expires.

A request and its intent keep ``version`` and ``state`` at the top level for the conditions,
the rest as a JSON document. The listing's places hold nothing but their key.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s, epoch_ms
from vigil.requests.records import Execution, Request, SharedAnswer
from vigil.requests.routing import Assignment, Routing
from vigil.requests.standing import KEPT_AFTER, StandingApproval
from vigil.requests.store import RequestStore, listing_places, listing_position
from vigil.requests.waits import WaitGraph

_EXCLUDE = {"version", "state"}
# No agent's id sorts after this: the end of an asker's range in the standing index.
_RANGE_END = "~"


def _standing_pk(namespace: str) -> str:
    return f"NS#{namespace}#STANDING"


def _standing_key(namespace: str, standing_id: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#STA#{standing_id}"), "sk": attr_s("STA")}


def _standing(item: dict[str, Any]) -> StandingApproval:
    fields = json.loads(item["doc"]["S"])
    fields["version"] = int(item["version"]["N"])
    fields["state"] = item["state"]["S"]
    return StandingApproval.model_validate(fields)


def _key(namespace: str, request_id: str, sk: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#REQ#{request_id}"), "sk": attr_s(sk)}


def _listing_pk(namespace: str, principal_id: str) -> str:
    return f"NS#{namespace}#REQS#{principal_id}"


def _graph_key(namespace: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s("WAITS")}


def _request(item: dict[str, Any]) -> Request:
    fields = json.loads(item["doc"]["S"])
    fields["version"] = int(item["version"]["N"])
    fields["state"] = item["state"]["S"]
    return Request.model_validate(fields)


def _execution(item: dict[str, Any]) -> Execution:
    fields = json.loads(item["doc"]["S"])
    fields["version"] = int(item["version"]["N"])
    fields["state"] = item["state"]["S"]
    return Execution.model_validate(fields)


class DynamoRequests(DynamoBase, RequestStore):
    def get_request(self, namespace: str, request_id: str) -> Request | None:
        item = self._get(f"NS#{namespace}#REQ#{request_id}", "REQ")
        return _request(item) if item else None

    def get_requests(self, namespace: str, request_ids: list[str]) -> list[Request]:
        keys = [_key(namespace, request_id, "REQ") for request_id in dict.fromkeys(request_ids)]
        return [_request(item) for item in self._batch_get(keys)]

    def _versioned_item(self, key: dict[str, Any], record: Request | Execution) -> dict[str, Any]:
        return {
            **key,
            "version": attr_n(record.version),
            "state": attr_s(record.state),
            "doc": attr_s(record.model_dump_json(exclude=_EXCLUDE)),
        }

    def add_request(self, request: Request) -> DynamoWrite:
        item = self._versioned_item(_key(request.namespace, request.id, "REQ"), request)
        places = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {
                        "pk": attr_s(_listing_pk(request.namespace, principal_id)),
                        "sk": attr_s(listing_position(request)),
                    },
                }
            }
            for principal_id in listing_places(request)
        ]
        write = self._put(item, "attribute_not_exists(pk)")
        return DynamoWrite(write.items, ahead=places)

    def save_request(self, request: Request) -> DynamoWrite:
        return self._put(
            self._versioned_item(_key(request.namespace, request.id, "REQ"), request),
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(request.version - 1)},
        )

    def list_requests(
        self, namespace: str, principal_id: str, after: str | None, limit: int
    ) -> list[str]:
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": attr_s(_listing_pk(namespace, principal_id))},
            "Limit": limit,
            "ConsistentRead": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {
                "pk": attr_s(_listing_pk(namespace, principal_id)),
                "sk": attr_s(after),
            }
        found: list[str] = []
        for page in self._pages(request):
            found += [item["sk"]["S"] for item in page.get("Items", [])]
            if len(found) >= limit:
                break
        return found[:limit]

    def get_wait_graph(self, namespace: str) -> WaitGraph:
        key = _graph_key(namespace)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        if item is None:
            return WaitGraph(namespace=namespace, version=0)
        fields = json.loads(item["doc"]["S"])
        fields["version"] = int(item["version"]["N"])
        return WaitGraph.model_validate(fields)

    def save_wait_graph(self, graph: WaitGraph) -> DynamoWrite:
        item = {
            **_graph_key(graph.namespace),
            "version": attr_n(graph.version),
            "doc": attr_s(graph.model_dump_json(exclude={"version"})),
        }
        if graph.version == 1:
            return self._put(item, "attribute_not_exists(pk)")
        return self._put(
            item,
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(graph.version - 1)},
        )

    def get_execution(self, namespace: str, request_id: str) -> Execution | None:
        item = self._get(f"NS#{namespace}#REQ#{request_id}", "EXEC")
        return _execution(item) if item else None

    def add_execution(self, execution: Execution) -> DynamoWrite:
        key = _key(execution.namespace, execution.request_id, "EXEC")
        return self._put(self._versioned_item(key, execution), "attribute_not_exists(pk)")

    def save_execution(self, execution: Execution) -> DynamoWrite:
        key = _key(execution.namespace, execution.request_id, "EXEC")
        return self._put(
            self._versioned_item(key, execution),
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(execution.version - 1)},
        )

    def get_shared_answer(self, namespace: str, key: str) -> SharedAnswer | None:
        item = self._get(f"NS#{namespace}", f"SHARED#{key}")
        return SharedAnswer.model_validate_json(item["doc"]["S"]) if item else None

    def keep_shared_answer(self, answer: SharedAnswer) -> DynamoWrite:
        item = {
            "pk": attr_s(f"NS#{answer.namespace}"),
            "sk": attr_s(f"SHARED#{answer.key}"),
            "doc": attr_s(answer.model_dump_json()),
        }
        return self._put(item)

    # -- standing approvals ---------------------------------------------------------------------
    def get_standing(self, namespace: str, standing_id: str) -> StandingApproval | None:
        key = _standing_key(namespace, standing_id)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return _standing(item) if item else None

    def _standing_item(self, standing: StandingApproval) -> dict[str, Any]:
        item = {
            **_standing_key(standing.namespace, standing.id),
            "version": attr_n(standing.version),
            "state": attr_s(standing.state),
            "doc": attr_s(standing.model_dump_json(exclude=_EXCLUDE)),
            "ttl": attr_n(int((standing.expires_at + KEPT_AFTER).timestamp())),
        }
        if standing.state == "active":
            asker = standing.asker or "*"
            item["gsi1pk"] = attr_s(_standing_pk(standing.namespace))
            item["gsi1sk"] = attr_s(f"{asker}#{epoch_ms(standing.expires_at):015d}#{standing.id}")
        return item

    def add_standing(self, standing: StandingApproval) -> DynamoWrite:
        return self._put(self._standing_item(standing), "attribute_not_exists(pk)")

    def save_standing(self, standing: StandingApproval) -> DynamoWrite:
        return self._put(
            self._standing_item(standing),
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(standing.version - 1)},
        )

    def _standing_keys(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for page in self._pages({"IndexName": "gsi1", **request}):
            found += page.get("Items", [])
        return found

    def standing_for(self, namespace: str, asker: str, now: datetime) -> list[StandingApproval]:
        keys: list[dict[str, Any]] = []
        for who in (asker, "*"):
            keys += self._standing_keys(
                {
                    "KeyConditionExpression": "gsi1pk = :pk AND gsi1sk BETWEEN :from AND :to",
                    "ExpressionAttributeValues": {
                        ":pk": attr_s(_standing_pk(namespace)),
                        ":from": attr_s(f"{who}#{epoch_ms(now):015d}"),
                        ":to": attr_s(f"{who}#{_RANGE_END}"),
                    },
                }
            )
        # The index is read eventually; the approvals themselves, consistently.
        found = [
            _standing(item)
            for item in self._batch_get([{"pk": k["pk"], "sk": k["sk"]} for k in keys])
        ]
        return sorted((s for s in found if s.live(now)), key=lambda s: (s.expires_at, s.id))

    def list_standing(
        self, namespace: str, after: str | None, limit: int
    ) -> list[tuple[str, StandingApproval]]:
        request: dict[str, Any] = {
            "IndexName": "gsi1",
            "KeyConditionExpression": "gsi1pk = :pk",
            "ExpressionAttributeValues": {":pk": attr_s(_standing_pk(namespace))},
            "Limit": limit,
        }
        if after is not None:
            position, standing_id = after, after.rsplit("#", 1)[-1]
            request["ExclusiveStartKey"] = {
                **_standing_key(namespace, standing_id),
                "gsi1pk": attr_s(_standing_pk(namespace)),
                "gsi1sk": attr_s(position),
            }
        keys: list[dict[str, Any]] = []
        for page in self._pages({"TableName": self.table, **request}):
            keys += page.get("Items", [])
            if len(keys) >= limit:
                break
        keys = keys[:limit]
        found = {
            s.id: s
            for s in map(_standing, self._batch_get([{"pk": k["pk"], "sk": k["sk"]} for k in keys]))
        }
        places = [(k["gsi1sk"]["S"], k["gsi1sk"]["S"].rsplit("#", 1)[-1]) for k in keys]
        return [(place, found[i]) for place, i in places if i in found]

    # -- routing ----------------------------------------------------------------------------------
    def _versioned_doc(self, pk: str, sk: str, record: Routing | Assignment) -> DynamoWrite:
        item = {
            "pk": attr_s(pk),
            "sk": attr_s(sk),
            "version": attr_n(record.version),
            "doc": attr_s(record.model_dump_json(exclude={"version"})),
        }
        if record.version == 1:
            return self._put(item, "attribute_not_exists(pk)")
        return self._put(
            item,
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(record.version - 1)},
        )

    def get_routing(self, namespace: str) -> Routing:
        item = self._get(f"NS#{namespace}", "ROUTING")
        if item is None:
            return Routing(namespace=namespace, version=0)
        fields = json.loads(item["doc"]["S"])
        fields["version"] = int(item["version"]["N"])
        return Routing.model_validate(fields)

    def save_routing(self, routing: Routing) -> DynamoWrite:
        return self._versioned_doc(f"NS#{routing.namespace}", "ROUTING", routing)

    def get_assignments(self, namespace: str, people: list[str]) -> list[Assignment]:
        keys = [
            {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"ASSIGNED#{person}")}
            for person in dict.fromkeys(people)
        ]
        found = []
        for item in self._batch_get(keys):
            fields = json.loads(item["doc"]["S"])
            fields["version"] = int(item["version"]["N"])
            found.append(Assignment.model_validate(fields))
        return found

    def save_assignment(self, assignment: Assignment) -> DynamoWrite:
        sk = f"ASSIGNED#{assignment.person}"
        return self._versioned_doc(f"NS#{assignment.namespace}", sk, assignment)
