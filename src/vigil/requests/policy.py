"""How a request is decided, frozen when it is asked. An approval's: how many approvals approve
it (its quorum: one, some, or all of its audience), how many denials deny it, whether its
deadline denies it rather than letting it expire, and whether a denial must say why. Any
request's: the channel its opened alert escalates to, once, if it is still open after a time
(the channels' own escalation, vigil.notifications, sends it).

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
    escalate_after_seconds: int | None = None
    escalate_to: str | None = None

    def frozen(self, audience_size: int) -> Policy:
        quorum = audience_size if self.quorum == "all" else self.quorum
        return Policy(
            quorum=quorum,
            denials=self.denials,
            deny_on_timeout=self.deny_on_timeout,
            reason_on_deny=self.reason_on_deny,
            escalate_after_seconds=self.escalate_after_seconds,
            escalate_to=self.escalate_to,
        )


class Policy(Record):
    quorum: int = 1
    denials: int = 1
    deny_on_timeout: bool = False
    reason_on_deny: bool = False
    escalate_after_seconds: int | None = None
    escalate_to: str | None = None  # a channel of the request's namespace

    def check(self, kind: str, audience_size: int, lifetime_seconds: int) -> None:
        """Refused unless its escalation is whole and comes before the deadline, and unless
        the default, or an approval's policy its audience can meet."""
        if (self.escalate_after_seconds is None) != (self.escalate_to is None):
            raise invalid("escalate_after_seconds and escalate_to go together")
        if (self.escalate_after_seconds or 0) >= lifetime_seconds:
            raise invalid("a request escalates before it expires: escalate_after_seconds is late")
        decides = self.model_copy(update={"escalate_after_seconds": None, "escalate_to": None})
        if decides == Policy():
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
