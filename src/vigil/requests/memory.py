"""Requests in memory."""

from __future__ import annotations

from datetime import datetime

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed
from vigil.requests.records import Execution, Request, SharedAnswer
from vigil.requests.routing import Assignment, Routing
from vigil.requests.standing import StandingApproval
from vigil.requests.store import RequestStore, listing_places, listing_position
from vigil.requests.waits import WaitGraph

_Key = tuple[str, str]


class MemoryRequests(MemoryBase, RequestStore):
    def __init__(self) -> None:
        self.requests: dict[_Key, Request] = {}
        self.listings: dict[_Key, set[str]] = {}
        self.graphs: dict[str, WaitGraph] = {}
        self.executions: dict[_Key, Execution] = {}
        self.shared: dict[_Key, SharedAnswer] = {}
        self.standing: dict[_Key, StandingApproval] = {}
        self.routings: dict[str, Routing] = {}
        self.assignments: dict[_Key, Assignment] = {}
        super().__init__()

    def get_request(self, namespace: str, request_id: str) -> Request | None:
        with self._lock:
            found = self.requests.get((namespace, request_id))
            return found.model_copy(deep=True) if found else None

    def get_requests(self, namespace: str, request_ids: list[str]) -> list[Request]:
        with self._lock:
            found = [self.requests.get((namespace, r)) for r in dict.fromkeys(request_ids)]
            return [r.model_copy(deep=True) for r in found if r is not None]

    def add_request(self, request: Request) -> MemoryWrite:
        key = (request.namespace, request.id)
        principals = listing_places(request)
        position = listing_position(request)

        def check() -> None:
            if key in self.requests:
                raise ConditionFailed(request.id)

        def apply() -> None:
            self.requests[key] = request.model_copy(deep=True)
            for principal_id in principals:
                self.listings.setdefault((request.namespace, principal_id), set()).add(position)

        places = tuple(item_bytes((request.namespace, p, position)) for p in principals)
        return MemoryWrite(check, apply, (item_bytes(key, request),), ahead=places)

    def save_request(self, request: Request) -> MemoryWrite:
        return self._versioned(
            self.requests, (request.namespace, request.id), request, request.version - 1, deep=True
        )

    def list_requests(
        self, namespace: str, principal_id: str, after: str | None, limit: int
    ) -> list[str]:
        with self._lock:
            places = sorted(self.listings.get((namespace, principal_id), set()))
        if after is not None:
            places = [p for p in places if p > after]
        return places[:limit]

    def get_wait_graph(self, namespace: str) -> WaitGraph:
        with self._lock:
            found = self.graphs.get(namespace)
            return (
                found.model_copy(deep=True) if found else WaitGraph(namespace=namespace, version=0)
            )

    def save_wait_graph(self, graph: WaitGraph) -> MemoryWrite:
        expected = None if graph.version == 1 else graph.version - 1
        return self._versioned(self.graphs, graph.namespace, graph, expected, deep=True)

    def get_execution(self, namespace: str, request_id: str) -> Execution | None:
        with self._lock:
            found = self.executions.get((namespace, request_id))
            return found.model_copy(deep=True) if found else None

    def add_execution(self, execution: Execution) -> MemoryWrite:
        key = (execution.namespace, execution.request_id)
        return self._versioned(self.executions, key, execution, None, deep=True)

    def save_execution(self, execution: Execution) -> MemoryWrite:
        key = (execution.namespace, execution.request_id)
        return self._versioned(self.executions, key, execution, execution.version - 1, deep=True)

    def get_shared_answer(self, namespace: str, key: str) -> SharedAnswer | None:
        with self._lock:
            found = self.shared.get((namespace, key))
            return found.model_copy(deep=True) if found else None

    def keep_shared_answer(self, answer: SharedAnswer) -> MemoryWrite:
        key = (answer.namespace, answer.key)

        def apply() -> None:
            self.shared[key] = answer.model_copy(deep=True)

        return MemoryWrite(lambda: None, apply, (item_bytes(key, answer),))

    # -- standing approvals ---------------------------------------------------------------------
    def get_standing(self, namespace: str, standing_id: str) -> StandingApproval | None:
        with self._lock:
            found = self.standing.get((namespace, standing_id))
            return found.model_copy(deep=True) if found else None

    def _active(self, namespace: str) -> list[tuple[str, StandingApproval]]:
        """The namespace's active ones by their place, as the DynamoDB index keeps them."""
        with self._lock:
            found = [
                s.model_copy(deep=True)
                for (ns, _), s in self.standing.items()
                if ns == namespace and s.state == "active"
            ]
        return sorted((_place(s), s) for s in found)

    def standing_for(self, namespace: str, asker: str, now: datetime) -> list[StandingApproval]:
        found = [s for _, s in self._active(namespace) if s.asker in (asker, None) and s.live(now)]
        return sorted(found, key=lambda s: (s.expires_at, s.id))

    def list_standing(
        self, namespace: str, after: str | None, limit: int
    ) -> list[tuple[str, StandingApproval]]:
        return [(p, s) for p, s in self._active(namespace) if after is None or p > after][:limit]

    def add_standing(self, standing: StandingApproval) -> MemoryWrite:
        key = (standing.namespace, standing.id)
        return self._versioned(self.standing, key, standing, None, deep=True)

    def save_standing(self, standing: StandingApproval) -> MemoryWrite:
        key = (standing.namespace, standing.id)
        return self._versioned(self.standing, key, standing, standing.version - 1, deep=True)

    # -- routing ----------------------------------------------------------------------------------
    def get_routing(self, namespace: str) -> Routing:
        with self._lock:
            found = self.routings.get(namespace)
            return found.model_copy(deep=True) if found else Routing(namespace=namespace, version=0)

    def save_routing(self, routing: Routing) -> MemoryWrite:
        expected = None if routing.version == 1 else routing.version - 1
        return self._versioned(self.routings, routing.namespace, routing, expected, deep=True)

    def get_assignments(self, namespace: str, people: list[str]) -> list[Assignment]:
        with self._lock:
            found = [self.assignments.get((namespace, p)) for p in dict.fromkeys(people)]
            return [a.model_copy() for a in found if a is not None]

    def save_assignment(self, assignment: Assignment) -> MemoryWrite:
        key = (assignment.namespace, assignment.person)
        expected = None if assignment.version == 1 else assignment.version - 1
        return self._versioned(self.assignments, key, assignment, expected)


def _place(standing: StandingApproval) -> str:
    expires = int(standing.expires_at.timestamp() * 1000)
    return f"{standing.asker or '*'}#{expires:015d}#{standing.id}"
