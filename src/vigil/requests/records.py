"""Requests: a question, an approval or a task put to the other participants of a conversation,
resolved once by a typed reply, and the execution intent an approved action may be redeemed for.

A request is asked in a conversation, with a message of its own. Its audience, who may decide
it, is fixed when it is asked: the conversation's other participants at that moment; later
membership changes never widen or narrow it. It is ``open`` until exactly one final outcome is
recorded: a reply valid for its kind, its expiry at ``expires_at``, or its replacement or
withdrawal by the requester. Every change is a conditional write on its version, appended to
its history with the principal that made it; a final state never changes.

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

from vigil.errors import ErrorCode, VigilError, conflict, invalid
from vigil.kit.bounds import JsonBounds
from vigil.kit.canonical import canonical
from vigil.kit.principals import kind_of
from vigil.kit.records import Record, Versioned

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
    "asked", "blocking", "unblocking", "replied", "expired", "replaced", "withdrawn"
]

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
# A request's history: asking it and its final change are one each, so only the blocking flag
# could grow it; it may be set or cleared until the history holds this many changes but one.
MAX_HISTORY = 40
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


class Change(Record):
    kind: ChangeKind
    by: str | None  # None for the expiry
    at: datetime
    version: int  # the request's version after the change


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
    history: list[Change]

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
    ) -> Request:
        if not audience:
            raise invalid("a request needs someone to decide it: the conversation has no one else")
        if action is not None and kind != "approval":
            raise invalid("an action is bound to an approval: ask with kind approval")
        if choices is not None and len(set(choices)) != len(choices):
            raise invalid("offer each choice once")
        if blocking and (len(audience) != 1 or kind_of(audience[0]) != "agent"):
            raise invalid("blocking is declared only on a request that one agent decides")
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
            history=[Change(kind="asked", by=requester, at=now, version=1)],
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
            return "expired"
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
        change = Change(kind=kind, by=by, at=now, version=self.version + 1)
        return self.changed(history=[*self.history, change], **updates)

    def require_open(self, now: datetime) -> None:
        """A conflict naming the final state, unless the request is open at ``now``."""
        state = self.state_at(now)
        if state != "open":
            raise conflict(f"the request is final: {state}", state=state)

    def repeats(self, by: str, outcome: str, answer: Any, version: int) -> bool:
        """Whether a reply is the one that resolved this request, made again: same principal,
        outcome, answer and version. It is answered with the request as it stands."""
        response = self.response
        return (
            response is not None
            and self.history[-1].kind == "replied"
            and (response.by, response.outcome, response.answer) == (by, outcome, answer)
            and self.version == version + 1
        )

    def replied(self, by: str, outcome: str, answer: Any, version: int, now: datetime) -> Request:
        """The request resolved by ``by``'s reply, which must be of its audience, at its
        current ``version``, with an outcome of its kind (and an offered choice)."""
        if by not in self.audience:
            raise VigilError(
                ErrorCode.FORBIDDEN,
                "only the request's audience, fixed when it was asked, decides it",
            )
        self.require_open(now)
        if version != self.version:
            raise conflict("stale version", current_version=self.version)
        if outcome not in OUTCOMES[self.kind]:
            raise invalid(
                f"a {self.kind} is resolved with one of: {', '.join(OUTCOMES[self.kind])}",
                outcomes=list(OUTCOMES[self.kind]),
            )
        given = answer is not None or outcome == "answered"
        if self.choices is not None and given and answer not in self.choices:
            raise invalid("answer with one of the offered choices, exactly as offered")
        response = Response(outcome=outcome, answer=answer, by=by, at=now)
        return self._changed("replied", by, now, state=outcome, response=response)

    def expired(self, now: datetime) -> Request:
        """The request expired: only an open one past its deadline."""
        if self.state != "open" or not self.overdue(now):
            raise ValueError("only an open request past its deadline expires")
        response = Response(outcome="expired", by=None, at=now)
        return self._changed("expired", None, now, state="expired", response=response)

    def with_blocking(self, by: str, blocking: bool, now: datetime) -> Request:
        if by != self.requester:
            raise VigilError(ErrorCode.FORBIDDEN, "only the requester declares what it waits on")
        self.require_open(now)
        if blocking and self.single_agent is None:
            raise invalid("blocking is declared only on a request that one agent decides")
        if len(self.history) >= MAX_HISTORY - 1:  # room is kept for the final change
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
