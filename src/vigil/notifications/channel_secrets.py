"""What a channel keeps sealed, sealed and opened: a webhook's signing secrets and a Slack
webhook's URL; and the signing secret of an agent's webhook subscription, the same way under a
key of its own, bound to its namespace, principal and subscription.

Each is sealed under the deployment's service key (``Keys.for_purpose("channel-secrets")``),
bound to its namespace, channel and part (``seal_context``), so a copy of the table reveals
neither and a sealed part moved to another channel does not open. The operators' tools seal
them; the sending of a notification opens them.
"""

from __future__ import annotations

from datetime import datetime

from vigil.kit.keys import Keys
from vigil.kit.sealing import Sealed, seal, unseal
from vigil.notifications.feeds import Subscription
from vigil.notifications.records import Channel, seal_context

# The purpose the sealing key is derived for: no other part of Vigil uses this key.
SEALING_PURPOSE = "channel-secrets"
SUBSCRIPTION_PURPOSE = "subscription-secrets"


def _sealing_key(keys: Keys) -> str:
    return keys.for_purpose(SEALING_PURPOSE).hex()


def seal_part(keys: Keys, namespace: str, channel_id: str, what: str, text: str) -> Sealed:
    """``text``, the channel's part ``what`` ("secret", "url" or "key"), sealed for that
    channel."""
    return seal(_sealing_key(keys), text, seal_context(namespace, channel_id, what))


def _open(keys: Keys, channel: Channel, what: str, sealed: Sealed) -> str:
    text = unseal(_sealing_key(keys), sealed, seal_context(channel.namespace, channel.id, what))
    if text is None:
        # The service key is not the one it was sealed under, or the record was tampered with.
        raise RuntimeError(f"channel {channel.id}: its sealed {what} does not open")
    return text


def open_secrets(channel: Channel, keys: Keys, now: datetime) -> list[str]:
    """The signing secrets of ``channel`` that sign at ``now``, opened, newest first: the
    current one, and those a rotation replaced while their overlap lasts."""
    return [_open(keys, channel, "secret", s.sealed) for s in channel.signing(now)]


def open_target(channel: Channel, keys: Keys) -> str:
    """Where ``channel``'s deliveries go: the webhook's URL; a Slack, Teams or Discord
    webhook's URL (opened); the email address; PagerDuty's host for the account's region."""
    if channel.sealed_target is not None and channel.kind != "pagerduty":
        return _open(keys, channel, "url", channel.sealed_target)
    return channel.target


def open_key(channel: Channel, keys: Keys) -> str:
    """A PagerDuty channel's routing key (its integration's), opened."""
    assert channel.sealed_target is not None
    return _open(keys, channel, "key", channel.sealed_target)


def _subscription_context(namespace: str, principal: str, subscription_id: str) -> str:
    return f"subscription/{namespace}/{principal}/{subscription_id}"


def seal_subscription_secret(
    keys: Keys, namespace: str, principal: str, subscription_id: str, secret: str
) -> Sealed:
    key = keys.for_purpose(SUBSCRIPTION_PURPOSE).hex()
    return seal(key, secret, _subscription_context(namespace, principal, subscription_id))


def open_subscription_secret(keys: Keys, subscription: Subscription) -> str:
    """The secret the host gave ``subscription``, opened to sign with."""
    key = keys.for_purpose(SUBSCRIPTION_PURPOSE).hex()
    s = subscription
    context = _subscription_context(s.namespace, s.principal, s.id)
    secret = unseal(key, subscription.sealed_secret, context)
    if secret is None:
        raise RuntimeError(f"subscription {subscription.id}: its sealed secret does not open")
    return secret
