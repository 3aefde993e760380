"""Tenant and role boundaries, for every tool in the catalog.

The home namespace makes one of everything (the scenario). Every call that succeeds there is
tried first, from the same state, by the strangers below (the world is then put back and the
call made), and replayed by them again once the scenario is over:

- with no credential, a malformed, forged, revoked or rotated-away one: one refusal, always the
  same, and nothing changes;
- by the operator and a worker of another namespace: what they see is exactly what they see in
  a twin world where the home namespace made nothing (so existence never leaks, and an error is
  byte for byte the error for a resource that does not exist), the home namespace is untouched,
  and arguments that name an identifier the home namespace was issued are refused;
- by a peer worker of the home namespace: operator-only tools are forbidden, a refusal changes
  nothing, and nothing private to another principal changes (see worlds.owner_of);
- with an agent_key that disagrees with the Authorization header: unauthenticated.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.harness.probe import (
    DOORS,
    Outcome,
    assert_clean,
    assert_refused,
    read_mcp,
    read_rest,
    tools_call,
)
from tests.harness.scenario import CREDENTIAL, Seeded, Success, seed
from tests.harness.schema import branches, input_schema, properties, restrictive, types_of
from tests.harness.settings import TOOL_NAMES
from tests.harness.walk import walked
from tests.harness.worlds import (
    HOME,
    ISSUED,
    HarnessWorld,
    Unchanged,
    changes,
    private_changes,
    seen,
    strings_in,
)
from vigil import catalog
from vigil.kit.tooling import Tool

# Operators' tools, and the overseers' that people may call too: no worker agent may call them.
NOT_FOR_WORKER_AGENTS = [t.name for t in catalog.tools() if not t.admits("agent", "worker")]


def _replays(home: Seeded, tool: Tool, *actors: str) -> list[Success]:
    """The calls of ``tool`` that succeeded at home, or the simplest arguments if none did."""
    found = home.successes(tool, *actors)
    return found or [Success(tool.name, "nobody", home.arguments(tool), {})]


def issued_identifiers(successes: list[Success]) -> set[str]:
    """Identifiers the home namespace was given in results, as opposed to names its callers
    chose themselves (a scope, a session id, a run id passed in)."""
    found: set[str] = set()
    for success in successes:
        chosen = strings_in(success.arguments)
        for text in strings_in(success.result):
            for match in ISSUED.findall(text):
                if not any(match in c for c in chosen):
                    found.add(match)
    return found


def _identifier_values(tool: Tool, arguments: dict[str, Any]) -> list[str]:
    """The argument values that the schema reads as identifiers (not as free text)."""
    found: list[str] = []
    for name, sub in properties(input_schema(tool)).items():
        value = arguments.get(name)
        items = [b.get("items", {}) for b in branches(sub) if types_of(b) == {"array"}]
        if restrictive(sub) and isinstance(value, str):
            found.append(value)
        elif any(restrictive(i) for i in items) and isinstance(value, list):
            found += [v for v in value if isinstance(v, str)]
    return found


def _failures(failures: list[str]) -> str:
    return f"{len(failures)} boundary failures:\n" + "\n".join(failures[:30])


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_a_bad_credential_gets_one_refusal_and_changes_nothing(
    home: Seeded, tool_name: str
) -> None:
    world = home.world
    cast = world.cast
    arguments = home.arguments(catalog.tool(tool_name))
    watch = Unchanged(world)
    refusals: set[str] = set()
    failures: list[str] = []

    def check(label: str, outcome: Outcome) -> None:
        try:
            assert_refused(outcome, "unauthenticated")
            assert outcome.error is not None
            refusals.add(json.dumps(outcome.error, sort_keys=True))
            moved = watch.moved()
            assert not moved, f"the state changed: {moved}"
        except AssertionError as error:
            failures.append(f"{label}: {error}")

    for label, secret in cast.bad_credentials.items():
        for door in DOORS:
            check(f"[{door}] {label}", world.doors.call(door, tool_name, arguments, secret))
    body = json.dumps(arguments).encode()
    message = tools_call(tool_name, arguments)
    secret = cast.operator.secret
    for header in (f"Basic {secret}", "Bearer", "Bearer ", f"Token {secret}", secret):
        rest = read_rest(world.doors.post(f"/v1/{tool_name}", body, None, authorization=header))
        check(f"[rest] Authorization: {header[:12]}", rest)
        mcp = read_mcp(world.doors.post("/mcp", message, None, authorization=header))
        check(f"[mcp] Authorization: {header[:12]}", mcp)
    assert not failures, _failures(failures)
    assert len(refusals) == 1, f"the refusals tell causes apart: {refusals}"
    assert world.snapshot() == watch.before


def judge_stranger(
    world: HarnessWorld,
    twin: HarnessWorld,
    issued: set[str],
    tool: Tool,
    arguments: dict[str, Any],
    role: str,
    door: str,
) -> list[str]:
    """One call by a caller of another namespace, at home and in the twin; what went wrong."""
    before = world.snapshot()
    outcome = world.call(door, tool.name, arguments, getattr(world.cast, role))
    after = world.snapshot()
    control = twin.call(door, tool.name, arguments, getattr(twin.cast, role))
    references = _identifier_values(tool, arguments)
    named = sorted(i for i in issued if any(i in r for r in references))
    try:
        assert_clean(outcome)
        assert_clean(control)
        assert seen(outcome) == seen(control), (
            f"differs from the same call where {HOME} made nothing: "
            f"{outcome.describe()} vs {control.describe()}"
        )
        if outcome.error is not None and control.error is not None:
            exact = [(o.error["code"], o.error["message"]) for o in (outcome, control)]
            assert exact[0] == exact[1], exact
        home_part = world.partition(before, HOME) == world.partition(after, HOME)
        assert home_part, f"{HOME} changed: {changes(before, after)}"
        if not outcome.ok:
            assert before == after, f"refused, yet changed: {changes(before, after)}"
        if named:
            assert not outcome.ok, f"names {named}, issued to {HOME}, and succeeded"
    except AssertionError as error:
        return [f"[{door}] {role} calling {tool.name} {arguments}: {error}"]
    return []


def judge_peer(world: HarnessWorld, tool: Tool, arguments: dict[str, Any], door: str) -> list[str]:
    """One call by the peer worker of the home namespace; what went wrong."""
    peer = world.cast.peer
    before = world.snapshot()
    outcome = world.call(door, tool.name, arguments, peer)
    after = world.snapshot()
    try:
        assert_clean(outcome)
        if not tool.admits(peer.kind, peer.role):
            assert_refused(outcome, "forbidden")
        touched = private_changes(before, after, peer)
        assert not touched, f"changed what is private to others: {touched}"
        if not outcome.ok:
            assert before == after, f"refused, yet changed: {changes(before, after)}"
    except AssertionError as error:
        return [f"[{door}] peer calling {tool.name} {arguments}: {error}"]
    return []


STRANGERS = ("abroad_operator", "abroad_worker")


@dataclass
class Rehearsal:
    home: Seeded
    twin: HarnessWorld
    # By tool: what went wrong when strangers made a call just before its maker did.
    strangers: dict[str, list[str]]
    peers: dict[str, list[str]]


@pytest.fixture(scope="module")
def rehearsal() -> Rehearsal:
    """The scenario, where every successful call is first tried, at the same moment and from
    the same state, by the peer and by both callers of another namespace; the world is then put
    back and the call made. A peer acknowledging a delivery that is still leased to its owner,
    say, is caught here, where it could be, rather than after the owner acknowledged it."""
    world, twin = HarnessWorld(), HarnessWorld()
    strangers: dict[str, list[str]] = {}
    peers: dict[str, list[str]] = {}
    made: list[Success] = []
    doors = itertools.cycle(DOORS)

    def rehearse(success: Success, before: dict[str, Any]) -> None:
        tool = catalog.tool(success.tool)
        after, twin_state = world.snapshot(), twin.snapshot()
        secrets = [(a, a.secret) for w in (world, twin) for a in w.cast.actors]
        made.append(success)
        issued = issued_identifiers(made)
        twin.align_clock(world)

        def rewind(home_state: dict[str, Any]) -> None:
            world.restore(home_state)
            twin.restore(twin_state)
            for actor, secret in secrets:
                actor.secret = secret

        for role in STRANGERS:
            rewind(before)
            found = judge_stranger(world, twin, issued, tool, success.arguments, role, next(doors))
            strangers.setdefault(tool.name, []).extend(found)
        rewind(before)
        peers.setdefault(tool.name, []).extend(
            judge_peer(world, tool, success.arguments, next(doors))
        )
        rewind(after)

    home = seed(world, walked(), rehearse)
    return Rehearsal(home, twin, strangers, peers)


@pytest.fixture(scope="module")
def home(rehearsal: Rehearsal) -> Seeded:
    return rehearsal.home


@pytest.fixture(scope="module")
def twin(rehearsal: Rehearsal) -> HarnessWorld:
    return rehearsal.twin


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_another_namespace_learns_nothing_and_changes_nothing(
    rehearsal: Rehearsal, tool_name: str
) -> None:
    tool = catalog.tool(tool_name)
    world, twin = rehearsal.home.world, rehearsal.twin
    failures = list(rehearsal.strangers.get(tool_name, []))
    issued = issued_identifiers(rehearsal.home.scenario.successes)
    for index, success in enumerate(_replays(rehearsal.home, tool)):
        for role in STRANGERS:
            door = DOORS[index % len(DOORS)]
            failures += judge_stranger(world, twin, issued, tool, success.arguments, role, door)
    assert not failures, _failures(failures)


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_a_peer_cannot_act_on_what_is_not_theirs(rehearsal: Rehearsal, tool_name: str) -> None:
    tool = catalog.tool(tool_name)
    world = rehearsal.home.world
    failures = list(rehearsal.peers.get(tool_name, []))
    for index, success in enumerate(_replays(rehearsal.home, tool, "operator", "worker")):
        failures += judge_peer(world, tool, success.arguments, DOORS[index % len(DOORS)])
    assert not failures, _failures(failures)


@pytest.mark.parametrize("tool_name", NOT_FOR_WORKER_AGENTS)
def test_worker_agents_are_refused_what_they_may_not_call(home: Seeded, tool_name: str) -> None:
    tool = catalog.tool(tool_name)
    world = home.world
    watch = Unchanged(world)
    refusals: set[str] = set()
    for success in _replays(home, tool):
        for worker in (world.cast.worker, world.cast.peer, world.cast.abroad_worker):
            for door in DOORS:
                outcome = world.call(door, tool.name, success.arguments, worker)
                assert_refused(outcome, "forbidden")
                refusals.add(json.dumps(outcome.error, sort_keys=True))
                assert not watch.moved()
    assert len(refusals) == 1, refusals


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_agent_key_must_agree_with_the_header(home: Seeded, tool_name: str) -> None:
    tool = catalog.tool(tool_name)
    world = home.world
    cast = world.cast
    worker = cast.worker
    arguments = home.arguments(tool, "worker")
    watch = Unchanged(world)
    if not tool.takes_agent_key:
        # Not a credential here: an unknown property, refused without echoing the secret.
        for door in DOORS:
            outcome = world.call(door, tool.name, {**arguments, CREDENTIAL: worker.secret}, worker)
            assert_refused(outcome, "invalid_argument")
            assert worker.secret not in outcome.body.decode(), outcome.describe()
            assert not watch.moved()
        return
    bad = [s for s in cast.bad_credentials.values() if s]
    disagreeing: list[tuple[str | None, Any]] = [
        (worker.secret, other.secret)
        for other in (cast.peer, cast.operator, cast.abroad_worker, cast.abroad_operator)
    ]
    disagreeing += [(worker.secret, key) for key in bad]
    disagreeing += [(None, key) for key in bad]
    disagreeing += [(None, 7), (None, [worker.secret]), (None, None)]
    refusals: set[str] = set()
    for index, (header, key) in enumerate(disagreeing):
        door = DOORS[index % len(DOORS)]
        outcome = world.doors.call(door, tool.name, {**arguments, CREDENTIAL: key}, header)
        assert_refused(outcome, "unauthenticated")
        for secret in (worker.secret, key):
            if isinstance(secret, str) and secret.startswith("vgl."):
                assert secret not in outcome.body.decode(), outcome.describe()
        refusals.add(json.dumps(outcome.error, sort_keys=True))
        assert not watch.moved(), (header, key)
    assert len(refusals) == 1, refusals
    for header in (None, worker.secret):
        for door in DOORS:
            outcome = world.call(door, tool.name, {**arguments, CREDENTIAL: worker.secret}, header)
            assert_clean(outcome)
            assert outcome.code != "unauthenticated", outcome.describe()
