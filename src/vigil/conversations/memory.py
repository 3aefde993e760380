"""Conversations and their messages in memory."""

from __future__ import annotations

from vigil.attachments.store import Membership
from vigil.conversations.records import Conversation, Message
from vigil.conversations.store import ConversationStore
from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed

_Key = tuple[str, str]


def _pair(namespace: str, one: str, other: str) -> tuple[str, str, str]:
    first, second = sorted((one, other))
    return namespace, first, second


class MemoryConversations(MemoryBase, ConversationStore):
    def __init__(self) -> None:
        self.conversations: dict[_Key, Conversation] = {}
        self.messages: dict[_Key, dict[int, Message]] = {}
        self.directs: dict[tuple[str, str, str], str] = {}
        super().__init__()

    def get_conversation(self, namespace: str, conversation_id: str) -> Conversation | None:
        with self._lock:
            found = self.conversations.get((namespace, conversation_id))
            return found.model_copy(deep=True) if found else None

    def get_direct(self, namespace: str, one: str, other: str) -> str | None:
        with self._lock:
            return self.directs.get(_pair(namespace, one, other))

    def start_conversation(
        self, conversation: Conversation, first: Message, reused: bool = False
    ) -> MemoryWrite:
        key = (conversation.namespace, conversation.id)
        pair = _pair(conversation.namespace, *conversation.principal_ids) if reused else None

        def check() -> None:
            if key in self.conversations or (pair is not None and pair in self.directs):
                raise ConditionFailed(conversation.id)

        def apply() -> None:
            self.conversations[key] = conversation.model_copy(deep=True)
            self.messages[key] = {first.seq: first.model_copy(deep=True)}
            if pair is not None:
                self.directs[pair] = conversation.id

        sizes = [item_bytes(key, conversation), item_bytes(key, first)]
        if pair is not None:
            sizes.append(item_bytes(pair))
        return MemoryWrite(check, apply, tuple(sizes))

    def add_message(self, conversation: Conversation, message: Message) -> MemoryWrite:
        key = (conversation.namespace, conversation.id)

        def check() -> None:
            current = self.conversations.get(key)
            if (
                current is None
                or current.version != conversation.version
                or current.last_seq != message.seq - 1
            ):
                raise ConditionFailed(conversation.id)

        def apply() -> None:
            current = self.conversations[key]
            self.conversations[key] = current.model_copy(update={"last_seq": message.seq})
            self.messages.setdefault(key, {})[message.seq] = message.model_copy(deep=True)

        return MemoryWrite(check, apply, (item_bytes(key), item_bytes(key, message)))

    def save_conversation(self, conversation: Conversation) -> MemoryWrite:
        key = (conversation.namespace, conversation.id)

        def check() -> None:
            current = self.conversations.get(key)
            if (
                current is None
                or current.version != conversation.version - 1
                or current.last_seq != conversation.last_seq
            ):
                raise ConditionFailed(conversation.id)

        def apply() -> None:
            self.conversations[key] = conversation.model_copy(deep=True)

        return MemoryWrite(check, apply, (item_bytes(key, conversation),))

    def require_membership(self, membership: Membership) -> MemoryWrite:
        key = (membership.namespace, membership.conversation_id)

        def check() -> None:
            current = self.conversations.get(key)
            if current is None or current.version != membership.version:
                raise ConditionFailed(membership.conversation_id)

        return MemoryWrite(check, lambda: None, (item_bytes(key),))

    def get_message(self, namespace: str, conversation_id: str, seq: int) -> Message | None:
        with self._lock:
            found = self.messages.get((namespace, conversation_id), {}).get(seq)
            return found.model_copy(deep=True) if found else None

    def list_messages(
        self, namespace: str, conversation_id: str, after: int, limit: int
    ) -> list[Message]:
        with self._lock:
            stored = self.messages.get((namespace, conversation_id), {})
            numbers = sorted(seq for seq in stored if seq > after)[:limit]
            return [stored[seq].model_copy(deep=True) for seq in numbers]

    def mark_delivered(self, message: Message, count: int) -> None:
        with self._lock:
            stored = self.messages.get((message.namespace, message.conversation_id), {})
            current = stored.get(message.seq)
            if current is None or current.id != message.id or current.delivered >= count:
                raise ConditionFailed(message.id)
            stored[message.seq] = current.model_copy(update={"delivered": count})
