"""Routing: an operator's rules for who takes a namespace's new requests in hand.

A rule matches a request by its asker, its kind and its action's ``op`` member (each, if the
rule names it), and names people in order: the request is assigned (claimed on their behalf,
for the rule's minutes) to the first of them who is of its audience and active, or, with
``least_recent``, to the one of them assigned least recently. The first rule that matches
decides; a request none matches, or whose audience holds none of a rule's people, is
assigned to no one. Routing never widens an audience: it chooses among who may decide.

Each person's last assignment is a small item of its own, written at its version in the
ask's commit: two asks routed at once to the same group each take someone, one after the
other, never the same person for the same moment.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from vigil.kit.records import Record, Versioned
from vigil.requests.records import RequestKind

MAX_RULES = 20
MAX_PEOPLE = 20
DEFAULT_CLAIM_MINUTES = 60


class Rule(Record):
    asker: str | None = None  # an agent's id
    kind: RequestKind | None = None
    op: str | None = None  # the action's "op" member, exactly
    to: list[str]  # people, in order
    least_recent: bool = False
    minutes: int = DEFAULT_CLAIM_MINUTES

    def matches(self, asker: str, kind: str, action: dict[str, Any] | None) -> bool:
        return (
            (self.asker is None or self.asker == asker)
            and (self.kind is None or self.kind == kind)
            and (self.op is None or (action is not None and action.get("op") == self.op))
        )

    def describe(self) -> str:
        """The rule in words, as the console and the CLI show it (ids; names are theirs)."""
        what = " ".join(
            part
            for part in (
                f"{self.kind}s" if self.kind else "requests",
                f"from {self.asker}" if self.asker else "",
                f"with op {self.op!r}" if self.op is not None else "",
            )
            if part
        )
        whom = "the least recently assigned of " if self.least_recent else "the first of "
        return f"{what}: {whom}{', '.join(self.to)}, for {self.minutes} min"


class Routing(Versioned):
    """A namespace's rules, in order; version 0 when none were ever set."""

    namespace: str
    rules: list[Rule] = Field(default_factory=list)

    def rule_for(
        self, asker: str, kind: str, action: dict[str, Any] | None
    ) -> tuple[int, Rule] | None:
        """The first rule that matches, with its number (from 1)."""
        return next(
            (
                (n, rule)
                for n, rule in enumerate(self.rules, 1)
                if rule.matches(asker, kind, action)
            ),
            None,
        )


class Assignment(Versioned):
    """When a person was last assigned a request by a rule that picks the least recent."""

    namespace: str
    person: str
    last_at: datetime
    request_id: str


def least_recent(candidates: list[str], assignments: dict[str, Assignment]) -> str:
    """The candidate assigned least recently: one never assigned first, in the rule's order;
    of those assigned in the same millisecond, the one assigned fewer times."""

    def recency(person: str) -> tuple[int, datetime, int, int]:
        found = assignments.get(person)
        if found is None:
            return (0, datetime.min, 0, candidates.index(person))
        return (1, found.last_at.replace(tzinfo=None), found.version, candidates.index(person))

    return min(candidates, key=recency)
