"""How one message leaves for a channel: a signed webhook, a Slack message, or an email sent
through SES; each attempt's ``SendResult`` says what it came to. The deliverer sends a
notification's attempts through it, and ``test_channel`` its one test event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from vigil.clock import Clock
from vigil.kit.keys import Keys
from vigil.notifications.records import Channel

if TYPE_CHECKING:
    from vigil.notifications.events import Event
    from vigil.notifications.feeds import Subscription
    from vigil.notifications.outbound import SendResult

# Each attempt's limit: connect, TLS, send and answer together.
ATTEMPT_TIMEOUT_SECONDS = 10
# SES errors a later attempt may get past; any other is the message's or the account's.
_SES_TRANSIENT = frozenset(
    {"TooManyRequestsException", "Throttling", "ThrottlingException", "ServiceUnavailable"}
)


Post = Callable[..., "SendResult"]


def _json(body: Any) -> bytes:
    """A message's body as sent: compact JSON, all ASCII (the formats measure their limits
    so)."""
    return json.dumps(body, separators=(",", ":")).encode()


def _with_query(url: str, parameter: str) -> str:
    """``url`` with ``parameter`` added to its query (before any fragment)."""
    parts = urlsplit(url)
    query = f"{parts.query}&{parameter}" if parts.query else parameter
    return urlunsplit(parts._replace(query=query))


def _https_post(*args: Any, **kwargs: Any) -> SendResult:
    """``vigil.notifications.outbound.post``, loaded with the first send."""
    from vigil.notifications.outbound import post

    return post(*args, **kwargs)


@dataclass
class Sender:
    """How one message leaves for a channel: a signed webhook, a Slack message, an email."""

    keys: Keys
    clock: Clock
    # Where the console's pages hang from, for the links in messages; None for no links.
    console_base: str | None = None
    # The local runtime's receivers are on the same machine; deployed, such targets are refused.
    allow_private: bool = False
    email_sender: str | None = None
    ses: Any = None
    post: Post = field(default=_https_post)
    timeout_seconds: float = ATTEMPT_TIMEOUT_SECONDS

    def send(self, channel: Channel, event: Event, recipient: str | None = None) -> SendResult:
        """One attempt to deliver ``event`` to ``channel``; ``recipient`` is the person an email
        channel's address is linked to, if any, whom its decision links are made for."""
        # The formats and the HTTP client are loaded by the first send, not with the module:
        # the API function builds its Sender at init, and few of its calls send.
        from vigil.notifications.channel_secrets import open_key, open_secrets, open_target
        from vigil.notifications.events import console_link
        from vigil.notifications.slack import slack_message
        from vigil.notifications.webhooks import webhook_request

        now = self.clock.now()
        event = event.model_copy(
            update={"console_url": console_link(self.console_base, event.data)}
        )
        if channel.kind == "email":
            return self._email(channel, event, recipient)
        url = open_target(channel, self.keys)
        headers = {"content-type": "application/json"}
        match channel.kind:
            case "webhook":
                body, headers = webhook_request(event, open_secrets(channel, self.keys, now), now)
            case "slack":
                # A Slack channel given its app's signing secret can be answered: its buttons
                # act.
                interactive = bool(channel.secrets)
                body = _json(slack_message(event, self.console_base, interactive=interactive))
            case "pagerduty":
                from vigil.notifications.pagerduty import pagerduty_message

                routing_key = open_key(channel, self.keys)
                message = pagerduty_message(event, routing_key, self.console_base)
                url, body = channel.target + message.path, _json(message.body)
            case "teams":
                from vigil.notifications.teams import teams_message

                body = _json(teams_message(event, self.console_base))
            case "discord":
                from vigil.notifications.discord import discord_message

                # A webhook no app owns sends its link buttons only when the URL asks for them.
                url = _with_query(url, "with_components=true")
                body = _json(discord_message(event, self.console_base))
        result = self.post(
            url,
            body,
            headers,
            timeout_seconds=self.timeout_seconds,
            allow_private=self.allow_private,
            clock=self.clock,
        )
        if channel.kind == "discord" and result.status == 404 and "10015" in result.reason:
            # Discord's answer for a webhook deleted (code 10015, "Unknown Webhook"): gone, as
            # a 410 is. Another 404 (a thread deleted, 10003) is the message's, not the hook's.
            return replace(result, kind="gone")
        return result

    def to_subscriber(self, subscription: Subscription, event_id: str, body: bytes) -> SendResult:
        """One attempt to deliver ``body``, an event of the subscriber's, to its webhook
        ``subscription``, signed with the host's secret, the event's id its webhook-id."""
        from vigil.notifications.channel_secrets import open_subscription_secret
        from vigil.notifications.webhooks import CONTENT_TYPE, SUBSCRIPTION_HEADER, sign

        now = self.clock.now()
        secret = open_subscription_secret(self.keys, subscription)
        headers = {
            "content-type": CONTENT_TYPE,
            SUBSCRIPTION_HEADER: subscription.id,
            **sign([secret], event_id, now, body),
        }
        return self.post(
            subscription.url,
            body,
            headers,
            timeout_seconds=self.timeout_seconds,
            allow_private=self.allow_private,
            clock=self.clock,
        )

    def _email(self, channel: Channel, event: Event, recipient: str | None) -> SendResult:
        from vigil.kit.aws import error_code
        from vigil.notifications.email import send_email
        from vigil.notifications.email_links import email_links
        from vigil.notifications.outbound import SendResult

        if not self.email_sender or self.ses is None:
            return SendResult(
                "rejected", None, "no sender address is set for email (NotificationEmailSender)"
            )
        try:
            extra = email_links(
                self.keys, self.console_base, event, channel.target, recipient, self.clock.now()
            )
            message_id = send_email(
                self.ses, self.email_sender, channel.target, event, self.console_base, extra
            )
        except Exception as error:
            code = error_code(error)
            if code is None:
                raise
            if code in _SES_TRANSIENT:
                return SendResult("retry", None, f"SES refused it for now: {code}")
            return SendResult("rejected", None, f"SES refused it: {code}")
        return SendResult("delivered", None, f"sent by SES as {message_id}")
