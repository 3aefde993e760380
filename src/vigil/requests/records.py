"""Requests: a question, an approval or a task put to the other participants of a conversation,
resolved once by a typed reply, and the execution intent an approved action may be redeemed for.

A request is asked in a conversation, with a message of its own. Its audience, who may decide
it, is fixed when it is asked: the conversation's other participants at that moment; later
membership changes never widen or narrow it. It is ``open`` until exactly one final outcome is
recorded: a reply valid for its kind (for an approval asked with a policy, the vote that meets
it: vigil.requests.policy), its expiry at ``expires_at`` (a denial, if its policy says so), or
its replacement or withdrawal by the requester. Every change is a conditional write on its
version, appended to its history with the principal that made it and the surface its call came
through; a final state never changes.

An approval may bind an ``action``, a JSON object. Once approved, and until the request's
deadline, its requester may redeem it for one execution intent, by presenting an action whose
canonical serialisation (``vigil.kit.canonical``) equals the approved one byte for byte. The
intent then records what its executor reports; a report is not proof that anything happened
outside.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from vigil.errors import ErrorCode, VigilError, conflict, invalid
from vigil.kit.bounds import JsonBounds
from vigil.kit.canonical import canonical, changed_members
from vigil.kit.principals import Surface, kind_of
from vigil.kit.records import Record, Versioned
from vigil.requests.policy import TIMEOUT_REASON, Policy

RequestKind = Literal["question", "approval", "task"]
Outcome = Literal["answered", "approved", "denied", "completed", "failed", "rejected"]
RequestState = Literal[
    "open",
    "answered",
    "approved",
    "denied",
    "completed",
    "failed",
    "rejected",
    "expired",
    "replaced",
    "withdrawn",
]
ExecutionState = Literal["intended", "started", "succeeded", "failed", "unknown"]
ReportedState = Literal["started", "succeeded", "failed", "unknown"]
ChangeKind = Literal[
    "asked",
    "blocking",
    "unblocking",
    "voted",
    "replied",
    "expired",
    "timed_out",
    "replaced",
    "withdrawn",
    "claimed",
    "released",
    "assigned",
]
# A claim's changes: a person claiming the request, releasing it, or a routing rule assigning it
# (vigil.requests.routing). They are kept apart from the votes' room in the history.
CLAIM_CHANGES = frozenset({"claimed", "released", "assigned"})

OUTCOMES: dict[str, tuple[Outcome, ...]] = {
    "question": ("answered",),
    "approval": ("approved", "denied"),
    "task": ("completed", "failed", "rejected"),
}

DEFAULT_EXPIRES_SECONDS = 24 * 3600
MIN_EXPIRES_SECONDS = 10
MAX_EXPIRES_SECONDS = 30 * 24 * 3600
MAX_CHOICES = 20
MAX_CHOICE = 200
# A request's history: asking it and its final change are one each; the votes before the final
# one are fewer than MAX_QUORUM approvals and as many denials (vigil.requests.policy); and the
# blocking flag, on a request one agent decides (so with no votes before the final change), may
# be set or cleared until the history holds this many changes but one.
MAX_HISTORY = 40
# A request is claimed, released or assigned at most this many times, beyond MAX_HISTORY.
MAX_CLAIMS = 6
MAX_CLAIM_SECONDS = 24 * 3600
CLAIM_STEP = timedelta(minutes=1)
# An approval's action is edited at most this many times (each edit sets the votes aside, and
# keeps the members it changed and their values before it: at most 16 KiB a change).
MAX_EDITS = 3
ACTION_BOUNDS = JsonBounds(max_bytes=8 * 1024, max_depth=6, max_keys=50, max_string=2000)
ANSWER_BOUNDS = JsonBounds(max_bytes=16 * 1024, max_depth=4, max_keys=50, max_string=16 * 1024)
RESULT_BOUNDS = JsonBounds(max_bytes=16 * 1024, max_depth=4, max_keys=50, max_string=16 * 1024)

FINAL_EXECUTION: frozenset[str] = frozenset({"succeeded", "failed", "unknown"})


def request_id_of_execution(execution_id: str) -> str | None:
    """The request an execution id belongs to: they share their random part."""
    return "req_" + execution_id[4:] if execution_id.startswith("exe_") else None


def execution_id_for(request_id: str) -> str:
    return "exe_" + request_id[4:]


class Response(Record):
    outcome: Outcome | Literal["expired"]
    answer: Any = None
    by: str | None  # the principal that replied; None for the expiry
    at: datetime
    reused_from: str | None = None  # the request whose answer a shared_key reused
    via: Surface | None = None  # where the deciding reply came from


def digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


class SharedAnswer(Record):
    """The latest answer to a question asked with a ``shared_key``: what it was asked in (the
    digest of its canonical context), by whom it was answered, and the answer."""

    namespace: str
    key: str  # the digest of the shared_key
    context: str
    request_id: str
    response: Response


def _unset(value: Any) -> bool:
    return value is None


class Claim(Record):
    """Who has a request in hand, until when: a person of its audience who claimed it, or
    whom a routing rule assigned it to. Others see it; an expired claim is no claim."""

    by: str
    at: datetime
    until: datetime
    rule: int | None = Field(default=None, exclude_if=_unset)  # the routing rule's, if assigned


class Change(Record):
    kind: ChangeKind
    by: str | None  # None for the timer's changes
    at: datetime
    version: int  # the request's version after the change
    via: Surface | None = None  # where its call came from; None for the timer's
    outcome: Outcome | None = None  # a vote's, or a decision's
    reason: str | None = None  # a counted vote's answer; "timeout" for the timer's denial
    # An approval's changes to the action (its members, given new values): from this change
    # on, the action is the edited one, and only the votes from here count.
    # (Left out of the stored record while unset: a request's item stays the size it was.)
    edits: dict[str, Any] | None = Field(default=None, exclude_if=_unset)
    edited_from: dict[str, Any] | None = Field(default=None, exclude_if=_unset)
    # The standing approval this approval granted; or, on a vote via "standing", the one
    # that cast it (vigil.requests.standing).
    standing: str | None = Field(default=None, exclude_if=_unset)
    # On a claim's change: whom it is claimed by (or assigned to) and until when.
    claim: Claim | None = Field(default=None, exclude_if=_unset)


class Request(Versioned):
    namespace: str
    id: str
    kind: RequestKind
    requester: str
    audience: list[str]  # who may decide: fixed at ask time
    conversation_id: str
    message_id: str
    body: str
    choices: list[str] | None = None
    action: dict[str, Any] | None = None
    blocking: bool = False
    state: RequestState = "open"
    asked_at: datetime
    expires_at: datetime
    lifetime_seconds: int  # what a replacement's deadline is counted with
    response: Response | None = None
    replaces: str | None = None
    replaced_by: str | None = None
    shared_key: str | None = None  # the digest of the key its answer may be reused under
    policy: Policy = Policy()
    history: list[Change]
    # The action's members an approver may change before approving (edit before approve).
    editable: list[str] | None = Field(default=None, exclude_if=_unset)
    # The action as it was asked, once an approver edited it: ``action`` is then the edited
    # one, which is what redeem_approval must present.
    asked_action: dict[str, Any] | None = Field(default=None, exclude_if=_unset)
    claim: Claim | None = Field(default=None, exclude_if=_unset)

    @classmethod
    def asked(
        cls,
        namespace: str,
        request_id: str,
        kind: RequestKind,
        requester: str,
        audience: list[str],
        conversation_id: str,
        message_id: str,
        body: str,
        choices: list[str] | None,
        action: dict[str, Any] | None,
        now: datetime,
        lifetime_seconds: int,
        replaces: str | None = None,
        blocking: bool = False,
        shared_key: str | None = None,
        policy: Policy | None = None,
        via: Surface | None = None,
        editable: list[str] | None = None,
    ) -> Request:
        policy = policy or Policy()
        if not audience:
            raise invalid("a request needs someone to decide it: the conversation has no one else")
        if action is not None and kind != "approval":
            raise invalid("an action is bound to an approval: ask with kind approval")
        if choices is not None and len(set(choices)) != len(choices):
            raise invalid("offer each choice once")
        if editable is not None and action is None:
            raise invalid("editable names members of an approval's action: give action too")
        if editable is not None:
            editable = list(dict.fromkeys(editable))
        if blocking and (len(audience) != 1 or kind_of(audience[0]) != "agent"):
            raise invalid("blocking is declared only on a request that one agent decides")
        policy.check(kind, len(audience), lifetime_seconds)
        return cls(
            namespace=namespace,
            id=request_id,
            kind=kind,
            requester=requester,
            audience=audience,
            conversation_id=conversation_id,
            message_id=message_id,
            body=body,
            choices=choices,
            action=action,
            blocking=blocking,
            asked_at=now,
            expires_at=now + timedelta(seconds=lifetime_seconds),
            lifetime_seconds=lifetime_seconds,
            replaces=replaces,
            # Only a question's answer is reused: an approval or a task is decided anew.
            shared_key=digest(shared_key.encode()) if shared_key and kind == "question" else None,
            policy=policy,
            history=[Change(kind="asked", by=requester, at=now, version=1, via=via)],
            editable=editable or None,
            version=1,
        )

    def context(self) -> str:
        """What a shared answer must match exactly to be reused: the question's kind, body and
        choices, canonically."""
        return digest(canonical({"kind": self.kind, "body": self.body, "choices": self.choices}))

    def shared_answer(self) -> SharedAnswer | None:
        """The answer this request leaves under its shared_key, once answered."""
        if self.shared_key is None or self.response is None or self.state != "answered":
            return None
        return SharedAnswer(
            namespace=self.namespace,
            key=self.shared_key,
            context=self.context(),
            request_id=self.response.reused_from or self.id,
            response=self.response,
        )

    def reusing(self, shared: SharedAnswer, now: datetime) -> Request:
        """This new request, answered at once by ``shared``: the same answer, by the same
        principal, said to be reused. The caller checks the answerer's authority."""
        response = shared.response.model_copy(update={"reused_from": shared.request_id})
        change = Change(kind="replied", by=response.by, at=now, version=self.version)
        return self.model_copy(
            update={"state": "answered", "response": response, "history": [*self.history, change]}
        )

    # -- reading ------------------------------------------------------------------------------
    def state_at(self, now: datetime) -> RequestState:
        """The state as of ``now``: an open request past its deadline is expired, whether or
        not its alarm has recorded it yet."""
        if self.state == "open" and self.overdue(now):
            return "denied" if self.policy.deny_on_timeout else "expired"
        return self.state

    def overdue(self, now: datetime) -> bool:
        return now >= self.expires_at

    def visible_to(self, principal_id: str) -> bool:
        return principal_id == self.requester or principal_id in self.audience

    def require_redeemer(self, by: str) -> None:
        """Forbidden unless ``by`` asked this request: checked before anything else of a
        redemption, so that no one else learns from the answer whether an action matches or
        an intent exists."""
        if by != self.requester:
            raise VigilError(ErrorCode.FORBIDDEN, "only the requester redeems its approval")

    @property
    def single_agent(self) -> str | None:
        """The one agent that decides this request, if its audience is exactly that."""
        if len(self.audience) == 1 and kind_of(self.audience[0]) == "agent":
            return self.audience[0]
        return None

    # -- changes --------------------------------------------------------------------------------
    def _changed(self, kind: ChangeKind, by: str | None, now: datetime, **updates: Any) -> Request:
        return self._recorded(Change(kind=kind, by=by, at=now, version=self.version + 1), **updates)

    def _recorded(self, change: Change, **updates: Any) -> Request:
        return self.changed(history=[*self.history, change], **updates)

    def require_open(self, now: datetime) -> None:
        """A conflict naming the final state, unless the request is open at ``now``."""
        state = self.state_at(now)
        if state != "open":
            raise conflict(f"the request is final: {state}", state=state)

    def repeats(
        self,
        by: str,
        outcome: str,
        answer: Any,
        version: int,
        edits: dict[str, Any] | None = None,
    ) -> bool:
        """Whether a reply is the one that resolved this request, made again: same principal,
        outcome, answer, edits and version; or, while it is open, a vote ``by`` cast already,
        cast again. It is answered with the request as it stands."""
        response = self.response
        if self.state == "open":
            vote = self.vote_of(by)
            return (
                vote is not None
                and (vote.outcome, vote.reason) == (outcome, answer)
                and self._same_edits(vote, edits)
            )
        return (
            response is not None
            and self.history[-1].kind == "replied"
            and self._same_edits(self.history[-1], edits)
            and (response.by, response.outcome, response.answer) == (by, outcome, answer)
            and self.version > version
            and not self.model_copy(update={"history": self.history[:-1]}).stale(version)
        )

    def _same_edits(self, change: Change, edits: dict[str, Any] | None) -> bool:
        """Whether ``edits`` are those ``change`` made: the action holds their values now
        (canonically), and the members the change edited are all among them (a change that
        edited nothing: no edits, or edits that changed nothing)."""
        holds = not _edited_members(self.action, {**(self.action or {}), **(edits or {})})
        if change.edits is None:
            return holds
        return bool(edits) and set(change.edits) <= set(edits or ()) and holds

    def waits_for(self, principal_id: str, now: datetime) -> bool:
        """Whether the request is open and waits for ``principal_id``'s decision: of its
        audience, not claimed by another, and, where votes are counted, not yet voted."""
        holder = self.holder(now)
        return (
            self.state_at(now) == "open"
            and principal_id in self.audience
            and holder in (None, principal_id)
            and self.vote_of(principal_id) is None
        )

    def _changes(self) -> int:
        """The changes that count against MAX_HISTORY: all but a claim's."""
        return sum(c.kind not in CLAIM_CHANGES for c in self.history)

    def holder(self, now: datetime) -> str | None:
        """Who has the open request in hand at ``now``, if anyone: its claim, unexpired."""
        claim = self.claim
        if claim is None or now >= claim.until or self.state_at(now) != "open":
            return None
        return claim.by

    def _claims_left(self) -> None:
        """Refused once a claim would leave no room for its release: a holder can always
        put a request back."""
        if sum(c.kind in CLAIM_CHANGES for c in self.history) >= MAX_CLAIMS - 1:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"a request is claimed, released or assigned at most {MAX_CLAIMS} times",
                limit=MAX_CLAIMS,
            )

    def claimed(
        self, by: str, seconds: int, now: datetime, via: Surface | None = None
    ) -> Request | None:
        """The open request in ``by``'s hand for ``seconds`` (at most until its deadline): a
        person of its audience, while no one else holds it. Claiming it again extends it, if
        by more than CLAIM_STEP; None if it changes nothing (a retried claim)."""
        if by not in self.audience or kind_of(by) != "person":
            raise VigilError(ErrorCode.FORBIDDEN, "only a person of its audience claims a request")
        self.require_open(now)
        if self.vote_of(by) is not None:
            # Held by one who cannot vote again, it would wait for no one.
            raise conflict("you voted already: a claim is for a request you still decide")
        holder = self.holder(now)
        if holder not in (None, by):
            assert self.claim is not None
            raise conflict(
                f"claimed by another until {self.claim.until.isoformat()}",
                claimed_by=holder,
                until=self.claim.until.isoformat(),
            )
        until = min(now + timedelta(seconds=seconds), self.expires_at)
        if holder == by and self.claim is not None and until - self.claim.until < CLAIM_STEP:
            return None  # held already, for as long give or take a minute: a retry
        self._claims_left()
        claim = Claim(by=by, at=now, until=until)
        change = Change(
            kind="claimed", by=by, at=now, version=self.version + 1, via=via, claim=claim
        )
        return self._recorded(change, claim=claim)

    def released(self, by: str, now: datetime, via: Surface | None = None) -> Request | None:
        """The request out of ``by``'s hand; None if ``by`` does not hold it (nothing to do)."""
        if self.holder(now) != by:
            return None
        change = Change(kind="released", by=by, at=now, version=self.version + 1, via=via)
        return self._recorded(change, claim=None)

    def assigned(self, to: str, rule: int, seconds: int, now: datetime) -> Request:
        """The request just asked, in ``to``'s hand by routing rule ``rule``: a person of its
        audience (vigil.requests.routing)."""
        until = min(now + timedelta(seconds=seconds), self.expires_at)
        claim = Claim(by=to, at=now, until=until, rule=rule)
        change = Change(kind="assigned", by=None, at=now, version=self.version + 1, claim=claim)
        return self._recorded(change, claim=claim)

    def vote_of(self, by: str) -> Change | None:
        """``by``'s vote that stands, if any (live_votes)."""
        return next((c for c in self.live_votes() if c.by == by), None)

    def live_votes(self) -> list[Change]:
        """The votes that count: every denial, whenever cast (an edit never undoes one), and
        the approvals cast on the action as it stands (since its last edit, that edit's own
        included): an approval of another action counts no more."""
        votes = [c for c in self.history if c.kind == "voted"]
        edited = [i for i, c in enumerate(votes) if c.edits is not None]
        start = edited[-1] if edited else 0
        return [c for i, c in enumerate(votes) if i >= start or c.outcome == "denied"]

    def stale(self, version: int) -> bool:
        """Whether what a reply at ``version`` decides on has changed since: votes cast since
        (and claims) change nothing of it, but a vote that edited the action does."""
        since = [change for change in self.history if change.version > version]
        return version > self.version or any(
            (change.kind != "voted" and change.kind not in CLAIM_CHANGES)
            or change.edits is not None
            for change in since
        )

    def edited(self, by: str, edits: dict[str, Any] | None) -> dict[str, Any] | None:
        """The action with ``edits`` made to it by ``by``'s approval: only an approval's, only
        of the members its asker made editable, within the action's bounds. None if the edits
        change nothing."""
        if not edits:
            return None
        if self.kind != "approval" or self.action is None:
            raise invalid("edits change an approval's action: this request has none")
        refused = sorted(set(edits) - set(self.editable or ()))
        if refused:
            allowed = ", ".join(self.editable or ()) or "none of its members"
            raise invalid(
                f"the asker lets an approver edit {allowed}; not {', '.join(refused)}",
                editable=list(self.editable or ()),
            )
        problem = ACTION_BOUNDS.shape_problem(edits)
        if problem is not None:
            raise invalid(f"the edits are out of bounds: {problem}")
        changed = _edited_members(self.action, {**self.action, **edits})
        if not changed:
            return None
        if sum(c.edits is not None for c in self.history) >= MAX_EDITS:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"an action is edited at most {MAX_EDITS} times: approve it as it stands, "
                "or deny it",
                limit=MAX_EDITS,
            )
        action = {**self.action, **changed}
        problem = ACTION_BOUNDS.shape_problem(action)
        if problem is None and ACTION_BOUNDS.size(action) > ACTION_BOUNDS.max_bytes:
            problem = f"the edited action is larger than {ACTION_BOUNDS.max_bytes} bytes"
        if problem is not None:
            raise invalid(f"the edited action is out of bounds: {problem}")
        return action

    def replied(
        self,
        by: str,
        outcome: str,
        answer: Any,
        version: int,
        now: datetime,
        via: Surface | None = None,
        revoked: frozenset[str] = frozenset(),
        edits: dict[str, Any] | None = None,
    ) -> Request:
        """The request with ``by``'s reply, which must be of its audience, at a version only
        votes have moved since, with an outcome of its kind (and an offered choice): a vote
        recorded, or the decision, when it meets the request's policy. ``revoked`` are the
        members of the audience revoked since they were asked: an approval one of them cast
        no longer counts, nor does one of them count as a vote still to come; a denial one of
        them cast stands (refusing is never what a stolen credential is wanted for)."""
        if by not in self.audience:
            raise VigilError(
                ErrorCode.FORBIDDEN,
                "only the request's audience, fixed when it was asked, decides it",
            )
        self.require_open(now)
        if self.stale(version):
            raise conflict("stale version", current_version=self.version)
        if outcome not in OUTCOMES[self.kind]:
            raise invalid(
                f"a {self.kind} is resolved with one of: {', '.join(OUTCOMES[self.kind])}",
                outcomes=list(OUTCOMES[self.kind]),
            )
        given = answer is not None or outcome == "answered"
        if self.choices is not None and given and answer not in self.choices:
            raise invalid("answer with one of the offered choices, exactly as offered")
        # A counted vote's reason is bounded (policy.MAX_REASON); a lone decision's is its
        # response's answer, not kept twice.
        reason = self.policy.check_reason(outcome, answer) if self.kind == "approval" else None
        reason = reason if self.policy.counts_votes else None
        if edits and outcome != "approved":
            raise invalid("edits go with an approval: approve the edited action, or deny")
        edited = self.edited(by, edits)
        earlier = self.vote_of(by)
        if earlier is not None and (edited is None or earlier.outcome == "denied"):
            # An approver may approve an edit of its own (another action); a denial stands.
            raise conflict("you voted already: a vote is not changed", vote=earlier.outcome)
        decided: Outcome | Literal["open"] = outcome
        if self.kind == "approval":
            # An edit is a new action: the approvals of the old one count no more.
            before = [c for c in self.live_votes() if edited is None or c.outcome == "denied"]
            cast = [(c.by, c.outcome) for c in before] + [(by, outcome)]
            approvals = sum(o == "approved" and v not in revoked for v, o in cast)
            denials = sum(o == "denied" for _, o in cast)
            voters = {v for v, _ in cast}
            # The audience as it can still vote: its revoked members who approved count as
            # having cast nothing, and those yet to vote as never going to.
            standing = len(self.audience) - len(revoked - voters)
            standing -= sum(o == "approved" and v in revoked for v, o in cast)
            decided = self.policy.tally(approvals, denials, standing)
        if decided == "open" and self._changes() >= MAX_HISTORY - 1:
            # Room is kept for the final change. Only votes cast again after edits get here:
            # without an edit, the policy's bounds keep the votes fewer.
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"a request keeps at most {MAX_HISTORY} changes: decide it as it stands",
                limit=MAX_HISTORY,
            )
        vote = Change(
            kind="voted" if decided == "open" else "replied",
            by=by,
            at=now,
            version=self.version + 1,
            via=via,
            outcome=outcome,
            reason=reason,
            edits=_edited_members(self.action, edited) if edited is not None else None,
            # The members' values before, those the action had (one it lacked is left out).
            edited_from=(
                {
                    name: (self.action or {})[name]
                    for name in _edited_members(self.action, edited)
                    if name in (self.action or {})
                }
                if edited is not None
                else None
            ),
        )
        changed: dict[str, Any] = {}
        if edited is not None:
            asked = self.action if self.asked_action is None else self.asked_action
            changed = {"action": edited, "asked_action": asked}
        if decided == "open":
            return self._recorded(vote, **changed)
        response = Response(outcome=decided, answer=answer, by=by, at=now, via=via)
        return self._recorded(vote, state=decided, response=response, **changed)

    def standing_voted(
        self, grants: list[tuple[str, str]], now: datetime
    ) -> tuple[Request, list[str]]:
        """This request just asked, with the votes its audience's standing approvals cast:
        ``grants`` are (grantor, standing approval) pairs, each checked to admit its action and
        its grantor active; one vote a grantor, until the votes decide it. Returns the request
        and the standing approvals that voted."""
        request, used = self, []
        for grantor, standing in grants:
            if request.state != "open" or grantor not in request.audience:
                continue
            if request.vote_of(grantor) is not None:
                continue
            cast = [c.outcome for c in request.live_votes()] + ["approved"]
            decided = request.policy.tally(
                cast.count("approved"), cast.count("denied"), len(request.audience)
            )
            vote = Change(
                kind="voted" if decided == "open" else "replied",
                by=grantor,
                at=now,
                version=request.version + 1,
                via="standing",
                outcome="approved",
                standing=standing,
            )
            if decided == "open":
                request = request._recorded(vote)
            else:
                response = Response(outcome=decided, by=grantor, at=now, via="standing")
                request = request._recorded(vote, state=decided, response=response)
            used.append(standing)
        return request, used

    def expired(self, now: datetime) -> Request:
        """The request expired, or denied if its policy says so: only an open one past its
        deadline."""
        if self.state != "open" or not self.overdue(now):
            raise ValueError("only an open request past its deadline expires")
        if self.policy.deny_on_timeout:
            response = Response(outcome="denied", answer=TIMEOUT_REASON, by=None, at=now)
            change = Change(
                kind="timed_out",
                by=None,
                at=now,
                version=self.version + 1,
                outcome="denied",
                reason=TIMEOUT_REASON,
            )
            return self._recorded(change, state="denied", response=response)
        response = Response(outcome="expired", by=None, at=now)
        return self._changed("expired", None, now, state="expired", response=response)

    def with_blocking(self, by: str, blocking: bool, now: datetime) -> Request:
        if by != self.requester:
            raise VigilError(ErrorCode.FORBIDDEN, "only the requester declares what it waits on")
        self.require_open(now)
        if blocking and self.single_agent is None:
            raise invalid("blocking is declared only on a request that one agent decides")
        if self._changes() >= MAX_HISTORY - 1:  # room is kept for the final change
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"a request keeps at most {MAX_HISTORY} changes: ask again instead",
                limit=MAX_HISTORY,
            )
        return self._changed("blocking" if blocking else "unblocking", by, now, blocking=blocking)

    def superseded(self, by: str, replacement_id: str, version: int, now: datetime) -> Request:
        if by != self.requester:
            raise VigilError(ErrorCode.FORBIDDEN, "only the requester replaces its request")
        self.require_open(now)
        if version != self.version:
            raise conflict("stale version", current_version=self.version)
        return self._changed("replaced", by, now, state="replaced", replaced_by=replacement_id)

    def withdrawn(self, by: str, now: datetime) -> Request:
        """The open request withdrawn by its requester: no one decides it any more."""
        if by != self.requester:
            raise VigilError(ErrorCode.FORBIDDEN, "only the requester withdraws its request")
        self.require_open(now)
        return self._changed("withdrawn", by, now, state="withdrawn")


def _edited_members(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """``changed_members`` of an action, by name: as a change keeps them."""
    return dict(sorted(changed_members(before or {}, after).items()))


class Report(Record):
    state: ReportedState
    by: str
    at: datetime


class Execution(Versioned):
    """The one execution intent of an approved approval. Its states: ``intended`` when
    redeemed; ``started``; then one of ``succeeded``, ``failed`` or ``unknown``, which never
    change. A report is what the executor says, not proof of an effect outside Vigil."""

    namespace: str
    id: str
    request_id: str
    action: dict[str, Any]
    redeemed_by: str
    redeemed_at: datetime
    state: ExecutionState = "intended"
    result: Any = None
    reported_by: str | None = None
    reported_at: datetime | None = None
    reports: list[Report] = []

    @classmethod
    def redeemed(
        cls, request: Request, by: str, action: dict[str, Any], now: datetime
    ) -> Execution:
        request.require_redeemer(by)
        if request.kind != "approval":
            raise invalid("only an approval is redeemed")
        if request.action is None:
            raise invalid("this approval binds no action: it only communicates a decision")
        state = request.state_at(now)
        if state != "approved":
            raise conflict(
                f"only an approved approval is redeemed; this one is {state}", state=state
            )
        if now >= request.expires_at:
            raise conflict(
                "the approval is past its deadline and is no longer redeemed", state="approved"
            )
        if canonical(action) != canonical(request.action):
            raise invalid("the action differs from the approved one")
        return cls(
            namespace=request.namespace,
            id=execution_id_for(request.id),
            request_id=request.id,
            action=request.action,
            redeemed_by=by,
            redeemed_at=now,
            version=1,
        )

    def same_action(self, action: dict[str, Any]) -> bool:
        return canonical(action) == canonical(self.action)

    def reported(
        self, by: str, state: ReportedState, result: Any, now: datetime
    ) -> Execution | None:
        """The execution with ``by``'s report of ``state``; None when the report repeats the
        one recorded (a retry). A final state never changes."""
        if by != self.redeemed_by:
            raise VigilError(ErrorCode.FORBIDDEN, "only who redeemed the approval reports on it")
        if state == self.state and result == self.result:
            return None
        if self.state in FINAL_EXECUTION:
            raise conflict(f"the execution is final: {self.state}", state=self.state)
        if state == "started" and self.state == "started":
            raise conflict("the execution is started already", state=self.state)
        return self.changed(
            state=state,
            result=result,
            reported_by=by,
            reported_at=now,
            reports=[*self.reports, Report(state=state, by=by, at=now)],
        )
