"""Where a namespace's channels are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.kit.uow import Write
from vigil.notifications.records import Channel


class ChannelStore(ABC):
    @abstractmethod
    def get_channel(self, namespace: str, channel_id: str) -> Channel | None:
        """The channel, read consistently; None if ``namespace`` has no channel of that id."""

    @abstractmethod
    def list_channels(self, namespace: str) -> list[Channel]:
        """Every channel of ``namespace`` (a quota keeps them few), in id order, read
        consistently."""

    @abstractmethod
    def add_channel(self, channel: Channel) -> Write:
        """Creates the channel; fails if its id is taken."""

    @abstractmethod
    def save_channel(self, channel: Channel) -> Write:
        """Replaces the channel if the stored version is ``channel.version - 1``."""

    @abstractmethod
    def delete_channel(self, channel: Channel) -> Write:
        """Deletes the channel if the stored version is ``channel.version``: a delete decided on
        one version does not take away a channel changed since."""
