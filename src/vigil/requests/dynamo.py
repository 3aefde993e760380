"""Requests on DynamoDB.

| record                 | pk                          | sk                                  |
| ---------------------- | --------------------------- | ----------------------------------- |
| request                | ``NS#<ns>#REQ#<id>``        | ``REQ``                             |
| its execution intent   | ``NS#<ns>#REQ#<id>``        | ``EXEC``                            |
| a principal's listing  | ``NS#<ns>#REQS#<principal>``| ``<asked at, epoch ms, 15 digits>#<id>`` |
| the namespace's listing| ``NS#<ns>#REQS#*``          | the same                            |
| blocking edges         | ``NS#<ns>``                 | ``WAITS``                           |
| a shared answer        | ``NS#<ns>``                 | ``SHARED#<digest of the key>``      |

A request and its intent keep ``version`` and ``state`` at the top level for the conditions,
the rest as a JSON document. The listing's places hold nothing but their key.
"""

from __future__ import annotations

import json
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.requests.records import Execution, Request, SharedAnswer
from vigil.requests.store import RequestStore, listing_places, listing_position
from vigil.requests.waits import WaitGraph

_EXCLUDE = {"version", "state"}


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
