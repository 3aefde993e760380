"""Standing approvals: a person's approval that stands for the same action again, for a time
and a number of uses.

A person who approves an approval's action may grant, with that vote, a standing approval of
the same shape: the same members, each with the value approved, except the members the person
marks free, each of which may vary within the bound the person sets (a number range, a list of
values, a text prefix). It stands for the same asker (or, if so granted, any agent of the
namespace), never across namespaces.

A later ``ask`` of an approval whose action has that shape has the grantor's vote cast at once
by the standing approval, if the grantor is of its audience and still active: never wider than
what that person could approve there. The vote is recorded as the grantor's, through the
standing approval (``via`` ``standing``), in the request's history and the audit; where it
meets the request's policy, the request is approved at once, and redeemed once like any other.

Each use, and a revocation, is a conditional write on the standing approval's version, in the
commit of the request it approves: a revocation racing an ask has exactly one outcome.
"""

from __future__ import annotations

import base64
import hashlib
import math
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field, model_validator

from vigil.errors import ErrorCode, VigilError, conflict, invalid
from vigil.kit.canonical import canonical, shown_json
from vigil.kit.principals import kind_of
from vigil.kit.records import Record, Versioned

StandingState = Literal["active", "revoked", "used_up"]

DEFAULT_HOURS = 24
MAX_HOURS = 30 * 24
MAX_USES = 1000
MAX_FREE = 20
MAX_ONE_OF = 20
MAX_PREFIX = 200
MAX_NAME = 100  # a free member's name, as an editable one's
# The free members' bounds, as canonical JSON: so that the item, its listing's page and its
# words (every character outside printable ASCII shown as a six-character escape) stay small.
MAX_FREE_BYTES = 2048
# Live standing approvals for one asker (and as many for any agent): what an ask reads.
MAX_LIVE = 20
# A standing approval is kept this long after it ends, for its listing and the audit's sake.
KEPT_AFTER = timedelta(days=7)


def standing_id(namespace: str, request_id: str, grantor: str) -> str:
    """The one standing approval ``grantor`` may grant on ``request_id``: derived from both, so
    a retried grant finds the one it made."""
    digest = hashlib.sha256(f"{namespace}/{request_id}/{grantor}".encode()).digest()
    return "sta_" + base64.b32encode(digest).decode().lower()[:16]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class Bound(Record):
    """How far a free member may vary: a number range (``min``, ``max``: either or both), one
    of a few values (``one_of``, compared canonically) or text starting with ``prefix``."""

    min: int | float | None = Field(default=None, exclude_if=lambda v: v is None)
    max: int | float | None = Field(default=None, exclude_if=lambda v: v is None)
    one_of: list[Any] | None = Field(default=None, exclude_if=lambda v: v is None)
    prefix: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _one_kind(self) -> Bound:
        kinds = [
            self.min is not None or self.max is not None,
            self.one_of is not None,
            self.prefix is not None,
        ]
        if sum(kinds) != 1:
            raise ValueError("a bound is a range (min, max), one_of or prefix: exactly one")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("a range's min is at most its max")
        return self

    def admits(self, value: Any) -> bool:
        if self.one_of is not None:
            return canonical(value) in {canonical(v) for v in self.one_of}
        if self.prefix is not None:
            return isinstance(value, str) and value.startswith(self.prefix)
        return (
            _number(value)
            and (self.min is None or value >= self.min)
            and (self.max is None or value <= self.max)
        )

    def describe(self) -> str:
        """The bound in words, as the console and the CLI show it."""
        if self.one_of is not None:
            return "one of " + ", ".join(_said(v) for v in self.one_of)
        if self.prefix is not None:
            return f"text starting with {_said(self.prefix)}"
        low, high = (_said(self.min), _said(self.max))
        if self.min is not None and self.max is not None:
            return f"a number from {low} to {high}"
        return f"a number of at least {low}" if self.min is not None else f"a number up to {high}"


def _said(value: Any) -> str:
    """A value in words, as every place a person reads one shows it (``shown_json``): every
    character outside printable ASCII escaped, so that none passes for another."""
    return shown_json(value).text


def _named(name: str) -> str:
    """A member's name in words, escaped as a value is, without its quotes."""
    return shown_json(name).text[1:-1]


def describe_shape(free: dict[str, Bound]) -> str:
    """What a standing approval stands for, in words: which members are free, and how far."""
    if not free:
        return "exactly this action"
    return "this action, with " + "; ".join(
        f"{_named(name)} {bound.describe()}" for name, bound in sorted(free.items())
    )


class StandingTerms(Record):
    """What a person grants with an approval: for how long, how many uses, which members vary
    and how far, and whether any agent of the namespace may ask, not only this asker."""

    hours: float = DEFAULT_HOURS
    uses: int | None = None
    free: dict[str, Bound] = {}
    any_asker: bool = False


class StandingApproval(Versioned):
    namespace: str
    id: str
    grantor: str  # the person who granted it, whose vote it casts
    asker: str | None  # the agent whose asks it answers; None: any agent of the namespace
    action: dict[str, Any]  # as approved; its free members vary within their bounds
    free: dict[str, Bound] = {}
    granted_on: str  # the request it was granted with
    granted_at: datetime
    expires_at: datetime
    uses: int | None = None  # at most this many approvals; None: until it expires
    used: int = 0
    last_used_on: str | None = None  # the last request it approved
    state: StandingState = "active"
    ended_by: str | None = None  # who revoked it
    ended_at: datetime | None = None

    @classmethod
    def granted(
        cls,
        namespace: str,
        request_id: str,
        requester: str,
        grantor: str,
        action: dict[str, Any],
        terms: StandingTerms,
        now: datetime,
    ) -> StandingApproval:
        """The standing approval ``grantor`` grants with its approval of ``action``: refused
        unless its free members are the action's and the approved values are within their
        bounds (so that what was shown approved is what it stands for)."""
        if not 0 < terms.hours <= MAX_HOURS:
            raise invalid(f"a standing approval lasts more than 0 and at most {MAX_HOURS} hours")
        if terms.uses is not None and not 1 <= terms.uses <= MAX_USES:
            raise invalid(f"a standing approval is used 1 to {MAX_USES} times")
        free = {name: bound.model_dump() for name, bound in terms.free.items()}
        if len(canonical(free)) > MAX_FREE_BYTES:
            raise invalid(f"free's bounds take at most {MAX_FREE_BYTES} bytes as JSON")
        missing = sorted(set(terms.free) - set(action))
        if missing:
            raise invalid(
                "free names members of the action: it has no " + ", ".join(map(_named, missing)),
                members=sorted(action),
            )
        outside = sorted(
            name for name, bound in terms.free.items() if not bound.admits(action[name])
        )
        if outside:
            raise invalid(
                "each free member's bound must admit the value approved: "
                + "; ".join(
                    f"{_named(name)} is not {terms.free[name].describe()}" for name in outside
                )
            )
        return cls(
            namespace=namespace,
            id=standing_id(namespace, request_id, grantor),
            grantor=grantor,
            asker=None if terms.any_asker else requester,
            action=action,
            free=dict(sorted(terms.free.items())),
            granted_on=request_id,
            granted_at=now,
            expires_at=now + timedelta(hours=terms.hours),
            uses=terms.uses,
            version=1,
        )

    def grants(self, terms: StandingTerms) -> bool:
        """Whether ``terms`` are the ones this was granted with (a retried grant's)."""
        return (
            self.expires_at - self.granted_at == timedelta(hours=terms.hours)
            and self.uses == terms.uses
            and self.free == dict(sorted(terms.free.items()))
            and (self.asker is None) == terms.any_asker
        )

    def live(self, now: datetime) -> bool:
        return self.state == "active" and now < self.expires_at

    def state_at(self, now: datetime) -> StandingState | Literal["expired"]:
        return "expired" if self.state == "active" and now >= self.expires_at else self.state

    def admits(self, asker: str, action: dict[str, Any] | None) -> bool:
        """Whether an approval of ``action`` asked by ``asker`` has this shape: the same
        members, the fixed ones canonically equal, the free ones within their bounds."""
        if action is None or set(action) != set(self.action):
            return False
        if asker != self.asker and (self.asker is not None or kind_of(asker) != "agent"):
            return False
        return all(
            self.free[name].admits(value)
            if name in self.free
            else canonical(value) == canonical(self.action[name])
            for name, value in action.items()
        )

    def used_on(self, request_id: str, now: datetime) -> StandingApproval:
        """This standing approval with one more use, on ``request_id``: used up at its last."""
        if not self.live(now):
            raise conflict(f"the standing approval is {self.state_at(now)}")
        used = self.used + 1
        done = self.uses is not None and used >= self.uses
        return self.changed(
            used=used, last_used_on=request_id, state="used_up" if done else "active"
        )

    def revoked(self, by: str, is_operator: bool, now: datetime) -> StandingApproval:
        """Revoked by its grantor, or by an operator: it answers no ask from then on."""
        if by != self.grantor and not is_operator:
            raise VigilError(
                ErrorCode.FORBIDDEN, "only its grantor, or an operator, revokes a standing approval"
            )
        if self.state != "active":
            raise conflict(f"the standing approval is {self.state} already", state=self.state)
        return self.changed(state="revoked", ended_by=by, ended_at=now)

    def describe(self) -> str:
        return describe_shape(self.free)
