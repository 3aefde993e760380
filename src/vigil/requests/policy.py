"""How an approval is decided, frozen when it is asked: how many approvals approve it (its
quorum: one, some, or all of its audience), how many denials deny it, whether its deadline
denies it rather than letting it expire, and whether a denial must say why.

Each of its audience votes once. A vote that neither meets the quorum nor reaches the denials,
nor leaves the quorum out of reach (too few voters left to approve), is recorded and leaves
the request open; the vote that does decides it. A deny's reason is its reply's ``answer``, a
short text, as the console has always sent it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vigil.errors import invalid
from vigil.kit.records import Record

# At most this many approvals, or denials, decide an approval: so that its votes, each a change
# in its history, stay within that history's bound.
MAX_QUORUM = 20
# A counted vote's reason, in characters: its history keeps one per vote, and the largest
# request (tests/contract/test_request_contract.py) must still fit its item.
MAX_REASON = 500
TIMEOUT_REASON = "timeout"

Tally = Literal["approved", "denied", "open"]


@dataclass(frozen=True)
class Terms:
    """A policy as the asker puts it, before the audience is known: ``all`` is counted then."""

    quorum: int | Literal["all"] = 1
    denials: int = 1
    deny_on_timeout: bool = False
    reason_on_deny: bool = False

    def frozen(self, audience_size: int) -> Policy:
        quorum = audience_size if self.quorum == "all" else self.quorum
        return Policy(
            quorum=quorum,
            denials=self.denials,
            deny_on_timeout=self.deny_on_timeout,
            reason_on_deny=self.reason_on_deny,
        )


class Policy(Record):
    quorum: int = 1
    denials: int = 1
    deny_on_timeout: bool = False
    reason_on_deny: bool = False

    def check(self, kind: str, audience_size: int) -> None:
        """Refused unless the default, or an approval's policy its audience can meet."""
        if self == Policy():
            return
        if kind != "approval":
            raise invalid("a policy decides an approval: ask with kind approval")
        if self.quorum > min(audience_size, MAX_QUORUM) or self.denials > audience_size:
            raise invalid(
                f"an audience of {audience_size} cannot give {self.quorum} approvals or "
                f"{self.denials} denials (and at most {MAX_QUORUM} approvals are asked for)",
                audience=audience_size,
            )

    @property
    def counts_votes(self) -> bool:
        """Whether more than one vote may be cast before the request is decided."""
        return self.quorum > 1 or self.denials > 1

    def tally(self, approvals: int, denials: int, audience_size: int) -> Tally:
        """What the votes cast so far decide."""
        if approvals >= self.quorum:
            return "approved"
        undecided = audience_size - approvals - denials
        if denials >= self.denials or approvals + undecided < self.quorum:
            return "denied"
        return "open"

    def check_reason(self, outcome: str, answer: object) -> str | None:
        """The reason an approval's vote gives (its answer, when it is text): refused when a
        denial must say why and does not, or when votes are kept and it is not a short text."""
        reason = answer if isinstance(answer, str) else None
        if outcome == "denied" and self.reason_on_deny and not (reason and reason.strip()):
            raise invalid("this request asks a denial for its reason: give it as answer, as text")
        if (
            self.counts_votes
            and answer is not None
            and (reason is None or len(reason) > MAX_REASON)
        ):
            raise invalid(f"a vote's answer is its reason: text of at most {MAX_REASON} characters")
        return reason
