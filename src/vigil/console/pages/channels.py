"""The namespace's notification channels, for operators."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from vigil.console.components import badge, relative, shown, table
from vigil.console.frame import REFRESH_LISTINGS_MS
from vigil.console.html import Html, render
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse

CHANNEL_HEADERS = ("Name", "Kind", "Sends to", "Events", "State", "Changed", "Version")


def channels(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """Where each channel sends, which events and whether it is enabled; never a secret, and a
    Slack webhook only by its host."""
    now = responder.now()
    found = responder.call(visit, "list_channels")
    live = shown(
        found,
        lambda page: table(
            "Notification channels",
            CHANNEL_HEADERS,
            channel_rows(page["channels"], now),
            "No channel yet: an operator creates one with the create_channel tool.",
        ),
    )
    return responder.live_page(
        request, "Channels", f"{PREFIX}/channels", live, Html(""), visit, REFRESH_LISTINGS_MS
    )


def channel_rows(channels: Iterable[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            c["name"],
            c["kind"],
            c["target"],
            _rules(c["rules"]),
            render("{state} {why}", state=badge(c["state"]), why=c["disabled_reason"] or ""),
            relative(c["updated_at"], now),
            c["version"],
        ]
        for c in channels
    ]


def _rules(rules: Iterable[Mapping[str, Any]]) -> str:
    return "; ".join(
        ", ".join(r["events"]) + (f" under {r['scope_prefix']}" if r["scope_prefix"] else "")
        for r in rules
    )
