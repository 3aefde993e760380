"""Channels in memory."""

from __future__ import annotations

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed
from vigil.notifications.feeds import Feed, FeedEntry
from vigil.notifications.records import (
    AccountLink,
    AccountSurface,
    Acknowledgement,
    Channel,
    ChannelDelivery,
    DeliveryFailure,
    Notification,
    SlackResponse,
)
from vigil.notifications.store import ChannelStore, FeedStore


class MemoryChannels(MemoryBase, ChannelStore, FeedStore):
    def __init__(self) -> None:
        self.channels: dict[tuple[str, str], Channel] = {}
        self.feeds: dict[tuple[str, str], Feed] = {}
        self.feed_slots: dict[tuple[str, str, int], FeedEntry] = {}
        self.notifications: dict[tuple[str, str], Notification] = {}
        self.failures: dict[tuple[str, str, str], DeliveryFailure] = {}
        self.accounts: dict[tuple[str, str, str], AccountLink] = {}
        self.slack_responses: dict[tuple[str, str], SlackResponse] = {}
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

    # -- notifications --------------------------------------------------------------------------
    def add_notification(self, notification: Notification) -> MemoryWrite:
        key = (notification.namespace, notification.event_id)

        def check() -> None:
            if key in self.notifications:
                raise ConditionFailed(str(key))

        def apply() -> None:
            self.notifications[key] = notification.model_copy(deep=True)

        return MemoryWrite(check, apply, (item_bytes(key, notification),))

    def get_notification(self, namespace: str, event_id: str) -> Notification | None:
        with self._lock:
            found = self.notifications.get((namespace, event_id))
            return found.model_copy(deep=True) if found else None

    def save_channel_delivery(
        self, namespace: str, event_id: str, delivery: ChannelDelivery, expected: ChannelDelivery
    ) -> MemoryWrite:
        key = (namespace, event_id)

        def check() -> None:
            current = self.notifications.get(key)
            stored = current.deliveries.get(delivery.channel_id) if current else None
            if (
                stored is None
                or stored.attempt != expected.attempt
                or stored.state != expected.state
            ):
                raise ConditionFailed(f"{key} {delivery.channel_id}")

        def apply() -> None:
            self.notifications[key].deliveries[delivery.channel_id] = delivery.model_copy(deep=True)

        return MemoryWrite(check, apply, (self._size_after(key, delivery=delivery),))

    def acknowledge(
        self, namespace: str, event_id: str, acknowledgement: Acknowledgement
    ) -> MemoryWrite:
        key = (namespace, event_id)

        def check() -> None:
            current = self.notifications.get(key)
            if current is None or current.acknowledged is not None:
                raise ConditionFailed(str(key))

        def apply() -> None:
            self.notifications[key].acknowledged = acknowledgement.model_copy()

        return MemoryWrite(check, apply, (self._size_after(key, acknowledged=acknowledgement),))

    def _size_after(
        self,
        key: tuple[str, str],
        delivery: ChannelDelivery | None = None,
        acknowledged: Acknowledgement | None = None,
    ) -> int:
        """The notification's item as an update leaves it: DynamoDB refuses it over 400 KB."""
        with self._lock:
            current = self.notifications.get(key)
            if current is None:
                return item_bytes(key)
            after = current.model_copy(deep=True)
        if delivery is not None:
            after.deliveries[delivery.channel_id] = delivery
        if acknowledged is not None:
            after.acknowledged = acknowledged
        return item_bytes(key, after)

    def add_failure(self, failure: DeliveryFailure) -> MemoryWrite:
        key = (failure.namespace, failure.channel_id, failure.position)

        def check() -> None:
            if key in self.failures:
                raise ConditionFailed(str(key))

        def apply() -> None:
            self.failures[key] = failure.model_copy()

        return MemoryWrite(check, apply, (item_bytes(key, failure),))

    def remove_failure(self, failure: DeliveryFailure) -> MemoryWrite:
        key = (failure.namespace, failure.channel_id, failure.position)

        def check() -> None:
            if key not in self.failures:
                raise ConditionFailed(str(key))

        def apply() -> None:
            del self.failures[key]

        return MemoryWrite(check, apply, (item_bytes(key),))

    def list_failures(
        self, namespace: str, channel_id: str, before: str | None, limit: int
    ) -> list[DeliveryFailure]:
        with self._lock:
            found = [
                f
                for (ns, cid, position), f in self.failures.items()
                if ns == namespace and cid == channel_id and (before is None or position < before)
            ]
        found.sort(key=lambda f: f.position, reverse=True)
        return [f.model_copy() for f in found[:limit]]

    # -- feeds ------------------------------------------------------------------------------------
    def get_feed(self, namespace: str, principal: str) -> Feed | None:
        with self._lock:
            found = self.feeds.get((namespace, principal))
            return found.model_copy(deep=True) if found else None

    def save_feed(self, feed: Feed) -> MemoryWrite:
        key = (feed.namespace, feed.principal)
        expected = feed.version - 1 if feed.version > 1 else None
        return self._versioned(self.feeds, key, feed, expected, deep=True)

    def put_feed_entry(self, feed: Feed, entry: FeedEntry) -> MemoryWrite:
        key = (feed.namespace, feed.principal, feed.slot(entry.seq))

        def apply() -> None:
            self.feed_slots[key] = entry.model_copy(deep=True)

        return MemoryWrite(lambda: None, apply, (item_bytes(key, entry),))

    def get_feed_entries(self, feed: Feed, seqs: list[int]) -> list[FeedEntry]:
        with self._lock:
            found = [
                self.feed_slots.get((feed.namespace, feed.principal, feed.slot(seq)))
                for seq in seqs
            ]
        return [entry.model_copy(deep=True) for entry in found if entry is not None]

    # -- accounts and Slack's responses --------------------------------------------------------
    def link_account(self, link: AccountLink) -> MemoryWrite:
        key = (link.namespace, link.surface, link.account)

        def check() -> None:
            if key in self.accounts:
                raise ConditionFailed(link.account)

        def apply() -> None:
            self.accounts[key] = link.model_copy()

        return MemoryWrite(check, apply, (item_bytes(key, link),))

    def linked_account(self, namespace: str, surface: AccountSurface, account: str) -> str | None:
        with self._lock:
            found = self.accounts.get((namespace, surface, account))
            return found.principal_id if found else None

    def unlink_account(
        self, namespace: str, surface: AccountSurface, account: str, principal_id: str
    ) -> MemoryWrite:
        key = (namespace, surface, account)

        def check() -> None:
            found = self.accounts.get(key)
            if found is None or found.principal_id != principal_id:
                raise ConditionFailed(account)

        def apply() -> None:
            del self.accounts[key]

        return MemoryWrite(check, apply, (item_bytes(key),))

    def add_slack_response(self, response: SlackResponse) -> bool:
        key = (response.namespace, response.id)
        with self._lock:
            if key in self.slack_responses:
                return False
            self.slack_responses[key] = response.model_copy(deep=True)
            return True

    def get_slack_response(self, namespace: str, response_id: str) -> SlackResponse | None:
        with self._lock:
            found = self.slack_responses.get((namespace, response_id))
            return found.model_copy(deep=True) if found else None
