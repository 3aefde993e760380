"""Making things to attack, for any catalog: each tool is called as each actor with arguments
built from its schema and from what earlier calls returned, until one call succeeds.

Nothing here knows a tool. Arguments start from the schema's simplest valid value (required
properties only, then every property, and, for a tool that neither made succeed, the required
ones with each optional property on its own: some properties exclude each other); a property is
then offered values that earlier successful calls carried under the same name (an ``id`` also
those carried as ``<thing>_id``), or, for an identifier (a pattern that refuses plain words, such
as ``^agt_...``), any earlier value it accepts, and an enum each of its values. Breadth first, so
every offered value is tried early. Several passes let a tool use what a later tool in the
catalog made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.harness.probe import Outcome, assert_clean
from tests.harness.schema import (
    branches,
    input_schema,
    properties,
    restrictive,
    simplest,
    valid,
)
from tests.harness.worlds import Actor, HarnessWorld
from vigil.kit.tooling import Tool

CREDENTIAL = "agent_key"  # rides in the Authorization header instead
_OFFERED = 6  # values offered per property


@dataclass(frozen=True)
class Success:
    tool: str
    actor: str
    arguments: dict[str, Any]
    result: dict[str, Any]


@dataclass
class Pool:
    """Scalars seen in successful calls, in the order seen, each with who saw it."""

    by_name: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    strings: list[tuple[str, str]] = field(default_factory=list)

    def harvest(self, value: Any, actor: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str | int) and not isinstance(item, bool):
                    self.by_name.setdefault(key, []).append((item, actor))
                    if key.endswith("_id"):
                        # What a result calls a conversation_id is the id of a conversation.
                        self.by_name.setdefault("id", []).append((item, actor))
                self.harvest(item, actor)
        elif isinstance(value, list):
            for item in value:
                self.harvest(item, actor)
        elif isinstance(value, str) and not value.startswith("vgl."):
            self.strings.append((value, actor))

    def offers(
        self, name: str, schema: dict[str, Any], actor: str, avoid: Callable[[Any], bool]
    ) -> list[Any]:
        """Values for property ``name``: the caller's own finds first, the newest first."""
        seen = list(self.by_name.get(name, []))
        if restrictive(schema):
            seen += self.strings
        ordered = [v for v, who in reversed(seen) if who == actor]
        ordered += [v for v, who in reversed(seen) if who != actor]
        offered: list[Any] = []
        for value in ordered:
            if value not in offered and not avoid(value) and valid(schema, value):
                offered.append(value)
            if len(offered) == _OFFERED:
                break
        return offered


def _sums(sizes: Sequence[int], total: int) -> Iterator[tuple[int, ...]]:
    if not sizes:
        if total == 0:
            yield ()
        return
    for first in range(min(sizes[0] - 1, total) + 1):
        for rest in _sums(sizes[1:], total - first):
            yield (first, *rest)


def spread(options: Sequence[Sequence[Any]]) -> Iterator[tuple[Any, ...]]:
    """Every combination, in order of the sum of the indices chosen."""
    sizes = [len(o) for o in options]
    for total in range(sum(size - 1 for size in sizes) + 1):
        for indices in _sums(sizes, total):
            yield tuple(o[i] for o, i in zip(options, indices, strict=True))


Stage = Literal["required", "complete", "all but one", "one optional"]


def _bases(schema: dict[str, Any]) -> Iterator[tuple[Stage, dict[str, Any]]]:
    required_only, everything = simplest(schema), simplest(schema, complete=True)
    # Every property again, but an optional object with only what it requires: a nested
    # property may need what only a later call makes (a channel to escalate to).
    props = properties(schema)
    shallow = {
        name: simplest(props[name])
        if name not in required_only and isinstance(value, dict)
        else value
        for name, value in everything.items()
    }
    yield "required", required_only
    yield "complete", everything
    if shallow != everything:
        yield "complete", shallow
    optional = [name for name in everything if name not in required_only]
    for whole in (everything, shallow) if shallow != everything else (everything,):
        for name in optional:
            yield "all but one", {k: v for k, v in whole.items() if k != name}
    for name, value in everything.items():
        if name not in required_only:
            yield "one optional", {**required_only, name: value}


def attempts(
    tool: Tool,
    pool: Pool,
    actor: Actor,
    avoid: Callable[[Any], bool],
    limit: int,
    others: Sequence[str] = (),
    used: dict[str, set[Any]] | None = None,
) -> Iterator[tuple[Stage, dict[str, Any]]]:
    """Arguments to try, as (stage, arguments): first from the required properties only, then
    from every property (and again with each optional object holding only what it requires),
    then from all but one optional property (some exclude each other), then from the required
    ones and one optional property at a time."""
    schema = input_schema(tool)
    props = properties(schema)
    used = used or {}
    tried: set[str] = set()
    fresh = re.sub(r"[^a-z0-9]+", "-", actor.label)
    required_names = set(simplest(schema))
    for stage, base in _bases(schema):
        base.pop(CREDENTIAL, None)
        options: list[list[Any]] = []
        for name, value in base.items():
            offered = pool.offers(name, props[name], actor.label, avoid)
            mine = f"{fresh}-{len(pool.by_name.get(name, []))}"
            extra = [mine] if isinstance(value, str) and valid(props[name], mine) else []
            choices = [c for b in branches(props[name]) for c in b.get("enum", [])]
            extra += [c for c in choices if c != value]
            extra += inside(value, props[name], pool, actor.label, avoid, others)
            # Enum values no success has used yet come first, so passes cover each of them.
            untried = [c for c in choices if c not in used.get(name, ())]
            found = [*offered, value]
            if stage == "one optional" and name not in required_names:
                # The one optional property is tried first as the schema's own value: what the
                # pool offers for its name (a URL some result carried) may be what it refuses.
                found = [value, *offered]
            later = [v for v in [*found, *extra] if v not in untried]
            options.append([*untried, *later])
        count = 0
        for combination in spread(options):
            arguments = dict(zip(base, combination, strict=True))
            key = json.dumps(arguments, sort_keys=True)
            if key in tried:
                continue
            tried.add(key)
            yield stage, arguments
            count += 1
            if count == limit:
                break


def inside(
    value: Any,
    schema: dict[str, Any],
    pool: Pool,
    actor: str,
    avoid: Callable[[Any], bool],
    others: Sequence[str] = (),
) -> list[Any]:
    """Variants of an object value (a target: its kind and id) whose properties take each value
    of their enums, the principal ids of the other actors (so that what one actor makes names
    another, who can then act on it) and the values offered for their names."""
    if not isinstance(value, dict):
        return []
    objects = [b for b in branches(schema) if "properties" in b]
    if not objects:
        return []
    props = properties(objects[0])
    options: list[list[Any]] = []
    for name, item in value.items():
        if name not in props:
            return []
        choices = [c for b in branches(props[name]) for c in b.get("enum", [])]
        offered = pool.offers(name, props[name], actor, avoid)
        cast = [o for o in others if isinstance(item, str) and not avoid(o)]
        candidates = [*choices, *cast, *offered]
        options.append([item, *dict.fromkeys(c for c in candidates if c != item)])
    variants = [dict(zip(value, combination, strict=True)) for combination in spread(options)]
    return [v for v in variants if v != value]


class Scenario:
    """Runs the catalog against one namespace and keeps every call that succeeded."""

    def __init__(
        self,
        call: Callable[[str, dict[str, Any], Actor], Outcome],
        tools: Sequence[Tool],
        actors: Sequence[Actor],
        protected: Sequence[str],
        limit: int = 24,
    ) -> None:
        self.call = call
        self.tools = tools
        self.actors = actors
        self.protected = protected
        self.limit = limit
        self.pool = Pool()
        self.successes: list[Success] = []

    def avoid(self, tool: Tool) -> Callable[[Any], bool]:
        # A destructive tool must not take out the cast itself (a revoked actor calls no more).
        if not tool.destructive:
            return lambda value: False
        return lambda value: isinstance(value, str) and any(p in value for p in self.protected)

    def run(self, passes: int = 1, between: Callable[[], None] | None = None) -> None:
        for index in range(passes):
            if index and between is not None:
                between()
            for tool in self.tools:
                for actor in self.actors:
                    self._succeed(tool, actor, each_optional=index > 0)

    def _succeed(self, tool: Tool, actor: Actor, each_optional: bool = False) -> None:
        """Calls ``tool`` as ``actor`` until each stage succeeds once. The "one optional" stage
        is for a tool that no other stage made succeed, and stops at its first success; with
        ``each_optional`` (the passes after the first, once the first has made what every tool
        needs), it is also for a tool whose optional properties no stage made succeed together
        (some exclude each other), and makes each succeed alone."""
        # The stages that succeeded; for "one optional" with each_optional, each property.
        succeeded: set[tuple[Stage, frozenset[str]]] = set()
        others = [a.principal_id for a in self.actors if a is not actor]
        used: dict[str, set[Any]] = {}
        for success in self.successes:
            if success.tool == tool.name:
                for name, value in success.arguments.items():
                    if isinstance(value, str):
                        used.setdefault(name, set()).add(value)
        for stage, arguments in attempts(
            tool, self.pool, actor, self.avoid(tool), self.limit, others, used
        ):
            each = stage == "one optional" and each_optional
            mark = (stage, frozenset(arguments) if each else frozenset())
            stages = {done for done, _ in succeeded}
            if mark in succeeded:
                continue
            if stage == "all but one" and "complete" in stages:
                continue
            if stage == "one optional" and stages & {"complete", "all but one"}:
                break
            if stage == "one optional" and not each_optional and stages:
                break
            outcome = self.call(tool.name, arguments, actor)
            if outcome.ok:
                assert outcome.result is not None
                self.successes.append(Success(tool.name, actor.label, arguments, outcome.result))
                self.pool.harvest(arguments, actor.label)
                self.pool.harvest(outcome.result, actor.label)
                succeeded.add(mark)


@dataclass
class Seeded:
    """A home namespace after a scenario: what succeeded, and any call that came back unclean."""

    world: HarnessWorld
    scenario: Scenario
    unclean: list[str]

    def successes(self, tool: Tool, *actors: str) -> list[Success]:
        return [
            s
            for s in self.scenario.successes
            if s.tool == tool.name and (not actors or s.actor in actors)
        ]

    def arguments(self, tool: Tool, actor: str | None = None) -> dict[str, Any]:
        """The fullest arguments that succeeded for ``tool`` (as ``actor`` if it managed),
        else the schema's simplest valid arguments."""
        found = (self.successes(tool, actor) if actor else []) or self.successes(tool)
        if not found:
            arguments: dict[str, Any] = simplest(input_schema(tool))
            arguments.pop(CREDENTIAL, None)
            return arguments
        return dict(max(found, key=lambda s: len(s.arguments)).arguments)


Rehearsal = Callable[[Success, dict[str, Any]], None]


def seed(world: HarnessWorld, tools: Sequence[Tool], rehearse: Rehearsal | None = None) -> Seeded:
    """Runs the scenario in the home namespace as its operator and its worker (never as the
    peer, which stays a stranger to what they made): a pass, time moved past every alarm so
    switches fire and alerts arrive, and a second pass.

    ``rehearse``, if given, is handed each success with the state just before it, so that
    others can try the same call at that moment (it must leave the world as it found it)."""
    cast = world.cast
    unclean: list[str] = []

    def call(tool: str, arguments: dict[str, Any], actor: Actor) -> Outcome:
        before = world.snapshot() if rehearse is not None else {}
        outcome = world.call("app", tool, arguments, actor)
        try:
            assert_clean(outcome)
        except AssertionError as error:
            unclean.append(f"{tool} {arguments}: {error}")
        if outcome.ok and rehearse is not None:
            assert outcome.result is not None
            rehearse(Success(tool, actor.label, arguments, outcome.result), before)
        return outcome

    scenario = Scenario(
        call, tools, [cast.operator, cast.worker], [a.principal_id for a in cast.actors]
    )
    scenario.run(passes=2, between=world.advance_past_alarms)
    return Seeded(world, scenario, unclean)
