"""Asking a request, and replacing one: each with a message of its own in a conversation.

The request commits with its message (the conversations' ``posting``, stored by their
``writes``), in one transaction with the call's completion: the message's envelopes to the
agents of the audience are of kind ``request``, and are delivered after the commit, as any
message's. The request's alarms are armed before the commit, once nothing but a lost race can
refuse it.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vigil.audit.records import AuditEvent
from vigil.clock import to_ms
from vigil.conversations.records import Mention, Message
from vigil.conversations.service import Conversations, Post, Posting, claiming
from vigil.errors import invalid
from vigil.identity.records import Caller
from vigil.kit.principals import kind_of, new_id, number_in
from vigil.kit.retry import R, retry_on_conflict
from vigil.kit.uow import UnitOfWork, Write
from vigil.requests.policy import Terms
from vigil.requests.records import DEFAULT_EXPIRES_SECONDS, Request, RequestKind
from vigil.requests.routing import Assignment, least_recent
from vigil.requests.service import Requests
from vigil.requests.store import EscalationChannels


def _request_id(namespace: str, uow: UnitOfWork) -> str:
    """A new request's id: derived from the call's operation when it has an idempotency key, so
    that a retry arms the same alarm (one schedule, named after it) and asks the same request;
    random otherwise."""
    if uow.operation is None:
        return new_id("req")
    digest = hashlib.sha256(f"{namespace}/{uow.operation}".encode()).digest()
    return "req_" + base64.b32encode(digest).decode().lower()[:16]


@dataclass(frozen=True)
class Ask:
    """A request of ``kind`` asked with the message ``post``, of the conversation's other
    participants. A question with a ``shared_key`` is answered at once by the answer kept
    under that key, if it was given in exactly the same context by a principal of this
    audience still active."""

    post: Post
    kind: RequestKind = "question"
    choices: list[str] | None = None
    action: dict[str, Any] | None = None
    blocking: bool = False
    lifetime_seconds: int = DEFAULT_EXPIRES_SECONDS
    shared_key: str | None = None
    policy: Terms = field(default_factory=Terms)
    editable: list[str] | None = None  # the action's members an approver may change


@dataclass(frozen=True)
class Replace:
    """The caller's open request ``request_id``, at its current ``version``, superseded by a
    new one asked with ``body``."""

    caller: Caller
    request_id: str
    version: int
    body: str
    mentions: list[Mention]


class Asking:
    def __init__(
        self,
        *,
        requests: Requests,
        conversations: Conversations,
        channels: EscalationChannels,
    ) -> None:
        self.requests = requests
        self.conversations = conversations
        self.channels = channels
        self.store = requests.store
        self.clock = requests.clock

    def ask(self, uow: UnitOfWork, ask: Ask, present: Callable[[Request, Posting], R]) -> R:
        """The request ``ask`` makes, stored with its message, presented by ``present``."""
        caller = ask.post.caller
        namespace = caller.namespace
        now = to_ms(self.clock.now())
        request_id = _request_id(namespace, uow)
        quotas = self.requests.quotas
        limit = quotas.open_requests
        # Read first, unlike the other quotas: a full quota refuses before the alarm is armed,
        # so the refusal changes nothing (a lost race for the last place may leave a stray
        # alarm, which finds nothing to expire).
        if self.store.over_quota(namespace, "open_requests", limit):
            raise quotas.exceeded("open_requests")
        escalate_to = ask.policy.escalate_to
        if escalate_to is not None and self.channels.get_channel(namespace, escalate_to) is None:
            raise invalid("escalate_to names no channel of this namespace", field="escalate_to")
        operation = claiming(uow)
        asked: list[Request] = []

        def attempt() -> tuple[R, Message]:
            posting = self.conversations.posting(ask.post, operation, now)
            conversation, message = posting.conversation, posting.message
            audience = [p for p in conversation.principal_ids if p != caller.principal_id]
            request = Request.asked(
                namespace,
                request_id,
                ask.kind,
                caller.principal_id,
                audience,
                conversation.id,
                message.id,
                ask.post.body,
                ask.choices,
                ask.action,
                now,
                ask.lifetime_seconds,
                blocking=ask.blocking,
                shared_key=ask.shared_key,
                policy=ask.policy.frozen(len(audience)),
                via=caller.via,
                editable=ask.editable,
            )
            reused = self._reuse(request, now)
            if reused is not None:
                request = reused
                writes = [self.store.add_request(reused)]
            else:
                request, standing = self._standing(request, now)
                request, routed = self._routed(request, now)
                if request.state != "open":
                    # Approved at once by standing approvals: final, so no alarm nor quota
                    # place; told as any decision is (a person's, through a standing one).
                    told = self.requests.notice("request.answered", request)
                    writes = [self.store.add_request(request), *standing, *told]
                else:
                    writes = [*self._opening(request, retried=bool(asked)), *standing, *routed]
            asked.append(request)
            posting = posting.carrying(message.model_copy(update={"request_id": request.id}))
            result = present(request, posting)
            uow.commit(*self.conversations.writes(posting), *writes, result=result)
            return result, posting.message

        result, message = retry_on_conflict(attempt, ask.post.contended)
        self.conversations.deliver(message)
        self.requests.respond(asked[-1])  # a reused answer reaches the requester at once
        return result

    def _opening(self, request: Request, retried: bool) -> list[Write]:
        """What opening ``request`` writes besides it: its place in the quota, its blocking
        edge. Its alarms are armed first."""
        namespace = request.namespace
        quotas = self.requests.quotas
        limit = quotas.open_requests
        writes = [self.store.count(namespace, "open_requests", 1, limit)]
        if request.blocking:
            graph = self.store.get_wait_graph(namespace).adding(request)
            writes.append(self.store.save_wait_graph(graph))
        writes.append(self.store.add_request(request))
        if retried and self.store.over_quota(namespace, "open_requests", limit):
            raise quotas.exceeded("open_requests")
        # The alarm before the commit, once nothing but a lost race can refuse the request:
        # a crash in between leaves a stray alarm, never a request without one.
        self.requests.arm(request)
        return writes + self.requests.notice("request.opened", request)

    def _standing(self, request: Request, now: datetime) -> tuple[Request, list[Write]]:
        """``request`` with the votes its audience's standing approvals cast, if its action
        has their shape and their grantors are still active; and the writes of those votes:
        each standing approval used once (conditionally on the version read, so one revoked
        meanwhile fails the commit, and the ask is tried again without it) and each vote
        audited as its grantor's."""
        if request.kind != "approval" or request.action is None:
            return request, []
        found = [
            s
            for s in self.store.standing_for(request.namespace, request.requester, now)
            if s.grantor in request.audience and s.admits(request.requester, request.action)
        ]
        if not found:
            return request, []
        grantors = list(dict.fromkeys(s.grantor for s in found))
        active = {
            p.id
            for p in self.store.get_principals(request.namespace, grantors)
            if p.status == "active"
        }
        voted, _ = request.standing_voted(
            [(s.grantor, s.id) for s in found if s.grantor in active], now
        )
        by_id = {s.id: s for s in found}
        writes: list[Write] = []
        for change in voted.history[len(request.history) :]:
            standing = by_id[change.standing or ""]
            writes.append(self.store.save_standing(standing.used_on(request.id, now)))
            event = AuditEvent.of(
                request.namespace,
                change.by,
                "reply",
                "request",
                request.id,
                change.version - 1,
                change.version,
                now,
                via="standing",
            )
            writes.append(self.requests.audit.add_audit_event(event))
        return voted, writes

    def _routed(self, request: Request, now: datetime) -> tuple[Request, list[Write]]:
        """``request``, still open, assigned by the first of its namespace's routing rules
        that matches it to a person of its audience, still active (vigil.requests.routing);
        and, for a rule that picks the least recently assigned, that person's assignment,
        written at its version (two asks at once never take the same one unseen)."""
        if request.state != "open":
            return request, []
        found = self.store.get_routing(request.namespace).rule_for(
            request.requester, request.kind, request.action
        )
        if found is None:
            return request, []
        number, rule = found
        # Of the audience, and still to vote (a standing approval may have voted already).
        named = [p for p in rule.to if p in request.audience and request.vote_of(p) is None]
        active = {
            p.id
            for p in self.store.get_principals(request.namespace, named)
            if p.status == "active"
        }
        candidates = [p for p in named if p in active]
        if not candidates:
            return request, []
        writes: list[Write] = []
        to = candidates[0]
        if rule.least_recent:
            assignments = {
                a.person: a for a in self.store.get_assignments(request.namespace, candidates)
            }
            to = least_recent(candidates, assignments)
            before = assignments.get(to)
            assignment = Assignment(
                namespace=request.namespace,
                person=to,
                last_at=now,
                request_id=request.id,
                version=1 if before is None else before.version + 1,
            )
            writes.append(self.store.save_assignment(assignment))
        assigned = request.assigned(to, number, rule.minutes * 60, now)
        event = AuditEvent.of(
            request.namespace, None, "assign", "request", request.id, None, assigned.version, now
        )
        return assigned, [*writes, self.requests.audit.add_audit_event(event)]

    def _reuse(self, request: Request, now: datetime) -> Request | None:
        """``request`` answered by the answer kept under its shared_key, if it may be reused:
        the same context exactly, and an answerer of its audience still active."""
        if request.shared_key is None:
            return None
        shared = self.store.get_shared_answer(request.namespace, request.shared_key)
        if shared is None or shared.context != request.context():
            return None
        answerer = shared.response.by
        if answerer is None or answerer not in request.audience:
            return None
        principal = self.store.get_principal(request.namespace, answerer)
        if principal is None or principal.status != "active":
            return None
        return request.reusing(shared, now)

    def replace(
        self, uow: UnitOfWork, replace: Replace, present: Callable[[Request, Request], R]
    ) -> R:
        """Supersedes the caller's open request with a new one asked in the same conversation:
        the same audience, files, choices, action and blocking, a fresh version and deadline,
        and no response carried over."""
        caller = replace.caller
        namespace = caller.namespace
        now = to_ms(self.clock.now())
        original = self.requests.readable(caller, replace.request_id)
        replacement_id = _request_id(namespace, uow)
        post = Post(
            caller=caller,
            body=replace.body,
            mentions=replace.mentions,
            conversation_id=original.conversation_id,
        )
        operation = claiming(uow)

        def attempt() -> tuple[R, Message]:
            posting = self.conversations.posting(post, operation, now)
            current = self.requests.readable(caller, replace.request_id)
            superseded = current.superseded(
                caller.principal_id, replacement_id, replace.version, now
            )
            replacement = Request.asked(
                namespace,
                replacement_id,
                current.kind,
                caller.principal_id,
                current.audience,
                current.conversation_id,
                posting.message.id,
                replace.body,
                current.choices,
                # The action as its asker asked it: an approver's edit was a vote, and the
                # votes end with the request they were cast on.
                current.action if current.asked_action is None else current.asked_action,
                now,
                current.lifetime_seconds,
                replaces=current.id,
                blocking=current.blocking,
                policy=current.policy,
                via=caller.via,
                editable=current.editable,
            )
            replacement, routed = self._routed(replacement, now)
            asked_with = self._message_of(current)
            files = [] if asked_with is None else asked_with.attachments
            writes = [
                *self.requests.closing(current, replacement=replacement_id),
                self.store.save_request(superseded),
                self.store.add_request(replacement),
                *routed,
            ]
            self.requests.arm(replacement)
            writes += self.requests.notice("request.opened", replacement)
            recipients = [p for p in current.audience if kind_of(p) == "agent"]
            stored = posting.message.model_copy(
                update={
                    "request_id": replacement_id,
                    "recipients": recipients,
                    "attachments": files,
                }
            )
            posting = posting.carrying(stored)
            result = present(superseded, replacement)
            uow.commit(*self.conversations.writes(posting), *writes, result=result)
            return result, posting.message

        result, message = retry_on_conflict(attempt, post.contended)
        self.conversations.deliver(message)
        return result

    def _message_of(self, request: Request) -> Message | None:
        seq = number_in("msg", request.message_id)
        if seq is None:
            return None
        return self.store.get_message(request.namespace, request.conversation_id, seq)
