"""The notifications' tools, as the catalog finds them: channel administration
(``channel_tools``), a channel's test (``channel_test_tool``), and what became of the
notifications: failures, replays and alerts' acknowledgements (``delivery_tools``)."""

from __future__ import annotations

from vigil.kit.tooling import Tool
from vigil.notifications import channel_test_tool, channel_tools, delivery_tools
from vigil.notifications.context import NotificationContext

TOOLS: tuple[Tool[NotificationContext], ...] = (
    *channel_tools.TOOLS,
    *channel_test_tool.TOOLS,
    *delivery_tools.TOOLS,
)
