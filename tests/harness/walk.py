"""The order the harness's scenario calls the tools in: one that lets each tool find what it
needs made by the tools before it, in a pass or the next. The catalog keeps its own order,
which is the reader's; this one is the harness's alone."""

from __future__ import annotations

from vigil import catalog
from vigil.context import Context
from vigil.kit.tooling import Tool

WALK: tuple[str, ...] = (
    "register",
    "rotate_secret",
    "revoke_principal",
    "whoami",
    "list_agents",
    "list_directory",
    # Requests early, while the newest ids the walk has seen are principals'.
    "ask",
    "request_status",
    "get_request",
    "reply",
    "set_blocking",
    "replace_request",
    "redeem_approval",
    "report_execution",
    "list_standing_approvals",
    "revoke_standing_approval",
    "routing_rules",
    "claim_request",
    # After what decides and redeems a request: it ends one that is still open.
    "withdraw_request",
    "list_audit_events",
    "acquire_lease",
    "renew_lease",
    "release_lease",
    "create_mailbox",
    "inbox_poll",
    "receive",
    "acknowledge",
    "list_dead_letters",
    "get_usage",
    "start_chat",
    "send",
    "get_conversation",
    "stage_attachment",
    "begin_attachment_upload",
    "finish_attachment_upload",
    "upload_attachment",
    "list_attachments",
    "download_attachment",
    # Membership changes come after the file tools, so that the walk reaches a conversation's
    # files before a leave ends its part in it.
    "change_chat_membership",
    "heartbeat",
    "heartbeat_batch",
    "resume_packet",
    "list_switches",
    "list_deaths",
    "pause_switches",
    "resume_switches",
    "list_pauses",
    "session_heartbeat",
    "post_instruction",
    "list_instructions",
    "list_sessions",
    "end_session",
    "report_progress",
    "get_progress",
    "start_run",
    "claim_run",
    "create_run_heartbeat",
    "finish_run",
    "get_run",
    # What a channel missed, and its alerts, before it is deleted: the second pass reaches
    # them with what the first pass's alerts left.
    "list_delivery_failures",
    "replay_delivery",
    "acknowledge_alert",
    "delete_channel",
    "create_channel",
    "list_channels",
    "rotate_channel_secret",
    "set_channel_state",
    "test_channel",
)


def walked() -> list[Tool[Context]]:
    """Every tool of the catalog, in the walk's order."""
    missing = sorted(set(catalog.DECLARED_IN) - set(WALK))
    assert not missing, f"the harness's walk leaves out {missing}"
    return [catalog.tool(name) for name in WALK]
