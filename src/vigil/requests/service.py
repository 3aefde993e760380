"""Request use cases: asking, replying, expiring, replacing, declaring a blocking dependency,
redeeming an approval for its execution intent and reporting on that intent.

A request is asked with a message of its own in a conversation (the conversations' ``send`` and
``start_chat``, which commit the request with the message): the message's envelopes to the
agents of the audience are of kind ``request``. Its expiry rides the switches' alarm path: the
alarm is armed before the request is committed (a crash in between leaves a stray alarm, which
finds nothing to do), and the expiry is one conditional change, so a late or repeated alarm is
harmless. A reply and the expiry race on the request's version: exactly one lands, and the
other finds the final state. The requester learns the outcome from one envelope of kind
``response``, derived from the request, so sending it again (a replay, a repeated alarm) is
the same envelope, handed out once.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from vigil.alarms.timers import Alarms, Timer
from vigil.clock import Clock, to_ms
from vigil.errors import ErrorCode, VigilError, not_found
from vigil.identity.records import Caller
from vigil.kit.paging import scan_page
from vigil.kit.principals import Kind, kind_of, new_id, number_in
from vigil.kit.retry import retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import SYSTEM_SENDER, Envelope, agent_address, envelope_id_for
from vigil.mailboxes.service import deliver
from vigil.quotas.records import Quotas
from vigil.requests.records import (
    Execution,
    ReportedState,
    Request,
    RequestKind,
    RequestState,
    request_id_of_execution,
)
from vigil.store import Store

if TYPE_CHECKING:
    from vigil.attachments.blobs import Blobs
    from vigil.conversations.records import Conversation, Mention, Message
    from vigil.conversations.service import Conversations

R = TypeVar("R", bound=BaseModel)

TIMER_KIND = "request"
RequestEventType = Literal[
    "request.opened", "request.expiring", "request.answered", "request.expired"
]
# A request's channels are told it is expiring this long before it expires (or a fifth of its
# lifetime before, when that is shorter); none for a request of less than EXPIRING_FROM.
EXPIRING_LEAD = timedelta(minutes=10)
EXPIRING_FROM = timedelta(minutes=5)
# A request_status page, and how many places one call examines at most.
STATUS_PAGE = 50
STATUS_SCAN = 200


def _request_id(namespace: str, uow: UnitOfWork) -> str:
    """A new request's id: derived from the call's operation when it has an idempotency key, so
    that a retry arms the same alarm (one schedule, named after it) and asks the same request;
    random otherwise."""
    if uow.operation is None:
        return new_id("req")
    digest = hashlib.sha256(f"{namespace}/{uow.operation}".encode()).digest()
    return "req_" + base64.b32encode(digest).decode().lower()[:16]


def response_envelope_id(request: Request) -> str:
    """The id of the requester's one response envelope, derived from the request."""
    return envelope_id_for(f"{request.namespace}/{request.id}/response")


class Requests:
    def __init__(
        self,
        store: Store,
        queues: MailboxQueues,
        clock: Clock,
        alarms: Alarms,
        blobs: Blobs | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        self.store = store
        self.queues = queues
        self.clock = clock
        self.alarms = alarms
        self.blobs = blobs
        self.quotas = quotas or Quotas()

    @property
    def conversations(self) -> Conversations:
        """Where requests are asked. Imported here: the alarm function, which only expires
        requests, loads none of it."""
        from vigil.conversations.service import Conversations

        assert self.blobs is not None, "asking needs the attachments' blobs"
        return Conversations(self.store, self.queues, self.clock, self.blobs)

    # -- reading --------------------------------------------------------------------------------
    def readable(self, caller: Caller, request_id: str) -> Request:
        """The request, if the caller asked it or is of its audience; anyone else gets the
        not_found of a request that does not exist."""
        request = self.store.get_request(caller.namespace, request_id)
        if request is None or not request.visible_to(caller.principal_id):
            raise not_found("request")
        return request

    def status(
        self,
        caller: Caller,
        state: RequestState | None,
        blocking: bool | None,
        after: str | None,
    ) -> tuple[list[Request], str | None]:
        """A page of the requests the caller asked or decides, oldest first (a queue of what
        waits), of ``state`` and ``blocking`` if given; and where the next page starts."""
        now = self.clock.now()

        def fetch(position: str | None, size: int) -> list[tuple[str, Request | None]]:
            places = self.store.list_requests(caller.namespace, caller.principal_id, position, size)
            ids = [place.split("#", 1)[1] for place in places]
            found = {r.id: r for r in self.store.get_requests(caller.namespace, ids)}
            return [(place, found.get(i)) for place, i in zip(places, ids, strict=True)]

        def keep(entry: tuple[str, Request | None]) -> bool:
            request = entry[1]
            return (
                request is not None
                and (state is None or request.state_at(now) == state)
                and (blocking is None or request.blocking == blocking)
            )

        kept, last = scan_page(fetch, lambda e: e[0], keep, after, STATUS_PAGE, STATUS_SCAN)
        return [request for _, request in kept if request is not None], last

    # -- asking ---------------------------------------------------------------------------------
    def ask(
        self,
        uow: UnitOfWork,
        caller: Caller,
        target: tuple[str, Kind] | None,
        conversation_id: str | None,
        targets: list[tuple[str, Kind]] | None,
        body: str,
        mentions: list[Mention],
        attachment_ids: list[str],
        title: str | None,
        reuse_direct: bool,
        kind: RequestKind,
        choices: list[str] | None,
        action: dict[str, Any] | None,
        blocking: bool,
        lifetime_seconds: int,
        shared_key: str | None,
        present: Callable[[Request, Conversation, Message], R],
    ) -> R:
        """A request of ``kind`` with its message: in ``conversation_id``, to ``target`` in a
        direct conversation, or to ``targets`` in a new chat (start_chat's approval). A question
        with a ``shared_key`` is answered at once by the answer kept under that key, if it was
        given in exactly the same context by a principal of this audience still active."""
        namespace = caller.namespace
        now = to_ms(self.clock.now())
        request_id = _request_id(namespace, uow)
        limit = self.quotas.open_requests
        # Read first, unlike the other quotas: a full quota refuses before the alarm is armed,
        # so the refusal changes nothing (a lost race for the last place may leave a stray
        # alarm, which finds nothing to expire).
        if self.store.quota_usage(namespace, "open_requests") >= limit:
            raise self.quotas.exceeded("open_requests")
        asked: list[Request] = []

        def also(conversation: Conversation, message: Message) -> tuple[Message, list[Write]]:
            request = Request.asked(
                namespace,
                request_id,
                kind,
                caller.principal_id,
                [p for p in conversation.principal_ids if p != caller.principal_id],
                conversation.id,
                message.id,
                body,
                choices,
                action,
                now,
                lifetime_seconds,
                blocking=blocking,
                shared_key=shared_key,
            )
            reused = self._reuse(request, now)
            if reused is not None:
                asked.append(reused)
                writes = [self.store.add_request(reused)]
                return message.model_copy(update={"request_id": reused.id}), writes
            writes = [self.store.count(namespace, "open_requests", 1, limit)]
            if blocking:
                graph = self.store.get_wait_graph(namespace).adding(request)
                writes.append(self.store.save_wait_graph(graph))
            writes.append(self.store.add_request(request))
            if asked and self.store.quota_usage(namespace, "open_requests") >= limit:
                raise self.quotas.exceeded("open_requests")
            # The alarm before the commit, once nothing but a lost race can refuse the request:
            # a crash in between leaves a stray alarm, never a request without one.
            self._arm(request)
            writes += self._publish("request.opened", request)
            asked.append(request)
            return message.model_copy(update={"request_id": request.id}), writes

        def shown(conversation: Conversation, message: Message, created: bool) -> R:
            return present(asked[-1], conversation, message)

        if targets is not None:
            result = self.conversations.start_chat(
                uow, caller, targets, body, mentions, attachment_ids, title, shown, also
            )
        else:
            result = self.conversations.send(
                uow,
                caller,
                target,
                conversation_id,
                body,
                mentions,
                attachment_ids,
                title,
                reuse_direct,
                shown,
                also,
            )
        self.respond(asked[-1])  # a reused answer reaches the requester at once
        return result

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

    def finish_ask(self, namespace: str, conversation_id: str, message_id: str) -> None:
        """Delivers what is still owed of an ask whose call is replayed."""
        self.conversations.finish(namespace, conversation_id, message_id)

    # -- replying and expiring ------------------------------------------------------------------
    def reply(
        self,
        uow: UnitOfWork,
        caller: Caller,
        request_id: str,
        version: int,
        outcome: str,
        answer: Any,
        present: Callable[[Request], R],
    ) -> R:
        """Resolves the open request at its current ``version`` with ``outcome``."""

        def attempt() -> Request:
            request = self.readable(caller, request_id)
            now = to_ms(self.clock.now())
            if request.repeats(caller.principal_id, outcome, answer, version):
                return request  # this very reply, retried after its answer was lost
            if request.state == "open" and request.overdue(now):
                # The deadline passed before this reply: the expiry wins, recorded here if its
                # alarm has not come yet, and the reply is refused naming it.
                self.expire(request)
            replied = request.replied(caller.principal_id, outcome, answer, version, now)
            writes = [*self._closing(request), self.store.save_request(replied)]
            writes += self._publish("request.answered", replied)
            shared = replied.shared_answer()
            if shared is not None:
                writes.append(self.store.keep_shared_answer(shared))
            uow.commit(*writes, result=present(replied))
            return replied

        replied = retry_on_conflict(attempt, "the request")
        self.respond(replied)
        return present(replied)

    def _closing(self, request: Request, replacement: str | None = None) -> list[Write]:
        """What a request's leaving the open state writes besides itself: the open count, and
        its blocking edge (moved to its ``replacement``, if it has one)."""
        writes: list[Write] = []
        if replacement is None:
            limit = self.quotas.open_requests
            writes.append(self.store.count(request.namespace, "open_requests", -1, limit))
        if request.blocking:
            graph = self.store.get_wait_graph(request.namespace)
            writes.append(self.store.save_wait_graph(graph.without(request.id, replacement)))
        return writes

    def expire(self, request: Request) -> Request:
        """Records the expiry of ``request`` if it is still open and overdue: one conditional
        change on its version. Returns the request as it is then; the requester is told."""

        def attempt() -> Request:
            current = self.store.get_request(request.namespace, request.id)
            now = to_ms(self.clock.now())
            if current is None or current.state != "open" or not current.overdue(now):
                return current or request
            expired = current.expired(now)
            told = self._publish("request.expired", expired)
            self.store.commit([*self._closing(current), self.store.save_request(expired), *told])
            return expired

        final = retry_on_conflict(attempt, "the request")
        if final.state == "expired":
            self.respond(final)
        return final

    def on_timer(self, timer: Timer) -> None:
        """The alarm function's handler for request timers: the expiry, and the response
        envelope again if it may not have gone (a crash after the expiry)."""
        request = self.store.get_request(timer.namespace, timer.key)
        if request is None:
            return
        if request.state == "open" and not request.overdue(self.clock.now()):
            if timer.due_at < request.expires_at:
                self._expiring(request)
        elif request.state == "open":
            self.expire(request)
        elif request.state == "expired":
            self.respond(request)

    def _expiring(self, request: Request) -> None:
        """Tells the channels that ``request`` expires soon, once: a second run of its timer
        finds the notification written."""
        writes = self._publish("request.expiring", request)
        if writes:
            with contextlib.suppress(ConditionFailed):
                self.store.commit(writes)

    def _publish(self, event_type: RequestEventType, request: Request) -> list[Write]:
        """The notification of ``event_type`` about ``request``, to commit with its change."""
        from vigil.notifications.events import make_event
        from vigil.notifications.outbox import Outbox
        from vigil.requests.events import RequestData

        event = make_event(
            event_type,
            RequestData.of(request),
            namespace=request.namespace,
            occurred_at=self.clock.now(),
            console_base=None,
        )
        return Outbox(self.store, self.clock, self.alarms).publish(event)

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
            },
            sent_at=request.response.at,
        )
        try:
            deliver(self.store, self.queues, self.clock, request.namespace, address, envelope)
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

    def replace(
        self,
        uow: UnitOfWork,
        caller: Caller,
        request_id: str,
        version: int,
        body: str,
        mentions: list[Mention],
        present: Callable[[Request, Request], R],
    ) -> R:
        """Supersedes the caller's open request with a new one asked in the same conversation:
        the same audience, files, choices, action and blocking, a fresh version and deadline,
        and no response carried over."""
        namespace = caller.namespace
        now = to_ms(self.clock.now())
        original = self.readable(caller, request_id)
        replacement_id = _request_id(namespace, uow)
        done: list[tuple[Request, Request]] = []

        def also(conversation: Conversation, message: Message) -> tuple[Message, list[Write]]:
            current = self.readable(caller, request_id)
            superseded = current.superseded(caller.principal_id, replacement_id, version, now)
            replacement = Request.asked(
                namespace,
                replacement_id,
                current.kind,
                caller.principal_id,
                current.audience,
                current.conversation_id,
                message.id,
                body,
                current.choices,
                current.action,
                now,
                current.lifetime_seconds,
                replaces=current.id,
                blocking=current.blocking,
            )
            asked_with = self._message_of(current)
            files = [] if asked_with is None else asked_with.attachments
            writes = [
                *self._closing(current, replacement=replacement_id),
                self.store.save_request(superseded),
                self.store.add_request(replacement),
            ]
            self._arm(replacement)
            writes += self._publish("request.opened", replacement)
            done.append((superseded, replacement))
            recipients = [p for p in current.audience if kind_of(p) == "agent"]
            stored = message.model_copy(
                update={
                    "request_id": replacement_id,
                    "recipients": recipients,
                    "attachments": files,
                }
            )
            return stored, writes

        def shown(conversation: Conversation, message: Message, created: bool) -> R:
            return present(*done[-1])

        return self.conversations.send(
            uow,
            caller,
            None,
            original.conversation_id,
            body,
            mentions,
            [],
            None,
            False,
            shown,
            also,
        )

    def _arm(self, request: Request) -> None:
        """The request's expiry alarm, and the one that tells its channels it is expiring."""
        now = self.clock.now()
        timer = Timer(
            kind=TIMER_KIND,
            namespace=request.namespace,
            key=request.id,
            due_at=request.expires_at,
        )
        self.alarms.arm(timer, now)
        lifetime = request.expires_at - request.asked_at
        if lifetime >= EXPIRING_FROM:
            lead = min(EXPIRING_LEAD, lifetime / 5)
            self.alarms.arm(timer.model_copy(update={"due_at": request.expires_at - lead}), now)

    def _message_of(self, request: Request) -> Message | None:
        seq = number_in("msg", request.message_id)
        if seq is None:
            return None
        return self.store.get_message(request.namespace, request.conversation_id, seq)

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

        def found(existing: Execution) -> R:
            if existing.redeemed_by != caller.principal_id or not existing.same_action(action):
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
