"""Conversation use cases: sending, starting a chat, changing who is in it, reading history, and
the delivery of each message to the agents in the conversation.

Who may contact whom is decided in one place, ``Conversations.reachable``.

A message is stored first, with the idempotency completion of the call, in one transaction;
it names the agents owed an envelope (every agent participant but the sender) and how many of
them have theirs. Delivery follows, driven by that record: each envelope goes to the recipient's
``agent:<id>`` mailbox through ``deliver``, with an id derived from the message and the
recipient, and the count moves after each batch. A call that fails part-way leaves the message
stored and its completion recorded, so a retry with the same idempotency key replays the result
and, before returning it, delivers what is still owed (``finish``, the tools' ``resume``). An
envelope queued twice (a crash between the send and the count) is one envelope, handed out once
by the mailbox. So every recipient ends with exactly one envelope of each message.

A message that asks a request is posted by the requests: ``posting`` builds it, the requests add
what it asks, and ``writes`` stores it in their commit, with the request.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from vigil.attachments.blobs import Blobs
from vigil.attachments.service import Attachments
from vigil.clock import Clock, to_ms
from vigil.conversations.records import (
    AttachedFile,
    Conversation,
    Mention,
    Message,
    Participant,
)
from vigil.conversations.store import ConversationPorts
from vigil.errors import ErrorCode, VigilError, conflict, forbidden, invalid, not_found
from vigil.identity.records import Caller, Principal
from vigil.kit.principals import Kind, new_id, number_in
from vigil.kit.retry import R, retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import Envelope, agent_address, envelope_id_for
from vigil.mailboxes.service import Tell, deliver

Operation = Literal["rename", "add", "remove", "leave"]
# A page of history: at most this many messages, and no more bodies than PAGE_BYTES once one
# is in, so that a page stays small whatever the bodies.
MESSAGES_PAGE = 20
PAGE_BYTES = 128 * 1024
# Envelopes queued between two records of how far delivery got.
DELIVERY_BATCH = 25


@dataclass(frozen=True)
class Post:
    """A message to send, and where: into a conversation the caller takes part in
    (``conversation_id``), to ``target`` in a new direct conversation (the pair's reused one
    with ``reuse_direct``), or to ``chat_with`` in a new shared chat that the caller manages."""

    caller: Caller
    body: str
    mentions: list[Mention] = field(default_factory=list)
    attachment_ids: list[str] = field(default_factory=list)
    conversation_id: str | None = None
    target: tuple[str, Kind] | None = None
    chat_with: list[tuple[str, Kind]] | None = None
    title: str | None = None
    reuse_direct: bool = False

    @property
    def contended(self) -> str:
        """What kept changing, when every attempt of the call loses its race."""
        return "the chat" if self.chat_with is not None else "the conversation"


@dataclass(frozen=True)
class Posting:
    """A message about to be stored: the conversation as the message leaves it, the message,
    and whether it starts the conversation; with what its store writes are conditional on (the
    conversation as read, whether the pair reuses it) and the writes of the files it claims."""

    conversation: Conversation
    message: Message
    created: bool
    read: Conversation
    reused: bool
    claimed: list[Write]

    def carrying(self, message: Message) -> Posting:
        """The posting with ``message`` (the same one, with what it carries besides) instead."""
        return replace(self, message=message)


@dataclass(frozen=True)
class ChangeMembership:
    """A change of a chat at its current ``version``: a rename (to ``title``, or to none), an
    addition or a
    removal (``members``; with an addition, ``share_history``), or the caller's leaving (with
    ``next_manager``, if the caller manages it)."""

    caller: Caller
    conversation_id: str
    version: int
    operation: Operation
    members: list[str] = field(default_factory=list)
    title: str | None = None
    next_manager: str | None = None
    share_history: bool = False


def claiming(uow: UnitOfWork) -> str:
    """The name of the operation that claims the drafts one call attaches: stable across the
    call's retries with its idempotency key, new for a call without one."""
    return uow.operation or new_id("op")


class Conversations:
    def __init__(
        self,
        store: ConversationPorts,
        *,
        queues: MailboxQueues,
        clock: Clock,
        blobs: Blobs,
        tell: Tell | None = None,
    ) -> None:
        self.store = store
        self.queues = queues
        self.clock = clock
        self.tell = tell
        self.attachments = Attachments(store, blobs=blobs, clock=clock)

    # -- who may contact whom, and who may read --------------------------------------------
    def reachable(self, caller: Caller, wanted: list[tuple[str, Kind | None]]) -> list[Principal]:
        """The principals ``caller`` brings into a conversation (a send to a target, a chat's
        targets, additions to a chat), each named by id and, where the caller said, kind.

        The contact rule, enforced here and nowhere else: a principal may bring in any other
        active principal of its own namespace, whatever the kinds and roles of either. An id
        of another namespace, of nobody, or of another kind than named is not_found, exactly
        as a missing one; a revoked principal is refused. Taking part in a conversation adds
        no right to contact anyone: every addition passes this rule again."""
        ids = [principal_id for principal_id, _ in wanted]
        if caller.principal_id in ids:
            raise invalid("a conversation is with others: leave yourself out of the targets")
        found = {p.id: p for p in self.store.get_principals(caller.namespace, ids)}
        for principal_id, kind in wanted:
            principal = found.get(principal_id)
            if principal is None or (kind is not None and principal.kind != kind):
                raise not_found("principal")
        revoked = sorted(p.id for p in found.values() if p.status != "active")
        if revoked:
            raise invalid("revoked principals cannot be contacted", ids=revoked)
        return [found[principal_id] for principal_id in ids]

    def readable(self, caller: Caller, conversation_id: str) -> tuple[Conversation, Participant]:
        """The conversation, if the caller takes part in it now. Anyone else, whoever they
        are, gets the not_found of a conversation that does not exist."""
        conversation = self.store.get_conversation(caller.namespace, conversation_id)
        participant = (
            None if conversation is None else conversation.participant(caller.principal_id)
        )
        if conversation is None or participant is None:
            raise not_found("conversation")
        return conversation, participant

    # -- sending -----------------------------------------------------------------------------
    def send(self, uow: UnitOfWork, post: Post, present: Callable[[Posting], R]) -> R:
        """Stores the message ``post`` sends, presented by ``present``, and delivers it."""
        now = to_ms(self.clock.now())
        operation = claiming(uow)

        def attempt() -> tuple[R, Message]:
            posting = self.posting(post, operation, now)
            result = present(posting)
            uow.commit(*self.writes(posting), result=result)
            return result, posting.message

        result, message = retry_on_conflict(attempt, post.contended)
        self.deliver(message)
        return result

    def posting(self, post: Post, operation: str, now: datetime) -> Posting:
        """The message ``post`` sends, numbered in its conversation (a new one unless it goes
        into one the caller takes part in, or the pair's reused one), with the drafts it
        claims by ``operation``: to commit, then to deliver."""
        caller = post.caller
        if post.conversation_id is not None:
            current, _ = self.readable(caller, post.conversation_id)
            return self._posted(post, current, operation, now)
        if post.chat_with is not None:
            others = [p.id for p in self.reachable(caller, list(post.chat_with))]
            started = Conversation.started(
                caller.namespace, "chat", caller.principal_id, others, post.title, now
            )
            return self._posted(post, started, operation, now, created=True)
        assert post.target is not None
        (other,) = self.reachable(caller, [post.target])
        reused = (
            self.store.get_direct(caller.namespace, caller.principal_id, other.id)
            if post.reuse_direct
            else None
        )
        if reused is not None:
            current, _ = self.readable(caller, reused)
            return self._posted(post, current, operation, now)
        started = Conversation.started(
            caller.namespace, "direct", caller.principal_id, [other.id], post.title, now
        )
        return self._posted(post, started, operation, now, created=True)

    def _posted(
        self,
        post: Post,
        conversation: Conversation,
        operation: str,
        now: datetime,
        created: bool = False,
    ) -> Posting:
        numbered, message = conversation.posted(
            post.caller.principal_id, post.body, post.mentions, now
        )
        message, claimed = self._attach(post, message, operation, now)
        reused = created and post.reuse_direct
        return Posting(numbered, message, created, conversation, reused, claimed)

    def writes(self, posting: Posting) -> list[Write]:
        """What stores the posting's message as it is now: with its new conversation, or as
        the next number of the conversation read; and the claims of its files."""
        if posting.created:
            write = self.store.start_conversation(
                posting.conversation, posting.message, posting.reused
            )
        else:
            write = self.store.add_message(posting.read, posting.message)
        return [write, *posting.claimed]

    def _attach(
        self, post: Post, message: Message, operation: str, now: datetime
    ) -> tuple[Message, list[Write]]:
        """``message`` with the drafts it claims, and the writes of the claims, which commit
        with it: a draft becomes this message's file, or nothing happens to it."""
        if not post.attachment_ids:
            return message, []
        claimed, writes = self.attachments.claim(
            post.caller,
            post.attachment_ids,
            operation,
            message.conversation_id,
            message.id,
            now,
        )
        attached = [
            AttachedFile(
                id=a.id,
                file_name=a.file_name,
                media_type=a.media_type,
                size=a.size,
                sha256=a.sha256,
            )
            for a in claimed
        ]
        return message.model_copy(update={"attachments": attached}), writes

    # -- delivery ------------------------------------------------------------------------------
    def deliver(self, message: Message) -> None:
        """Queues an envelope of ``message`` for each recipient still owed one, recording how
        far it got after each batch."""
        owed = message.owed()
        for start in range(0, len(owed), DELIVERY_BATCH):
            batch = owed[start : start + DELIVERY_BATCH]
            for recipient in batch:
                address = agent_address(recipient)
                try:
                    deliver(
                        self.store,
                        self.queues,
                        self.clock,
                        message.namespace,
                        address,
                        envelope_of(message, recipient),
                        self.tell,
                    )
                except VigilError as error:
                    # A participant revoked since: its queues are gone and it reads nothing
                    # more, so it is owed nothing; the others still get the message.
                    if error.code is not ErrorCode.NOT_FOUND:
                        raise
            # A concurrent retry of the same call may have recorded as much already.
            with contextlib.suppress(ConditionFailed):
                self.store.mark_delivered(message, message.delivered + start + len(batch))

    def finish(self, namespace: str, conversation_id: str, message_id: str) -> None:
        """Delivers what is still owed of a message whose call is replayed."""
        seq = number_in("msg", message_id)
        message = None if seq is None else self.store.get_message(namespace, conversation_id, seq)
        if message is not None and message.id == message_id:
            self.deliver(message)

    # -- membership ------------------------------------------------------------------------------
    def change_membership(
        self, uow: UnitOfWork, change: ChangeMembership, present: Callable[[Conversation], R]
    ) -> R:
        """Renames a chat, adds or removes participants (its manager only), or takes the caller
        out of it, at the chat's current version."""
        caller, operation, title = change.caller, change.operation, change.title

        def attempt() -> R:
            current, _ = self.readable(caller, change.conversation_id)
            if current.kind != "chat":
                raise invalid("a direct conversation keeps its two participants; start a chat")
            if current.version != change.version:
                raise conflict("stale version", current_version=current.version)
            if operation != "leave" and current.manager != caller.principal_id:
                raise forbidden("only the chat's manager may rename it, add or remove members")
            if operation == "rename":
                changed = current.renamed(title)
            elif operation == "add":
                wanted: list[tuple[str, Kind | None]] = [(m, None) for m in change.members]
                added = [p.id for p in self.reachable(caller, wanted)]
                changed = current.joined(added, change.share_history, to_ms(self.clock.now()))
            elif operation == "remove":
                changed = current.without(change.members)
            else:
                changed = current.left_by(caller.principal_id, change.next_manager)
            result = present(changed)
            uow.commit(self.store.save_conversation(changed), result=result)
            return result

        return retry_on_conflict(attempt, "the chat")

    # -- reading -----------------------------------------------------------------------------------
    def history(
        self, caller: Caller, conversation_id: str, after: int
    ) -> tuple[Conversation, list[Message], int | None]:
        """The conversation, the next page of the messages the caller may read, numbered after
        ``after``, oldest first, and the number to continue after (None at the end)."""
        conversation, participant = self.readable(caller, conversation_id)
        start = max(after, participant.sees_from - 1)
        found = self.store.list_messages(
            caller.namespace, conversation_id, start, MESSAGES_PAGE + 1
        )
        page: list[Message] = []
        size = 0
        for message in found[:MESSAGES_PAGE]:
            size += len(message.body.encode())
            if page and size > PAGE_BYTES:
                break
            page.append(message)
        return conversation, page, page[-1].seq if len(page) < len(found) else None


def envelope_of(message: Message, recipient: str) -> Envelope:
    """The envelope of ``message`` for ``recipient``: the same every time it is built, its id
    derived from both, so a retry's copy is the same envelope."""
    return Envelope(
        id=envelope_id_for(
            f"{message.namespace}/{message.conversation_id}/{message.id}/{recipient}"
        ),
        namespace=message.namespace,
        address=agent_address(recipient),
        sender=message.sender,
        kind="message" if message.request_id is None else "request",
        payload={
            "conversation_id": message.conversation_id,
            "message_id": message.id,
            "body": message.body,
            "mentions": [m.model_dump(mode="json") for m in message.mentions],
            "attachments": [a.model_dump(mode="json") for a in message.attachments],
            **({} if message.request_id is None else {"request_id": message.request_id}),
        },
        sent_at=message.sent_at,
    )
