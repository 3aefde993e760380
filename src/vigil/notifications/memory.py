"""Channels in memory."""

from __future__ import annotations

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed
from vigil.notifications.records import Channel
from vigil.notifications.store import ChannelStore


class MemoryChannels(MemoryBase, ChannelStore):
    def __init__(self) -> None:
        self.channels: dict[tuple[str, str], Channel] = {}
        super().__init__()

    def get_channel(self, namespace: str, channel_id: str) -> Channel | None:
        with self._lock:
            found = self.channels.get((namespace, channel_id))
            return found.model_copy(deep=True) if found else None

    def list_channels(self, namespace: str) -> list[Channel]:
        with self._lock:
            found = [c for (ns, _), c in self.channels.items() if ns == namespace]
        return [c.model_copy(deep=True) for c in sorted(found, key=lambda c: c.id)]

    def add_channel(self, channel: Channel) -> MemoryWrite:
        key = (channel.namespace, channel.id)
        return self._versioned(self.channels, key, channel, None, deep=True)

    def save_channel(self, channel: Channel) -> MemoryWrite:
        key = (channel.namespace, channel.id)
        return self._versioned(self.channels, key, channel, channel.version - 1, deep=True)

    def delete_channel(self, channel: Channel) -> MemoryWrite:
        key = (channel.namespace, channel.id)

        def check() -> None:
            current = self.channels.get(key)
            if current is None or current.version != channel.version:
                raise ConditionFailed(str(key))

        def apply() -> None:
            del self.channels[key]

        return MemoryWrite(check, apply, (item_bytes(key),))
