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
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Literal, TypeVar

from pydantic import BaseModel

from vigil.attachments.blobs import Blobs
from vigil.attachments.service import claim
from vigil.clock import Clock, to_ms
from vigil.conversations.records import (
    AttachedFile,
    Conversation,
    Mention,
    Message,
    Participant,
)
from vigil.errors import ErrorCode, VigilError, conflict, forbidden, invalid, not_found
from vigil.identity.records import Caller, Principal
from vigil.kit.principals import Kind, new_id, number_in
from vigil.kit.retry import retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import Envelope, agent_address, envelope_id_for
from vigil.mailboxes.service import deliver
from vigil.store import Store

R = TypeVar("R", bound=BaseModel)

Operation = Literal["rename", "add", "remove", "leave"]
# A page of history: at most this many messages, and no more bodies than PAGE_BYTES once one
# is in, so that a page stays small whatever the bodies.
MESSAGES_PAGE = 20
PAGE_BYTES = 128 * 1024
# Envelopes queued between two records of how far delivery got.
DELIVERY_BATCH = 25

Present = Callable[[Conversation, Message, bool], R]
# What a message carries besides itself (the request it asks): given the conversation and the
# message, the message as it is stored and the writes that commit with it.
Also = Callable[[Conversation, Message], tuple[Message, list[Write]]]


class Claims:
    """The drafts one call attaches, and the name of the operation that claims them: stable
    across the call's retries with its idempotency key, new for a call without one."""

    def __init__(self, uow: UnitOfWork, attachment_ids: list[str]) -> None:
        self.attachment_ids = attachment_ids
        self.operation = uow.operation or new_id("op")


class Conversations:
    def __init__(self, store: Store, queues: MailboxQueues, clock: Clock, blobs: Blobs) -> None:
        self.store = store
        self.queues = queues
        self.clock = clock
        self.blobs = blobs

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
    def send(
        self,
        uow: UnitOfWork,
        caller: Caller,
        target: tuple[str, Kind] | None,
        conversation_id: str | None,
        body: str,
        mentions: list[Mention],
        attachment_ids: list[str],
        title: str | None,
        reuse_direct: bool,
        present: Present[R],
        also: Also | None = None,
    ) -> R:
        """A message into the conversation ``conversation_id``, or to ``target`` in a new
        direct conversation; into the pair's reused one when ``reuse_direct`` is set."""
        now = to_ms(self.clock.now())
        files = Claims(uow, attachment_ids)

        def attempt() -> tuple[R, Message]:
            if conversation_id is not None:
                current, _ = self.readable(caller, conversation_id)
                return self._post(uow, current, caller, body, mentions, files, now, present, also)
            assert target is not None
            (other,) = self.reachable(caller, [target])
            reused = (
                self.store.get_direct(caller.namespace, caller.principal_id, other.id)
                if reuse_direct
                else None
            )
            if reused is not None:
                current, _ = self.readable(caller, reused)
                return self._post(uow, current, caller, body, mentions, files, now, present, also)
            started = Conversation.started(
                caller.namespace, "direct", caller.principal_id, [other.id], title, now
            )
            return self._start(
                uow, started, caller, body, mentions, files, now, reuse_direct, present, also
            )

        result, message = retry_on_conflict(attempt, "the conversation")
        self.deliver(message)
        return result

    def start_chat(
        self,
        uow: UnitOfWork,
        caller: Caller,
        targets: list[tuple[str, Kind]],
        body: str,
        mentions: list[Mention],
        attachment_ids: list[str],
        title: str | None,
        present: Present[R],
        also: Also | None = None,
    ) -> R:
        """A shared chat of the caller, its manager, and ``targets``, with its first message."""
        now = to_ms(self.clock.now())
        others = [p.id for p in self.reachable(caller, list(targets))]
        files = Claims(uow, attachment_ids)

        def attempt() -> tuple[R, Message]:
            started = Conversation.started(
                caller.namespace, "chat", caller.principal_id, others, title, now
            )
            return self._start(
                uow, started, caller, body, mentions, files, now, False, present, also
            )

        result, message = retry_on_conflict(attempt, "the chat")
        self.deliver(message)
        return result

    def _start(
        self,
        uow: UnitOfWork,
        conversation: Conversation,
        caller: Caller,
        body: str,
        mentions: list[Mention],
        files: Claims,
        now: datetime,
        reused: bool,
        present: Present[R],
        also: Also | None,
    ) -> tuple[R, Message]:
        numbered, message = conversation.posted(caller.principal_id, body, mentions, now)
        message, claimed = self._attach(caller, message, files, now)
        message, extra = also(numbered, message) if also else (message, [])
        write = self.store.start_conversation(numbered, message, reused)
        return self._commit(uow, [write, *claimed, *extra], numbered, message, True, present)

    def _post(
        self,
        uow: UnitOfWork,
        conversation: Conversation,
        caller: Caller,
        body: str,
        mentions: list[Mention],
        files: Claims,
        now: datetime,
        present: Present[R],
        also: Also | None = None,
    ) -> tuple[R, Message]:
        numbered, message = conversation.posted(caller.principal_id, body, mentions, now)
        message, claimed = self._attach(caller, message, files, now)
        message, extra = also(numbered, message) if also else (message, [])
        write = self.store.add_message(conversation, message)
        return self._commit(uow, [write, *claimed, *extra], numbered, message, False, present)

    def _attach(
        self, caller: Caller, message: Message, files: Claims, now: datetime
    ) -> tuple[Message, list[Write]]:
        """``message`` with the drafts it claims, and the writes of the claims, which commit
        with it: a draft becomes this message's file, or nothing happens to it."""
        if not files.attachment_ids:
            return message, []
        claimed, writes = claim(
            self.store,
            self.blobs,
            caller,
            files.attachment_ids,
            files.operation,
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

    @staticmethod
    def _commit(
        uow: UnitOfWork,
        writes: list[Write],
        conversation: Conversation,
        message: Message,
        created: bool,
        present: Present[R],
    ) -> tuple[R, Message]:
        result = present(conversation, message, created)
        uow.commit(*writes, result=result)
        return result, message

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
        self,
        uow: UnitOfWork,
        caller: Caller,
        conversation_id: str,
        version: int,
        operation: Operation,
        members: list[str],
        title: str | None,
        next_manager: str | None,
        share_history: bool,
        present: Callable[[Conversation], R],
    ) -> R:
        """Renames a chat, adds or removes participants (its manager only), or takes the caller
        out of it, at the chat's current ``version``."""

        def attempt() -> R:
            current, _ = self.readable(caller, conversation_id)
            if current.kind != "chat":
                raise invalid("a direct conversation keeps its two participants; start a chat")
            if current.version != version:
                raise conflict("stale version", current_version=current.version)
            if operation != "leave" and current.manager != caller.principal_id:
                raise forbidden("only the chat's manager may rename it, add or remove members")
            if operation == "rename":
                assert title is not None
                changed = current.renamed(title)
            elif operation == "add":
                added = [p.id for p in self.reachable(caller, [(m, None) for m in members])]
                changed = current.joined(added, share_history, to_ms(self.clock.now()))
            elif operation == "remove":
                changed = current.without(members)
            else:
                changed = current.left_by(caller.principal_id, next_manager)
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
