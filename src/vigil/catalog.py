"""The tool catalog: every capability's ``TOOLS``, gathered once.

MCP ``tools/list``, the REST routes and the OpenAPI document are all generated from here;
each tool is declared (name, description, models, who may call it) beside its code.
"""

from __future__ import annotations

from vigil.attachments.tools import TOOLS as ATTACHMENTS
from vigil.audit.tools import TOOLS as AUDIT
from vigil.conversations.tools import TOOLS as CONVERSATIONS
from vigil.identity.tools import TOOLS as IDENTITY
from vigil.kit.tooling import Tool
from vigil.leases.tools import TOOLS as LEASES
from vigil.mailboxes.tools import TOOLS as MAILBOXES
from vigil.progress.tools import TOOLS as PROGRESS
from vigil.requests.tools import TOOLS as REQUESTS
from vigil.runs.tools import TOOLS as RUNS
from vigil.sessions.tools import TOOLS as SESSIONS
from vigil.switches.tools import TOOLS as SWITCHES

TOOLS: tuple[Tool, ...] = (
    *IDENTITY,
    # Requests early, while the newest ids a walk of the catalog has seen are principals'.
    *REQUESTS,
    *AUDIT,
    *LEASES,
    *MAILBOXES,
    # Membership changes come after the file tools, so that a walk of the catalog in order
    # (the quality harness's) reaches a conversation's files before a leave ends its part in it.
    *(tool for tool in CONVERSATIONS if tool.name != "change_chat_membership"),
    *ATTACHMENTS,
    *(tool for tool in CONVERSATIONS if tool.name == "change_chat_membership"),
    *SWITCHES,
    *SESSIONS,
    *PROGRESS,
    *RUNS,
)

BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
