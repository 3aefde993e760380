"""Random histories of requests against a model: ask, reply, replace, set_blocking, time passing
with the alarms delivered, redeem and report, by two agents and a person. No request ever has
two final outcomes and a final state never changes; an expired or denied approval never yields
an intent, and an approval yields at most one; the blocking edges are exactly those of the open
blocking requests, and never close a cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.errors import VigilError
from vigil.requests.records import OUTCOMES

ACTION = {"op": "deploy", "version": "1.2.3"}
OTHER_ACTION = {"op": "deploy", "version": "1.2.4"}
FINAL = {"answered", "approved", "denied", "completed", "failed", "rejected", "expired", "replaced"}


@dataclass
class Modelled:
    id: str
    kind: str
    requester: str
    decider: str
    deadline: int  # milliseconds since the machine started
    state: str = "open"
    version: int = 1
    blocking: bool = False
    intent: str | None = None
    execution: str = "none"


@dataclass
class Model:
    now: int = 0  # milliseconds, as the store keeps times
    requests: dict[str, Modelled] = field(default_factory=dict)

    def expire(self) -> None:
        for request in self.requests.values():
            if request.state == "open" and self.now >= request.deadline:
                request.state = "expired"
                request.version += 1
                request.blocking = False

    def waits(self) -> set[tuple[str, str]]:
        return {
            (r.requester, r.decider)
            for r in self.requests.values()
            if r.state == "open" and r.blocking
        }

    def closes_cycle(self, waiter: str, on: str) -> bool:
        edges = self.waits()
        seen, frontier = {on}, [on]
        while frontier:
            here = frontier.pop()
            if here == waiter:
                return True
            for a, b in edges:
                if a == here and b not in seen:
                    seen.add(b)
                    frontier.append(b)
        return False


class RequestMachine(RuleBasedStateMachine):
    requests = Bundle("requests")

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.start = self.clock.now()
        self.world = World(self.clock)
        self.secrets: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        for label, kind in (("a", "agent"), ("b", "agent"), ("p", "person")):
            self.ids[label], self.secrets[label] = self.world.tenant.register(kind=kind, name=label)
        self.model = Model()
        self.finals: dict[str, str] = {}

    def nudge(self) -> None:
        """A millisecond on, with the alarms due delivered: listings order by asking time."""
        self.clock.advance(0.001)
        self.model.now += 1
        self.world.run_alarms()
        self.model.expire()

    def call(self, tool: str, who: str, **arguments: Any) -> dict[str, Any] | VigilError:
        try:
            return self.world.call(tool, self.secrets[who], **arguments)
        except VigilError as error:
            return error

    @precondition(lambda self: len(self.model.requests) < 4)
    @rule(
        target=requests,
        asker=st.sampled_from(["a", "b"]),
        to_person=st.booleans(),
        kind=st.sampled_from(["approval", "approval", "question", "task"]),
        blocking=st.booleans(),
        seconds=st.integers(min_value=10, max_value=60),
    )
    def ask(self, asker: str, to_person: bool, kind: str, blocking: bool, seconds: int) -> str:
        decider = "p" if to_person else ("b" if asker == "a" else "a")
        arguments: dict[str, Any] = {
            "target": {"kind": "person" if to_person else "agent", "id": self.ids[decider]},
            "body": "?",
            "kind": kind,
            "blocking": blocking,
            "expires_in_seconds": seconds,
        }
        if kind == "approval":
            arguments["action"] = ACTION
        self.nudge()
        result = self.call("ask", asker, **arguments)
        refused = blocking and (to_person or self.model.closes_cycle(asker, decider))
        if refused:
            assert isinstance(result, VigilError)
            return "req_refused"
        assert isinstance(result, dict), result
        self.model.requests[result["id"]] = Modelled(
            result["id"], kind, asker, decider, self.model.now + seconds * 1000, blocking=blocking
        )
        return str(result["id"])

    @rule(
        request=requests,
        first=st.booleans(),
        outcome=st.sampled_from(sorted(FINAL - {"expired", "replaced"})),
    )
    def reply(self, request: str, first: bool, outcome: str) -> None:
        """A reply with the first outcome of the request's kind, or any outcome."""
        modelled = self.model.requests.get(request)
        if modelled is None:
            return
        if first:
            outcome = OUTCOMES[modelled.kind][0]
        version = modelled.version
        result = self.call("reply", modelled.decider, id=request, version=version, outcome=outcome)
        self.model.expire()
        ok = modelled.state == "open" and outcome in OUTCOMES[modelled.kind]
        if ok:
            assert isinstance(result, dict), result
            modelled.state, modelled.version, modelled.blocking = outcome, version + 1, False
        else:
            assert isinstance(result, VigilError)

    @rule(request=consumes(requests))
    def replace(self, request: str) -> None:
        modelled = self.model.requests.get(request)
        if modelled is None:
            return
        self.nudge()
        result = self.call(
            "replace_request",
            modelled.requester,
            id=request,
            version=modelled.version,
            body="again",
            idempotency_key=f"replace-{request}",
        )
        if modelled.state != "open":
            assert isinstance(result, VigilError)
            return
        assert isinstance(result, dict), result
        new = result["replacement"]
        modelled.state, modelled.version = "replaced", modelled.version + 1
        self.model.requests[new["id"]] = Modelled(
            new["id"],
            modelled.kind,
            modelled.requester,
            modelled.decider,
            self.model.now + round(new_lifetime(new) * 1000),
            blocking=modelled.blocking,
        )
        modelled.blocking = False

    @rule(request=requests, blocking=st.booleans())
    def set_blocking(self, request: str, blocking: bool) -> None:
        modelled = self.model.requests.get(request)
        if modelled is None:
            return
        self.model.expire()
        result = self.call("set_blocking", modelled.requester, id=request, blocking=blocking)
        if modelled.state != "open":
            assert isinstance(result, VigilError)
            return
        if modelled.blocking == blocking:
            assert isinstance(result, dict), result
            return
        allowed = not blocking or (
            modelled.decider != "p"
            and not self.model.closes_cycle(modelled.requester, modelled.decider)
        )
        if allowed:
            assert isinstance(result, dict), result
            modelled.blocking, modelled.version = blocking, modelled.version + 1
        else:
            assert isinstance(result, VigilError)

    @rule(seconds=st.integers(min_value=1, max_value=40))
    def time_passes(self, seconds: int) -> None:
        self.world.advance(seconds)
        self.model.now += seconds * 1000
        self.model.expire()

    @rule(request=requests, same=st.booleans())
    def redeem(self, request: str, same: bool) -> None:
        modelled = self.model.requests.get(request)
        if modelled is None:
            return
        self.model.expire()
        action = ACTION if same else OTHER_ACTION
        result = self.call("redeem_approval", modelled.requester, id=request, action=action)
        if modelled.intent is not None and same:
            assert isinstance(result, dict), result
            assert result["id"] == modelled.intent
            return
        ok = (
            modelled.kind == "approval"
            and modelled.state == "approved"
            and same
            and self.model.now < modelled.deadline
        )
        if ok:
            assert isinstance(result, dict), result
            modelled.intent, modelled.execution = result["id"], "intended"
        else:
            assert isinstance(result, VigilError)

    @rule(request=requests, state=st.sampled_from(["started", "succeeded", "failed", "unknown"]))
    def report(self, request: str, state: str) -> None:
        modelled = self.model.requests.get(request)
        if modelled is None or modelled.intent is None:
            return
        result = self.call("report_execution", modelled.requester, id=modelled.intent, state=state)
        current = modelled.execution
        if current in ("succeeded", "failed", "unknown"):
            if state == current:
                assert isinstance(result, dict), result
            else:
                assert isinstance(result, VigilError)
            return
        if state == current:  # started again: the same report, answered as it stands
            assert isinstance(result, dict), result
            return
        assert isinstance(result, dict), result
        modelled.execution = state

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def matches_the_model(self) -> None:
        store = self.world.store
        for request_id, modelled in self.model.requests.items():
            stored = store.get_request("acme", request_id)
            assert stored is not None
            assert stored.state_at(self.clock.now()) == modelled.state, (request_id, modelled)
            assert stored.blocking == modelled.blocking or modelled.state != "open"
            finals = [c for c in stored.history if c.kind in ("replied", "expired", "replaced")]
            assert len(finals) <= 1, stored.history
            if stored.state in FINAL:
                assert self.finals.setdefault(request_id, stored.state) == stored.state
            execution = store.get_execution("acme", request_id)
            if execution is not None:
                assert stored.kind == "approval"
                assert stored.state == "approved"
                assert execution.id == modelled.intent

    @invariant()
    def blocking_edges_are_the_open_blocking_requests(self) -> None:
        store = self.world.store
        graph = store.get_wait_graph("acme")
        blocking = {
            request_id
            for request_id in self.model.requests
            if (r := store.get_request("acme", request_id)) is not None
            and r.state == "open"
            and r.blocking
        }
        assert {e.request_id for e in graph.edges} == blocking
        for edge in graph.edges:
            rest = graph.model_copy(update={"edges": [e for e in graph.edges if e != edge]})
            assert rest.cycle_with(edge.waiter, edge.on) is None


def new_lifetime(view: dict[str, Any]) -> float:
    from vigil.clock import parse_iso

    return (parse_iso(view["expires_at"]) - parse_iso(view["asked_at"])).total_seconds()


SETTINGS = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_random_histories_of_requests_match_the_model() -> None:
    run_state_machine_as_test(RequestMachine, settings=SETTINGS)
