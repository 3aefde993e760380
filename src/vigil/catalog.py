"""The tool catalog: every capability's ``TOOLS``, gathered here and only here.

MCP ``tools/list``, the REST routes and the OpenAPI document are all generated from ``tools()``;
each tool is declared (name, description, models, who may call it) beside its code. A call finds
its tool with ``tool(name)``, which imports the module that declares it the first time: a cold
start defines the models of the tools it serves, not those of every tool. ``DECLARED_IN`` names
that module for each tool; tests/unit/test_layout.py checks it against the modules themselves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from vigil.kit.tooling import Tool

if TYPE_CHECKING:
    from vigil.attachments import tools as attachments
    from vigil.audit import tools as audit
    from vigil.context import Context
    from vigil.conversations import tools as conversations
    from vigil.identity import tools as identity
    from vigil.leases import tools as leases
    from vigil.mailboxes import tools as mailboxes
    from vigil.notifications import tools as notifications
    from vigil.progress import tools as progress
    from vigil.requests import tools as requests
    from vigil.runs import tools as runs
    from vigil.sessions import tools as sessions
    from vigil.switches import pause_tools as switch_pauses
    from vigil.switches import tools as switches
    from vigil.switches import watch_tools as switch_watches

    # Checked, not run: the app's context gives each capability's tools what they read.
    _EVERY: tuple[Tool[Context], ...] = (
        *attachments.TOOLS,
        *audit.TOOLS,
        *conversations.TOOLS,
        *identity.TOOLS,
        *leases.TOOLS,
        *mailboxes.TOOLS,
        *notifications.TOOLS,
        *progress.TOOLS,
        *requests.TOOLS,
        *runs.TOOLS,
        *sessions.TOOLS,
        *switches.TOOLS,
        *switch_watches.TOOLS,
        *switch_pauses.TOOLS,
    )

# Each tool module and the tools it declares, in the catalog's order: the families as the
# README lists them, each tool beside the ones it works with.
_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "vigil.identity.tools",
        (
            "register",
            "rotate_secret",
            "revoke_principal",
            "whoami",
            "list_agents",
            "list_directory",
        ),
    ),
    ("vigil.switches.tools", ("heartbeat", "resume_packet")),
    ("vigil.leases.tools", ("acquire_lease", "renew_lease", "release_lease")),
    (
        "vigil.sessions.tools",
        (
            "session_heartbeat",
            "end_session",
            "post_instruction",
            "list_instructions",
            "list_sessions",
        ),
    ),
    (
        "vigil.runs.tools",
        ("start_run", "claim_run", "create_run_heartbeat", "finish_run", "get_run"),
    ),
    ("vigil.progress.tools", ("report_progress", "get_progress")),
    (
        "vigil.mailboxes.tools",
        (
            "create_mailbox",
            "inbox_poll",
            "receive",
            "acknowledge",
            "list_dead_letters",
            "get_usage",
        ),
    ),
    ("vigil.conversations.tools", ("send",)),
    # start_chat is the requests': its first message may ask one.
    ("vigil.requests.tools", ("start_chat",)),
    ("vigil.conversations.tools", ("change_chat_membership", "get_conversation")),
    (
        "vigil.requests.tools",
        (
            "ask",
            "get_request",
            "reply",
            "request_status",
            "set_blocking",
            "replace_request",
            "redeem_approval",
            "report_execution",
        ),
    ),
    (
        "vigil.attachments.tools",
        (
            "stage_attachment",
            "begin_attachment_upload",
            "finish_attachment_upload",
            "upload_attachment",
            "list_attachments",
            "download_attachment",
        ),
    ),
    ("vigil.audit.tools", ("list_audit_events",)),
    (
        "vigil.notifications.tools",
        (
            "create_channel",
            "list_channels",
            "rotate_channel_secret",
            "set_channel_state",
            "delete_channel",
            "test_channel",
            "list_delivery_failures",
            "replay_delivery",
            "acknowledge_alert",
        ),
    ),
    ("vigil.switches.watch_tools", ("list_switches", "list_deaths")),
    ("vigil.switches.pause_tools", ("pause_switches", "resume_switches", "list_pauses")),
)

# Every tool's name and the module that declares it.
DECLARED_IN: dict[str, str] = {name: module for module, names in _ORDER for name in names}

_loaded: dict[str, Tool[Context]] = {}


class UnknownTool(Exception):
    """The transport reports this as a protocol error, not as a tool result."""


def tool(name: str) -> Tool[Context]:
    """The tool called ``name``."""
    module = DECLARED_IN.get(name)
    if module is None:
        raise UnknownTool(name)
    if name not in _loaded:
        _loaded.update((each.name, each) for each in importlib.import_module(module).TOOLS)
    return _loaded[name]


def tools() -> tuple[Tool[Context], ...]:
    """Every tool, in the catalog's order (this imports every tool module)."""
    return tuple(tool(name) for name in DECLARED_IN)
