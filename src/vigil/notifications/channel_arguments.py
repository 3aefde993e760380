"""The arguments an operator describes a channel with: its name, its target (a webhook's or
Slack's URL, an email address), its rules, and the id and version that name one."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, model_validator

from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.principals import id_pattern
from vigil.kit.tooling import StrictInput
from vigil.notifications.records import EVENT_TYPES, EventType, Rule
from vigil.switches.tools import ScopePrefix

MAX_URL = 2000
MAX_EMAIL = 254  # RFC 5321's limit on a path, so on an address
MAX_LOCAL_PART = 64
SLACK_PREFIX = "https://hooks.slack.com/"
# Where each receiver's webhooks are: a Teams Workflows URL (Power Automate's current hosts, or
# Logic Apps' older ones), a Discord webhook's, PagerDuty's Events API host for each region.
TEAMS_HOST_SUFFIXES = (".powerplatform.com", ".logic.azure.com")
DISCORD_HOSTS = frozenset(
    {"discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"}
)
DISCORD_PATH = r"^/api/(?:v[0-9]+/)?webhooks/[0-9]+/[A-Za-z0-9_-]+$"
PAGERDUTY_HOSTS = frozenset({"events.pagerduty.com", "events.eu.pagerduty.com"})

# A host name: dot-separated labels of letters, digits and inner hyphens (an international
# name in its xn-- form).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
URL_PATTERN = rf"^https?://{_LABEL}(?:\.{_LABEL})*(?::[0-9]{{1,5}})?(?:[/?#][!-~]*)?$"
EMAIL_PATTERN = (
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    rf"@(?:{_LABEL}\.)+[A-Za-z]{{2,63}}$"
)


def _port_in_range(url: str) -> str:
    try:
        port = urlsplit(url).port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("the url's port must be 1-65535")
    return url


def _local_part_fits(address: str) -> str:
    if len(address.rsplit("@", 1)[0]) > MAX_LOCAL_PART:
        raise ValueError(f"the part before @ is at most {MAX_LOCAL_PART} characters")
    return address


def receiver_problem(kind: str, url: str) -> str | None:
    """Why ``url`` is not a webhook of a ``kind`` receiver (Slack, Teams, Discord, PagerDuty);
    None if it is one, or the kind has no fixed receiver."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    https = parts.scheme == "https"
    match kind:
        case "webhook":
            # A chat or on-call service's URL carries its credential, which only its own kind
            # keeps sealed: not a signed webhook's, kept readable.
            if url.startswith(SLACK_PREFIX) or host.endswith(TEAMS_HOST_SUFFIXES):
                return "that is a Slack or Teams webhook: create it with that kind"
            if host in DISCORD_HOSTS or host in PAGERDUTY_HOSTS:
                return "that is a Discord or PagerDuty URL: create it with that kind"
        case "slack":
            if not url.startswith(SLACK_PREFIX) or url == SLACK_PREFIX:
                return f"a Slack channel's url is an incoming webhook's, {SLACK_PREFIX}…"
        case "teams":
            if not https or not host.endswith(TEAMS_HOST_SUFFIXES) or "sig=" not in parts.query:
                return "a Teams channel's url is a Workflows webhook's, with its sig"
        case "discord":
            if not https or host not in DISCORD_HOSTS or not re.match(DISCORD_PATH, parts.path):
                return "a Discord channel's url is a webhook's, https://discord.com/api/webhooks/…"
        case "pagerduty":
            if not https or host not in PAGERDUTY_HOSTS or parts.path not in ("", "/v2/enqueue"):
                return "a PagerDuty channel's url is its region's Events API host"
    return None


def _each_once(events: list[EventType]) -> list[EventType]:
    if len(set(events)) != len(events):
        raise ValueError("name each event type once")
    return events


Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=PRINTABLE,
        description="What operators call the channel.",
    ),
    normalised(100),
]
ChannelId = Annotated[str, Field(pattern=id_pattern("chn"))]
Version = Annotated[
    int,
    Field(ge=1, description="The channel's version; a stale one conflicts."),
]
Url = Annotated[
    str,
    Field(
        min_length=len("https://x"),
        max_length=MAX_URL,
        pattern=URL_PATTERN,
        description="The webhook's URL (Slack's, Teams Workflows', Discord's); pagerduty: EU host.",
    ),
    AfterValidator(_port_in_range),
]
RoutingKey = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9]{32}$",
        description="pagerduty: an Events API v2 integration's routing key.",
    ),
]
SlackSigningSecret = Annotated[
    str,
    Field(
        pattern=r"^[0-9A-Za-z]{16,128}$",
        description="A Slack app's signing secret: its buttons then decide.",
    ),
]
EmailAddress = Annotated[
    str,
    Field(
        min_length=len("a@b.cc"),
        max_length=MAX_EMAIL,
        pattern=EMAIL_PATTERN,
        description="For an email channel: the address events are mailed to.",
    ),
    AfterValidator(_local_part_fits),
]
Events = Annotated[
    list[EventType],
    Field(
        min_length=1,
        max_length=len(EVENT_TYPES),
        json_schema_extra={"uniqueItems": True},
        description="The event types it takes.",
    ),
    AfterValidator(_each_once),
]


class RuleInput(StrictInput):
    events: Events
    scope_prefix: ScopePrefix | None = Field(
        default=None,
        description="Only events whose scope begins with this.",
    )
    repeat_every_minutes: int | None = Field(
        default=None,
        ge=5,
        le=1440,
        description="Repeat an alert this often until acknowledge_alert.",
    )
    escalate_after_minutes: int | None = Field(
        default=None,
        ge=5,
        le=10080,
        description="Send an alert unacknowledged this long to escalate_to, once.",
    )
    escalate_to: ChannelId | None = Field(
        default=None,
        description="The channel an unacknowledged alert escalates to.",
    )

    @model_validator(mode="after")
    def _escalation_whole(self) -> RuleInput:
        if (self.escalate_after_minutes is None) != (self.escalate_to is None):
            raise ValueError("escalate_after_minutes and escalate_to go together")
        return self

    def rule(self) -> Rule:
        return Rule(
            events=self.events,
            scope_prefix=self.scope_prefix or "",
            repeat_every=_minutes(self.repeat_every_minutes),
            escalate_after=_minutes(self.escalate_after_minutes),
            escalate_to=self.escalate_to,
        )


def _minutes(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(minutes=value)
