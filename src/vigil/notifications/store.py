"""Where a namespace's channels are kept, and the notifications on their way to them."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.audit.store import AuditStore
from vigil.identity.store import IdentityStore
from vigil.kit.uow import Committer, Write
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
from vigil.quotas.store import QuotaStore
from vigil.requests.store import RequestStore
from vigil.switches.store import SwitchStore


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

    # -- notifications --------------------------------------------------------------------------
    @abstractmethod
    def add_notification(self, notification: Notification) -> Write:
        """Creates the notification; fails if one of its event id exists."""

    @abstractmethod
    def get_notification(self, namespace: str, event_id: str) -> Notification | None:
        """The notification, read consistently; None if there is none of that id."""

    @abstractmethod
    def save_channel_delivery(
        self, namespace: str, event_id: str, delivery: ChannelDelivery, expected: ChannelDelivery
    ) -> Write:
        """Replaces the notification's delivery to ``delivery.channel_id`` if it is still at
        ``expected``'s attempt and state: the claim of an attempt, and the record of its
        outcome, are each made by one run only."""

    @abstractmethod
    def acknowledge(self, namespace: str, event_id: str, acknowledgement: Acknowledgement) -> Write:
        """Records who acknowledged the alert, if the notification exists and nobody did."""

    @abstractmethod
    def add_failure(self, failure: DeliveryFailure) -> Write:
        """Records a delivery that gave up, in its channel's failures."""

    @abstractmethod
    def remove_failure(self, failure: DeliveryFailure) -> Write:
        """Takes a failure off its channel's list; fails if it is not there."""

    @abstractmethod
    def list_failures(
        self, namespace: str, channel_id: str, before: str | None, limit: int
    ) -> list[DeliveryFailure]:
        """Up to ``limit`` of the channel's failures, newest first, those that sort before
        position ``before`` if given."""

    # -- accounts and Slack's responses --------------------------------------------------------
    # Each is one write of its own, made at once: a link is bound from a console page and a
    # response is owed by an interaction, neither a tool call with a unit of work to join.
    @abstractmethod
    def link_account(self, link: AccountLink) -> Write:
        """Links the account to ``link.principal_id``; fails (ConditionFailed) if it is linked
        already: whoever linked it first keeps it."""

    @abstractmethod
    def linked_account(self, namespace: str, surface: AccountSurface, account: str) -> str | None:
        """The principal the account is linked to, if any."""

    @abstractmethod
    def unlink_account(
        self, namespace: str, surface: AccountSurface, account: str, principal_id: str
    ) -> Write:
        """Ends the account's link; fails (ConditionFailed) unless it is linked to
        ``principal_id`` (an operator unlinks what they were shown)."""

    @abstractmethod
    def add_slack_response(self, response: SlackResponse) -> bool:
        """Keeps ``response`` while its response_url works (then it is deleted, TTL), so that a
        replayed interaction finds it; False, changing nothing, if its id is taken."""

    @abstractmethod
    def get_slack_response(self, namespace: str, response_id: str) -> SlackResponse | None: ...


class FeedStore(ABC):
    """Where a principal's own events wait to be read (``feeds``)."""

    @abstractmethod
    def get_feed(self, namespace: str, principal: str) -> Feed | None:
        """The principal's feed, read consistently; None if nobody ever listened."""

    @abstractmethod
    def save_feed(self, feed: Feed) -> Write:
        """Stores the feed if the stored version is ``feed.version - 1`` (none stored for 1)."""

    @abstractmethod
    def put_feed_entry(self, feed: Feed, entry: FeedEntry) -> Write:
        """Writes ``entry`` into its slot of ``feed``'s ring, over what the slot held."""

    @abstractmethod
    def get_feed_entries(self, feed: Feed, seqs: list[int]) -> list[FeedEntry]:
        """What the slots of ``seqs`` (at most 100) hold now, in the order of ``seqs``; a slot
        never written is left out, and one overwritten since holds another number."""


class ChannelPorts(Committer, AuditStore, ChannelStore, QuotaStore, ABC):
    """What an operator's channel tools read and write: channels, counted in the namespace's
    quota, alerts' acknowledgements and deliveries' failures, audited."""


class OutboxPorts(ChannelStore, FeedStore, ABC):
    """What the outbox reads and writes down: who listens (channels, feeds) and the events."""


class DelivererPorts(Committer, AuditStore, OutboxPorts, RequestStore, SwitchStore, ABC):
    """What the deliverer reads and writes: the notifications and their channels or
    subscriptions, a channel disabled (audited), and whether what an alert tells of still
    waits for a person (its request, its switch)."""


class FeedPorts(Committer, FeedStore, ABC):
    """What polling and subscribing read and write: the caller's feed."""


class AccountPorts(Committer, AuditStore, ChannelStore, ABC):
    """What linking an account writes: the link and its audit event, in one commit."""


class SlackResponsePorts(ChannelStore, IdentityStore, RequestStore, ABC):
    """What answering a Slack interaction reads: what it owes, the request as it stands, and
    the name of who decided it."""
