"""The tool catalog: every capability's ``TOOLS``, gathered here and only here.

MCP ``tools/list``, the REST routes and the OpenAPI document are all generated from ``tools()``;
each tool is declared (name, description, models, who may call it) beside its code. A call finds
its tool with ``tool(name)``, which imports the module that declares it the first time: a cold
start defines the models of the tools it serves, not those of every tool. ``DECLARED_IN`` names
that module for each tool; tests/unit/test_layout.py checks it against the modules themselves.

The tools also come in toolsets, which a connection chooses so that a model is shown what it
needs and no more; ``listed`` is what a caller is shown of the ones it chose.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vigil.kit.principals import Kind, Role
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
    ("vigil.switches.tools", ("heartbeat", "heartbeat_batch", "resume_packet")),
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
            "withdraw_request",
            "redeem_approval",
            "report_execution",
            "list_standing_approvals",
            "revoke_standing_approval",
            "claim_request",
            "routing_rules",
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


@dataclass(frozen=True)
class Toolset:
    name: str
    summary: str  # one line, as the README's table shows it
    tools: tuple[str, ...]


# Every tool in exactly one toolset, each in the catalog's order.
TOOLSETS: tuple[Toolset, ...] = (
    Toolset(
        "identity",
        "Who you are and whom you can reach: the caller, the agents, the directory.",
        ("whoami", "list_agents", "list_directory"),
    ),
    Toolset(
        "liveness",
        "Stay alive and hold work: the dead-man switch, fenced leases, a successor's packet.",
        ("heartbeat", "resume_packet", "acquire_lease", "renew_lease", "release_lease"),
    ),
    Toolset(
        "sessions",
        "Report as you work: session beats carrying people's instructions, runs, progress.",
        (
            "session_heartbeat",
            "end_session",
            "list_instructions",
            "start_run",
            "claim_run",
            "create_run_heartbeat",
            "finish_run",
            "get_run",
            "report_progress",
            "get_progress",
        ),
    ),
    Toolset(
        "fleet",
        "Speak for many agents at once: an orchestrator's beats in batches of up to 100.",
        ("heartbeat_batch",),
    ),
    Toolset(
        "mailboxes",
        "Receive: leased deliveries from your mailboxes, acknowledged once handled.",
        ("create_mailbox", "inbox_poll", "receive", "acknowledge", "list_dead_letters"),
    ),
    Toolset(
        "conversations",
        "Message agents and people: conversations and chats; edit, flag or withdraw a request.",
        (
            "send",
            "start_chat",
            "change_chat_membership",
            "get_conversation",
            "set_blocking",
            "replace_request",
            "withdraw_request",
        ),
    ),
    Toolset(
        "requests",
        "Ask and answer: questions, approvals and tasks, and redeeming an approval.",
        (
            "ask",
            "get_request",
            "reply",
            "request_status",
            "redeem_approval",
            "report_execution",
        ),
    ),
    Toolset(
        "files",
        "Attachments: stage or upload a file for a message or request, list and download.",
        (
            "stage_attachment",
            "begin_attachment_upload",
            "finish_attachment_upload",
            "upload_attachment",
            "list_attachments",
            "download_attachment",
        ),
    ),
    Toolset(
        "oversight",
        "For people and operators: watch switches, deaths, sessions; instruct; acknowledge; "
        "standing approvals, claims and routing.",
        (
            "post_instruction",
            "list_sessions",
            "acknowledge_alert",
            "list_switches",
            "list_deaths",
            "list_pauses",
            "list_standing_approvals",
            "revoke_standing_approval",
            "claim_request",
            "routing_rules",
        ),
    ),
    Toolset(
        "administration",
        "Principals and secrets, channels, pauses, audit and usage; mostly operators'.",
        (
            "register",
            "rotate_secret",
            "revoke_principal",
            "get_usage",
            "list_audit_events",
            "create_channel",
            "list_channels",
            "rotate_channel_secret",
            "set_channel_state",
            "delete_channel",
            "test_channel",
            "list_delivery_failures",
            "replay_delivery",
            "pause_switches",
            "resume_switches",
        ),
    ),
)

# What a worker agent needs to stay alive, take leases, report, receive and ask: a connection
# that chooses nothing gets these (an operator too: administration is chosen, not shown). An
# agent that starts conversations of its own chooses `default,conversations`.
DEFAULT_TOOLSETS = ("identity", "liveness", "sessions", "mailboxes", "requests")
# A selection may also name every toolset, or the default ones beside others.
ALL = "all"
DEFAULT = "default"
TOOLSET_NAMES = (*(toolset.name for toolset in TOOLSETS), ALL, DEFAULT)


class UnknownToolset(Exception):
    """A selection names a toolset that does not exist: the transport refuses the request."""

    def __init__(self, unknown: list[str]) -> None:
        super().__init__(
            f"unknown toolset: {', '.join(unknown)}; valid: {', '.join(TOOLSET_NAMES)}"
        )
        self.unknown = unknown


def toolsets(*selections: str | None) -> tuple[Toolset, ...]:
    """The toolsets the comma-separated ``selections`` name together, in the catalog's order;
    the default ones where none names any."""
    names = {name.strip() for selection in selections for name in (selection or "").split(",")} - {
        ""
    }
    unknown = sorted(names - set(TOOLSET_NAMES))
    if unknown:
        raise UnknownToolset(unknown)
    if not names or DEFAULT in names:
        names |= set(DEFAULT_TOOLSETS)
    return tuple(t for t in TOOLSETS if ALL in names or t.name in names)


def listed(chosen: tuple[Toolset, ...], kind: Kind, role: Role) -> tuple[Tool[Context], ...]:
    """The tools of ``chosen`` that a principal of ``kind`` and ``role`` may call, in the
    catalog's order (this imports only their modules)."""
    names = {name for toolset in chosen for name in toolset.tools}
    return tuple(
        found
        for found in (tool(name) for name in DECLARED_IN if name in names)
        if found.admits(kind, role)
    )
