"""Request use cases once a request is asked: reading, replying, expiring, withdrawing,
declaring a blocking dependency, redeeming an approval for its execution intent and reporting
on that intent. Asking and replacing, which post the request's message in its conversation,
are in vigil.requests.asking.

A request's expiry rides the switches' alarm path: the alarm is armed before the request is
committed (a crash in between leaves a stray alarm, which finds nothing to do), and the expiry
is one conditional change, so a late or repeated alarm is harmless. A reply and the expiry race
on the request's version: exactly one lands, and the other finds the final state. Where an
approval's policy counts votes (vigil.requests.policy) a reply is a vote, which decides only when
it meets the policy; every reply is audited in its commit, with the surface it came through. The
requester learns the outcome from one envelope of kind ``response``, derived from the request,
so sending it again (a replay, a repeated alarm) is the same envelope, handed out once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from vigil.alarms.timers import Alarms, Timer
from vigil.audit.records import AuditEvent
from vigil.audit.store import AuditStore
from vigil.clock import Clock, to_ms
from vigil.errors import ErrorCode, VigilError, conflict, invalid, not_found
from vigil.identity.records import Caller
from vigil.kit.paging import scan_page
from vigil.kit.principals import kind_of
from vigil.kit.publish import Publish
from vigil.kit.retry import ATTEMPTS, R, retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import SYSTEM_SENDER, Envelope, agent_address, envelope_id_for
from vigil.mailboxes.service import Tell, deliver
from vigil.quotas.records import Quotas
from vigil.requests.events import RequestData
from vigil.requests.records import (
    Execution,
    ReportedState,
    Request,
    RequestState,
    request_id_of_execution,
)
from vigil.requests.routing import Routing, Rule
from vigil.requests.standing import MAX_LIVE, StandingApproval, StandingTerms, standing_id
from vigil.requests.store import EVERYONE, RequestPorts

TIMER_KIND = "request"
RequestEventType = Literal[
    "request.opened", "request.expiring", "request.answered", "request.expired", "request.withdrawn"
]
# A request's channels are told it is expiring this long before it expires (or a fifth of its
# lifetime before, when that is shorter); none for a request of less than EXPIRING_FROM.
EXPIRING_LEAD = timedelta(minutes=10)
EXPIRING_FROM = timedelta(minutes=5)
# A request's timer of this generation escalates it (the expiring and expiry timers are of 0).
ESCALATION = 1
# A request_status page, and how many places one call examines at most.
STATUS_PAGE = 50
STATUS_SCAN = 200
# A page of standing approvals, and how many one call examines at most.
STANDING_PAGE = 50
STANDING_SCAN = 500


def response_envelope_id(request: Request) -> str:
    """The id of the requester's one response envelope, derived from the request."""
    return envelope_id_for(f"{request.namespace}/{request.id}/response")


@dataclass(frozen=True)
class StatusQuery:
    """What ``request_status`` lists: the caller's requests, or (``everyone``) the
    namespace's; of ``state`` and ``blocking`` if given; with ``waiting``, only those open
    and waiting for the caller's own decision or vote."""

    state: RequestState | None = None
    blocking: bool | None = None
    everyone: bool = False
    waiting: bool = False

    def keeps(self, request: Request, me: str, now: datetime) -> bool:
        state = request.state_at(now)
        return (
            (self.state is None or state == self.state)
            and (self.blocking is None or request.blocking == self.blocking)
            and (not self.waiting or request.waits_for(me, now))
        )


@dataclass(frozen=True)
class Reply:
    """A reply to the request ``request_id`` at its current ``version``: its ``outcome``, and
    the answer, if any."""

    caller: Caller
    request_id: str
    version: int
    outcome: str
    answer: Any = None
    edits: dict[str, Any] | None = None  # an approval's changes to the action's members
    standing: StandingTerms | None = None  # with an approval: a standing approval granted


class Requests:
    """A request's life once it is asked: read, replied to, expired, its blocking declared, its
    approval redeemed. Asking is vigil.requests.asking's."""

    def __init__(
        self,
        store: RequestPorts,
        *,
        queues: MailboxQueues,
        clock: Clock,
        alarms: Alarms,
        publish: Publish,
        audit: AuditStore,
        quotas: Quotas | None = None,
    ) -> None:
        self.store = store
        self.audit = audit
        self.queues = queues
        self.clock = clock
        self.alarms = alarms
        self.publish = publish
        self.quotas = quotas or Quotas()

    # -- reading --------------------------------------------------------------------------------
    def readable(self, caller: Caller, request_id: str) -> Request:
        """The request, if the caller asked it or is of its audience; anyone else gets the
        not_found of a request that does not exist."""
        request = self.store.get_request(caller.namespace, request_id)
        if request is None or not request.visible_to(caller.principal_id):
            raise not_found("request")
        return request

    def watched(self, caller: Caller, request_id: str) -> Request:
        """The request, to read only: as ``readable``, and any request of the namespace for
        those who oversee it (people and operators)."""
        if not caller.is_overseer:
            return self.readable(caller, request_id)
        request = self.store.get_request(caller.namespace, request_id)
        if request is None:
            raise not_found("request")
        return request

    def own(self, caller: Caller, request_id: str) -> Request:
        """The request, if the caller asked it; anyone else, its audience included, gets the
        not_found of a request that does not exist."""
        request = self.store.get_request(caller.namespace, request_id)
        if request is None or request.requester != caller.principal_id:
            raise not_found("request")
        return request

    def execution_of(self, request: Request) -> Execution | None:
        """The execution intent of ``request``, read only where one can be: an approved
        approval that binds an action (any other request costs no read)."""
        if request.state != "approved" or request.action is None:
            return None
        return self.store.get_execution(request.namespace, request.id)

    def status(
        self, caller: Caller, query: StatusQuery, after: str | None
    ) -> tuple[list[Request], str | None]:
        """A page of the requests the caller asked or decides (with ``query.everyone``, an
        overseer's: every request of the namespace), oldest first (a queue of what waits),
        kept by the query's filters; and where the next page starts."""
        if query.everyone and not caller.is_overseer:
            raise VigilError(
                ErrorCode.FORBIDDEN, "only people and operators list every request (everyone)"
            )
        listing = EVERYONE if query.everyone else caller.principal_id
        me = caller.principal_id
        now = self.clock.now()

        def fetch(position: str | None, size: int) -> list[tuple[str, Request | None]]:
            places = self.store.list_requests(caller.namespace, listing, position, size)
            ids = [place.split("#", 1)[1] for place in places]
            found = {r.id: r for r in self.store.get_requests(caller.namespace, ids)}
            return [(place, found.get(i)) for place, i in zip(places, ids, strict=True)]

        def keep(entry: tuple[str, Request | None]) -> bool:
            request = entry[1]
            return request is not None and query.keeps(request, me, now)

        kept, last = scan_page(fetch, lambda e: e[0], keep, after, STATUS_PAGE, STATUS_SCAN)
        return [request for _, request in kept if request is not None], last

    # -- replying and expiring ------------------------------------------------------------------
    def reply(self, uow: UnitOfWork, reply: Reply, present: Callable[[Request], R]) -> R:
        """Resolves the open request at its current version with the reply's outcome."""
        caller = reply.caller

        def attempt() -> tuple[Request, R]:
            # An overseer outside the audience reads the request, and is refused the reply.
            request = self.watched(caller, reply.request_id)
            now = to_ms(self.clock.now())
            by, outcome, answer = caller.principal_id, reply.outcome, reply.answer
            if request.repeats(by, outcome, answer, reply.version, reply.edits):
                # This very reply, retried after its answer was lost; with the standing
                # approval it granted, if it asks for one.
                if reply.standing is not None and not self._granted(request, by, reply.standing):
                    raise conflict("you replied already, and granted no such standing approval")
                return request, present(request)
            if request.state == "open" and request.overdue(now):
                # The deadline passed before this reply: the expiry wins, recorded here if its
                # alarm has not come yet, and the reply is refused naming it.
                self.respond(self._expired(uow, request, now))
            revoked = self._revoked_voters(request)
            replied = request.replied(
                by, outcome, answer, reply.version, now, caller.via, revoked, reply.edits
            )
            writes = [self.store.save_request(replied), self._audited(request, replied, caller)]
            if reply.standing is not None:
                replied, granted = self._granting(request, replied, caller, reply.standing, now)
                writes[0] = self.store.save_request(replied)
                writes += granted
            if replied.state != "open":
                writes += [*self.closing(request), *self.notice("request.answered", replied)]
            shared = replied.shared_answer()
            if shared is not None:
                writes.append(self.store.keep_shared_answer(shared))
            result = present(replied)
            uow.commit(*writes, result=result)
            return replied, result

        replied, result = retry_on_conflict(attempt, "the request")
        self.respond(replied)
        return result

    def _granting(
        self,
        request: Request,
        replied: Request,
        caller: Caller,
        terms: StandingTerms,
        now: datetime,
    ) -> tuple[Request, list[Write]]:
        """The standing approval ``caller`` grants with its approval in ``replied``: what it
        writes, and the request with the vote naming it. Only a person grants one, with an
        approval of an action; at most MAX_LIVE stand for one asker (and as many for any)."""
        if caller.kind != "person":
            raise VigilError(ErrorCode.FORBIDDEN, "only a person grants a standing approval")
        vote = replied.history[-1]
        if request.kind != "approval" or replied.action is None or vote.outcome != "approved":
            raise invalid("a standing approval goes with an approval of an action: approve it")
        standing = StandingApproval.granted(
            request.namespace,
            request.id,
            request.requester,
            caller.principal_id,
            replied.action,
            terms,
            now,
        )
        if self.store.get_standing(request.namespace, standing.id) is not None:
            raise conflict("you granted a standing approval on this request already")
        live = self.store.standing_for(request.namespace, request.requester, now)
        if sum(s.asker == standing.asker for s in live) >= MAX_LIVE:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"at most {MAX_LIVE} standing approvals stand for one asker (and {MAX_LIVE} "
                "for any agent): revoke one first",
                limit=MAX_LIVE,
            )
        named = vote.model_copy(update={"standing": standing.id})
        replied = replied.model_copy(update={"history": [*replied.history[:-1], named]})
        event = AuditEvent.of(
            request.namespace,
            caller.principal_id,
            "grant_standing",
            "standing",
            standing.id,
            None,
            standing.version,
            now,
            via=caller.via,
        )
        return replied, [self.store.add_standing(standing), self.audit.add_audit_event(event)]

    def _granted(self, request: Request, by: str, terms: StandingTerms) -> bool:
        """Whether ``by``'s reply on ``request`` granted a standing approval of ``terms``."""
        granted = self.store.get_standing(
            request.namespace, standing_id(request.namespace, request.id, by)
        )
        return granted is not None and granted.grants(terms)

    def _revoked_voters(self, request: Request) -> frozenset[str]:
        """The members of an approval's audience revoked since it was asked, where votes are
        counted (one read of at most 100 principals); none to read where one reply decides."""
        if request.kind != "approval" or not request.policy.counts_votes:
            return frozenset()
        found = self.store.get_principals(request.namespace, list(request.audience))
        return frozenset(p.id for p in found if p.status != "active")

    def _audited(self, request: Request, replied: Request, caller: Caller) -> Write:
        """The audit of a vote or a decision: who, through which surface, from which version."""
        event = AuditEvent.of(
            request.namespace,
            caller.principal_id,
            "reply",
            "request",
            request.id,
            request.version,
            replied.version,
            replied.history[-1].at,
            via=caller.via,
        )
        return self.audit.add_audit_event(event)

    def closing(self, request: Request, replacement: str | None = None) -> list[Write]:
        """What a request's leaving the open state writes besides itself: the open count, and
        its blocking edge (moved to its ``replacement``, if it has one)."""
        writes: list[Write] = []
        if replacement is None:
            limit = self.quotas.open_requests
            writes.append(
                self.store.count(request.namespace, "open_requests", -1, limit, request.id)
            )
        if request.blocking:
            graph = self.store.get_wait_graph(request.namespace)
            writes.append(self.store.save_wait_graph(graph.without(request.id, replacement)))
        return writes

    def expire(self, uow: UnitOfWork, request: Request) -> Request:
        """Records the expiry of ``request`` if it is still open and overdue: one conditional
        change on its version. Returns the request as it is then; the requester is told."""

        def attempt() -> Request:
            current = self.store.get_request(request.namespace, request.id)
            now = to_ms(self.clock.now())
            if current is None or current.state != "open" or not current.overdue(now):
                return current or request
            return self._expired(uow, current, now)

        final = retry_on_conflict(attempt, "the request")
        if final.state == "expired":
            self.respond(final)
        return final

    def _expired(self, uow: UnitOfWork, request: Request, now: datetime) -> Request:
        """Commits the expiry of the open, overdue ``request``, as read, and returns it."""
        expired = request.expired(now)
        told = self.notice("request.expired", expired)
        uow.commit(*self.closing(request), self.store.save_request(expired), *told)
        return expired

    def on_timer(self, uow: UnitOfWork, timer: Timer) -> None:
        """The alarm function's handler for request timers, in the handler's unit of work: the
        expiry, and the response envelope again if it may not have gone (a crash after the
        expiry)."""
        request = self.store.get_request(timer.namespace, timer.key)
        if request is None:
            return
        if timer.generation == ESCALATION:
            if request.state == "open" and not request.overdue(self.clock.now()):
                self._escalate(uow, request)
            return
        if request.state == "open" and not request.overdue(self.clock.now()):
            if timer.due_at < request.expires_at:
                self._expiring(uow, request)
        elif request.state == "open":
            self.expire(uow, request)
        elif request.state == "expired":
            self.respond(request)

    def _expiring(self, uow: UnitOfWork, request: Request) -> None:
        """Tells the channels and the requester that ``request`` expires soon, once: a second
        run of its timer finds the notification written. A run whose write lost the
        requester's feed to another event (its conditions cannot tell the two apart) tells it
        again, a few times."""
        for _ in range(ATTEMPTS):
            writes = self.notice("request.expiring", request)
            if not writes:
                return
            try:
                uow.commit(*writes)
            except ConditionFailed:
                continue
            return

    def _escalate(self, uow: UnitOfWork, request: Request) -> None:
        """Escalates the alert that ``request`` opened to the channel its policy names, once:
        a second run of its timer finds the escalation written."""
        published = self.publish(
            "request.opened",
            RequestData.of(request),
            namespace=request.namespace,
            occurred_at=self.clock.now(),
            escalated_to=request.policy.escalate_to,
        )
        if published.writes:
            with contextlib.suppress(ConditionFailed):
                uow.commit(*published.writes)

    def notice(self, event_type: RequestEventType, request: Request) -> list[Write]:
        """The notification of ``event_type`` about ``request``, to commit with its change."""
        published = self.publish(
            event_type,
            RequestData.of(request),
            namespace=request.namespace,
            occurred_at=self.clock.now(),
        )
        return published.writes

    def respond(self, request: Request) -> None:
        """Queues the requester's envelope of kind response, if the requester is an agent."""
        if request.response is None or kind_of(request.requester) != "agent":
            return
        address = agent_address(request.requester)
        envelope = Envelope(
            id=response_envelope_id(request),
            namespace=request.namespace,
            address=address,
            sender=request.response.by or SYSTEM_SENDER,
            kind="response",
            payload={
                "request_id": request.id,
                "conversation_id": request.conversation_id,
                "state": request.state,
                "version": request.version,
                "response": request.response.model_dump(mode="json"),
                # An approver edited the action before approving: the action to redeem.
                **(
                    {"action": request.action, "asked_action": request.asked_action}
                    if request.asked_action is not None
                    else {}
                ),
            },
            sent_at=request.response.at,
        )
        try:
            tell = Tell(self.store, self.publish, self.clock)
            deliver(self.store, self.queues, self.clock, request.namespace, address, envelope, tell)
        except VigilError as error:
            # A requester revoked since is owed no response: its queues are gone.
            if error.code is not ErrorCode.NOT_FOUND:
                raise

    def finish_reply(self, namespace: str, request_id: str) -> None:
        """Queues the response of a reply whose call is replayed."""
        request = self.store.get_request(namespace, request_id)
        if request is not None:
            self.respond(request)

    # -- the requester's changes ----------------------------------------------------------------
    def set_blocking(
        self,
        uow: UnitOfWork,
        caller: Caller,
        request_id: str,
        blocking: bool,
        present: Callable[[Request], R],
    ) -> R:
        """Declares or clears the caller's dependency on its open request's one agent. An edge
        that would close a cycle of agents waiting on each other is refused, naming it."""

        def attempt() -> R:
            request = self.readable(caller, request_id)
            now = to_ms(self.clock.now())
            if request.blocking == blocking and request.requester == caller.principal_id:
                request.require_open(now)
                return present(request)
            changed = request.with_blocking(caller.principal_id, blocking, now)
            graph = self.store.get_wait_graph(caller.namespace)
            graph = graph.adding(changed) if blocking else graph.without(request.id)
            result = present(changed)
            uow.commit(
                self.store.save_request(changed), self.store.save_wait_graph(graph), result=result
            )
            return result

        return retry_on_conflict(attempt, "the request")

    def withdraw(
        self,
        uow: UnitOfWork,
        caller: Caller,
        request_id: str,
        present: Callable[[Request], R],
    ) -> R:
        """Withdraws the caller's own open request, audited in the same commit:
        one conditional change on its version, with its open count and blocking edge. A
        request withdrawn already is answered as it stands; any other final one is a conflict
        naming its state."""

        def attempt() -> R:
            request = self.own(caller, request_id)
            if request.state == "withdrawn":
                return present(request)
            now = to_ms(self.clock.now())
            withdrawn = request.withdrawn(caller.principal_id, now)
            event = AuditEvent.of(
                caller.namespace,
                caller.principal_id,
                "withdraw_request",
                "request",
                request.id,
                request.version,
                withdrawn.version,
                now,
            )
            result = present(withdrawn)
            uow.commit(
                *self.closing(request),
                self.store.save_request(withdrawn),
                self.audit.add_audit_event(event),
                *self.notice("request.withdrawn", withdrawn),
                result=result,
            )
            return result

        return retry_on_conflict(attempt, "the request")

    def arm(self, request: Request) -> None:
        """The request's expiry alarm, the one that tells its channels it is expiring and, if
        its policy asks, the one that escalates it."""
        now = self.clock.now()
        timer = Timer(
            kind=TIMER_KIND,
            namespace=request.namespace,
            key=request.id,
            due_at=request.expires_at,
        )
        self.alarms.arm(timer, now)
        escalation = request.policy.escalate_after_seconds
        if escalation is not None:
            due = request.asked_at + timedelta(seconds=escalation)
            self.alarms.arm(timer.model_copy(update={"generation": ESCALATION, "due_at": due}), now)
        lifetime = request.expires_at - request.asked_at
        if lifetime >= EXPIRING_FROM:
            lead = min(EXPIRING_LEAD, lifetime / 5)
            self.alarms.arm(timer.model_copy(update={"due_at": request.expires_at - lead}), now)

    # -- claims and routing -----------------------------------------------------------------------
    def claim(
        self,
        uow: UnitOfWork,
        caller: Caller,
        request_id: str,
        seconds: int | None,
        present: Callable[[Request], R],
    ) -> R:
        """Puts the open request in the caller's hand for ``seconds``, or (None) out of it:
        one conditional change on its version, audited, so two claims at once have one
        outcome: the second finds it held. Releasing what one does not hold changes nothing."""

        def attempt() -> R:
            request = self.watched(caller, request_id)
            now = to_ms(self.clock.now())
            changed = (
                request.released(caller.principal_id, now, caller.via)
                if seconds is None
                else request.claimed(caller.principal_id, seconds, now, caller.via)
            )
            if changed is None:
                return present(request)
            event = AuditEvent.of(
                caller.namespace,
                caller.principal_id,
                "claim" if seconds is not None else "release",
                "request",
                request.id,
                request.version,
                changed.version,
                now,
                via=caller.via,
            )
            result = present(changed)
            uow.commit(
                self.store.save_request(changed), self.audit.add_audit_event(event), result=result
            )
            return result

        return retry_on_conflict(attempt, "the request")

    def routing(self, caller: Caller) -> Routing:
        """The namespace's routing rules: an operator's to read."""
        if not caller.is_operator:
            raise VigilError(ErrorCode.FORBIDDEN, "only operators route requests")
        return self.store.get_routing(caller.namespace)

    def set_routing(
        self,
        uow: UnitOfWork,
        caller: Caller,
        rules: list[Rule],
        version: int,
        present: Callable[[Routing], R],
    ) -> R:
        """Replaces the namespace's routing rules, at their current version (0: never set):
        an operator's, audited. Each rule's people must be people of the namespace."""
        if not caller.is_operator:
            raise VigilError(ErrorCode.FORBIDDEN, "only operators route requests")
        named = list(dict.fromkeys(p for rule in rules for p in rule.to))
        found = {
            p.id
            for p in self.store.get_principals(caller.namespace, named)
            if p.kind == "person" and p.status == "active"
        }
        unknown = [p for p in named if p not in found]
        if unknown:
            raise invalid(
                "a rule routes to active people of this namespace: not " + ", ".join(unknown),
                field="rules",
            )

        def attempt() -> R:
            current = self.store.get_routing(caller.namespace)
            if version == current.version - 1 and current.rules == rules:
                return present(current)  # this very change, retried after its answer was lost
            if version != current.version:
                raise conflict("stale version", current_version=current.version)
            return self._routing_saved(uow, caller, current, rules, present)

        return retry_on_conflict(attempt, "the routing rules")

    def _routing_saved(
        self,
        uow: UnitOfWork,
        caller: Caller,
        current: Routing,
        rules: list[Rule],
        present: Callable[[Routing], R],
    ) -> R:
        changed = current.changed(rules=rules)
        now = to_ms(self.clock.now())
        event = AuditEvent.of(
            caller.namespace,
            caller.principal_id,
            "route",
            "routing",
            caller.namespace,
            current.version or None,
            changed.version,
            now,
            via=caller.via,
        )
        result = present(changed)
        uow.commit(
            self.store.save_routing(changed), self.audit.add_audit_event(event), result=result
        )
        return result

    # -- standing approvals ----------------------------------------------------------------------
    def standing(
        self, caller: Caller, everyone: bool, after: str | None
    ) -> tuple[list[StandingApproval], str | None]:
        """A page of the namespace's live standing approvals: those the caller granted, or
        (``everyone``, an operator's) all of them."""
        if caller.kind != "person" and not caller.is_operator:
            raise VigilError(ErrorCode.FORBIDDEN, "standing approvals are people's")
        if everyone and not caller.is_operator:
            raise VigilError(ErrorCode.FORBIDDEN, "only operators list everyone's (everyone)")
        now = self.clock.now()
        me = caller.principal_id

        def keep(entry: tuple[str, StandingApproval]) -> bool:
            standing = entry[1]
            return standing.live(now) and (everyone or standing.grantor == me)

        def fetch(position: str | None, size: int) -> list[tuple[str, StandingApproval]]:
            return self.store.list_standing(caller.namespace, position, size)

        kept, last = scan_page(fetch, lambda e: e[0], keep, after, STANDING_PAGE, STANDING_SCAN)
        return [standing for _, standing in kept], last

    def revoke_standing(
        self,
        uow: UnitOfWork,
        caller: Caller,
        standing_id: str,
        present: Callable[[StandingApproval], R],
    ) -> R:
        """Revokes a standing approval: its grantor's, or any of the namespace's for an
        operator; audited in the same commit. Revoking it again answers it as it stands. A
        revocation racing an ask it would answer is one conditional write each on its
        version: the ask either used it first, or finds it revoked."""

        def attempt() -> R:
            standing = self.store.get_standing(caller.namespace, standing_id)
            if standing is None or not (
                standing.grantor == caller.principal_id or caller.is_operator
            ):
                raise not_found("standing approval")
            if standing.state == "revoked":
                return present(standing)
            now = to_ms(self.clock.now())
            revoked = standing.revoked(caller.principal_id, caller.is_operator, now)
            event = AuditEvent.of(
                caller.namespace,
                caller.principal_id,
                "revoke_standing",
                "standing",
                standing.id,
                standing.version,
                revoked.version,
                now,
                via=caller.via,
            )
            result = present(revoked)
            uow.commit(
                self.store.save_standing(revoked), self.audit.add_audit_event(event), result=result
            )
            return result

        return retry_on_conflict(attempt, "the standing approval")

    # -- executions -----------------------------------------------------------------------------
    def redeem(
        self,
        uow: UnitOfWork,
        caller: Caller,
        request_id: str,
        action: dict[str, Any],
        present: Callable[[Execution], R],
    ) -> R:
        """The approved approval's one execution intent, for exactly its action: recorded by
        the first redemption, returned again to a retry."""
        request = self.readable(caller, request_id)
        request.require_redeemer(caller.principal_id)

        def found(existing: Execution) -> R:
            if not existing.same_action(action):
                raise VigilError(
                    ErrorCode.INVALID_ARGUMENT, "the action differs from the approved one"
                )
            return present(existing)

        existing = self.store.get_execution(caller.namespace, request_id)
        if existing is not None:
            return found(existing)
        execution = Execution.redeemed(
            request, caller.principal_id, action, to_ms(self.clock.now())
        )
        result = present(execution)
        try:
            uow.commit(self.store.add_execution(execution), result=result)
        except ConditionFailed:
            # A concurrent redemption recorded it first.
            existing = self.store.get_execution(caller.namespace, request_id)
            assert existing is not None
            return found(existing)
        return result

    def report(
        self,
        uow: UnitOfWork,
        caller: Caller,
        execution_id: str,
        state: ReportedState,
        result: Any,
        present: Callable[[Execution], R],
    ) -> R:
        """Records the executor's observation on an execution intent."""
        request_id = request_id_of_execution(execution_id)

        def attempt() -> R:
            execution = (
                None
                if request_id is None
                else self.store.get_execution(caller.namespace, request_id)
            )
            if execution is None or execution.id != execution_id:
                raise not_found("execution")
            self.readable(caller, execution.request_id)
            changed = execution.reported(caller.principal_id, state, result, self.clock.now())
            if changed is None:
                return present(execution)
            shown = present(changed)
            uow.commit(self.store.save_execution(changed), result=shown)
            return shown

        return retry_on_conflict(attempt, "the execution")
