"""Who waits on whom in a namespace: the blocking edges of its open requests, each declared by a
requester that cannot go on until the one agent deciding its request answers; kept in one
record so that a new edge is checked against every other for a cycle, and commits with it."""

from __future__ import annotations

from vigil.errors import ErrorCode, VigilError, conflict
from vigil.kit.records import Record, Versioned
from vigil.requests.records import Request

# Blocking edges one namespace holds at once: one item holds them all, so that a cycle is
# checked against every edge and the check and the new edge commit together.
MAX_BLOCKING = 1000


class Edge(Record):
    request_id: str
    waiter: str  # the requester, which cannot go on
    on: str  # the one agent that decides the request


class WaitGraph(Versioned):
    """Who waits on whom in a namespace: the blocking edges of its open requests. Version 0
    is the graph never stored."""

    namespace: str
    edges: list[Edge] = []

    def cycle_with(self, waiter: str, on: str) -> list[str] | None:
        """The agents of the cycle that an edge ``waiter`` → ``on`` would close, starting and
        ending with ``waiter``; None if it closes none."""
        if waiter == on:
            return [waiter, waiter]
        onward: dict[str, list[str]] = {}
        for edge in self.edges:
            onward.setdefault(edge.waiter, []).append(edge.on)
        path: dict[str, str | None] = {on: None}
        frontier = [on]
        while frontier:
            here = frontier.pop(0)
            for there in onward.get(here, []):
                if there in path:
                    continue
                path[there] = here
                if there == waiter:
                    cycle = [waiter]
                    step: str | None = here
                    while step is not None:
                        cycle.append(step)
                        step = path[step]
                    return [waiter, *reversed(cycle[1:]), waiter]
                frontier.append(there)
        return None

    def adding(self, request: Request) -> WaitGraph:
        on = request.single_agent
        assert on is not None
        cycle = self.cycle_with(request.requester, on)
        if cycle is not None:
            raise conflict(
                "blocking on this request would close a cycle of agents waiting on each other",
                cycle=cycle,
            )
        if len(self.edges) >= MAX_BLOCKING:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"a namespace holds at most {MAX_BLOCKING} blocking requests at once",
                limit=MAX_BLOCKING,
            )
        edge = Edge(request_id=request.id, waiter=request.requester, on=on)
        return self.changed(edges=[*self.edges, edge])

    def holds(self, request_id: str) -> bool:
        return any(edge.request_id == request_id for edge in self.edges)

    def without(self, request_id: str, replacement: str | None = None) -> WaitGraph:
        """The graph without the edge of ``request_id``, or with it moved to ``replacement``."""
        edges: list[Edge] = []
        for edge in self.edges:
            if edge.request_id != request_id:
                edges.append(edge)
            elif replacement is not None:
                edges.append(edge.model_copy(update={"request_id": replacement}))
        return self.changed(edges=edges)
