"""Conversations: who takes part and since when, and the messages, each an item of its own.

A conversation is direct (two participants, for good) or a shared chat (a manager, a title and
up to ``MAX_PARTICIPANTS`` participants). Its messages are numbered 1, 2, 3… A number is taken
and its message stored in one atomic step, conditional on the conversation's last number and
its version, so whenever a conversation shows ``last_seq`` = n its messages 1..n are stored, and
no message lands after a membership change it did not see. Sending moves only ``last_seq``;
membership changes move the version, so a send never makes a membership change stale.

Each participant sees the messages numbered from its ``sees_from``: 1 for those there from the
start or added with the history shared, the next number at the moment of joining otherwise.
Whoever is removed or leaves is no participant any more and sees nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from vigil.errors import ErrorCode, VigilError, invalid
from vigil.kit.principals import kind_of, new_id, numbered_id
from vigil.kit.records import Record, Versioned

ConversationKind = Literal["direct", "chat"]

# A body's limit, in bytes of UTF-8: escaped as JSON (six bytes for a control character at
# worst) it stays far within a 400 KB item and a 256 KiB SQS message.
MAX_BODY_BYTES = 32 * 1024
# Who may be in a chat at once: the 100 targets a chat starts with, and whoever starts it.
MAX_PARTICIPANTS = 101
MAX_MENTIONS = 20
MAX_TITLE = 200


class Mention(Record):
    """A span of a body, in Unicode code points, that names a participant: addressing only."""

    start: int
    end: int
    principal_id: str


class Participant(Record):
    principal_id: str
    joined_at: datetime
    sees_from: int  # the number of the first message this participant may read


class AttachedFile(Record):
    """A file a message carries, as its readers see it: the bytes are fetched by id."""

    id: str
    file_name: str
    media_type: str
    size: int
    sha256: str


class Message(Record):
    namespace: str
    conversation_id: str
    seq: int
    id: str
    sender: str  # the principal that sent it, as authenticated
    body: str
    mentions: list[Mention]
    sent_at: datetime
    recipients: list[str]  # the agents owed an envelope in their mailbox, in order
    attachments: list[AttachedFile] = []
    delivered: int = 0  # how many of ``recipients``, in order, have been queued their envelope
    request_id: str | None = None  # the request this message asks, delivered as one

    def owed(self) -> list[str]:
        return self.recipients[self.delivered :]


def new_message_id(seq: int) -> str:
    """An id that names its number in the conversation, so finding it is one keyed read."""
    return numbered_id("msg", seq)


class Conversation(Versioned):
    namespace: str
    id: str
    kind: ConversationKind
    title: str | None
    manager: str | None  # a chat's; a direct conversation has none
    participants: list[Participant]
    created_by: str
    created_at: datetime
    last_seq: int  # the number of the newest message; sending moves only this

    @classmethod
    def started(
        cls,
        namespace: str,
        kind: ConversationKind,
        creator: str,
        others: list[str],
        title: str | None,
        now: datetime,
    ) -> Conversation:
        everyone = [creator, *others]
        if len(set(everyone)) != len(everyone):
            raise invalid("name each participant once")
        if len(everyone) > MAX_PARTICIPANTS:
            raise _crowded()
        return cls(
            namespace=namespace,
            id=new_id("cnv"),
            kind=kind,
            title=title,
            manager=creator if kind == "chat" else None,
            participants=[
                Participant(principal_id=p, joined_at=now, sees_from=1) for p in everyone
            ],
            created_by=creator,
            created_at=now,
            last_seq=0,
            version=1,
        )

    def participant(self, principal_id: str) -> Participant | None:
        for participant in self.participants:
            if participant.principal_id == principal_id:
                return participant
        return None

    @property
    def principal_ids(self) -> list[str]:
        return [p.principal_id for p in self.participants]

    # -- messages ---------------------------------------------------------------------------
    def posted(
        self, sender: str, body: str, mentions: list[Mention], now: datetime
    ) -> tuple[Conversation, Message]:
        """The next message, from ``sender``, and the conversation that numbers it. Every
        agent participant but the sender is owed an envelope of it."""
        members = set(self.principal_ids)
        strangers = sorted({m.principal_id for m in mentions} - members)
        if strangers:
            raise invalid("mentions name only participants of the conversation", ids=strangers)
        seq = self.last_seq + 1
        message = Message(
            namespace=self.namespace,
            conversation_id=self.id,
            seq=seq,
            id=new_message_id(seq),
            sender=sender,
            body=body,
            mentions=mentions,
            sent_at=now,
            recipients=[p for p in self.principal_ids if p != sender and kind_of(p) == "agent"],
        )
        return self.model_copy(update={"last_seq": seq}), message

    # -- membership of a chat ----------------------------------------------------------------
    def renamed(self, title: str | None) -> Conversation:
        """The chat under ``title``, or with none: the seed's rename needs no title."""
        return self.changed(title=title)

    def joined(self, principal_ids: list[str], share_history: bool, now: datetime) -> Conversation:
        """``principal_ids`` added: they see the history if it is shared, else from the next
        message on."""
        present = sorted(set(principal_ids) & set(self.principal_ids))
        if present:
            raise invalid("these are participants already", ids=present)
        if len(set(principal_ids)) != len(principal_ids):
            raise invalid("name each member once")
        if len(self.participants) + len(principal_ids) > MAX_PARTICIPANTS:
            raise _crowded()
        sees_from = 1 if share_history else self.last_seq + 1
        added = [
            Participant(principal_id=p, joined_at=now, sees_from=sees_from) for p in principal_ids
        ]
        return self.changed(participants=[*self.participants, *added])

    def without(self, principal_ids: list[str]) -> Conversation:
        """``principal_ids`` removed by the manager, who leaves rather than removes itself."""
        absent = sorted(set(principal_ids) - set(self.principal_ids))
        if absent:
            raise invalid("these are not participants", ids=absent)
        if self.manager in principal_ids:
            raise invalid("the manager leaves the chat (operation leave), naming next_manager")
        gone = set(principal_ids)
        return self.changed(
            participants=[p for p in self.participants if p.principal_id not in gone]
        )

    def left_by(self, principal_id: str, next_manager: str | None) -> Conversation:
        """``principal_id`` leaves. A leaving manager hands the chat to ``next_manager``, a
        participant who stays; the last participant leaves it to nobody."""
        staying = [p for p in self.participants if p.principal_id != principal_id]
        manager = self.manager
        if principal_id == self.manager:
            if staying and next_manager is None:
                raise invalid("the manager leaving must name next_manager, a participant")
            if next_manager is not None and next_manager not in {p.principal_id for p in staying}:
                raise invalid("next_manager must be a participant who stays")
            manager = next_manager
        elif next_manager is not None:
            raise invalid("only the manager names a next_manager, when it leaves")
        return self.changed(participants=staying, manager=manager)


def _crowded() -> VigilError:
    return VigilError(
        ErrorCode.LIMIT_EXCEEDED,
        f"a chat holds at most {MAX_PARTICIPANTS} participants",
        limit=MAX_PARTICIPANTS,
    )
