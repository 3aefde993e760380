"""The seeds' input schemas and example calls, transcribed from the four reference documents
(shared/seeds): what a client that follows a seed may send, and nothing of ours.

The session, run and dead-man seeds publish JSON Schema, kept here as written (the dead-man
seed's prose bounds, "Min 2, max 2592000" and "<=64 chars", as the keywords they mean). The
coordination seed publishes tables: each row is its field's type as a schema, with the bounds
its text states (maxItems=, minimum=, maxLength=, "at most 200 characters", "32 KiB of UTF-8
bytes"). A ``JSON value`` is any JSON; an untyped ``object`` is any object.

``EXAMPLES`` are the seeds' example calls. The values their authors mark for replacing ("Replace
IDs with actual returned values": ``REPLACE_WITH_...``, the sample run id, the ``{}`` left for a
target or an action, the version or generation that stands for the current one, the required
values an envelope leaves to the caller's context) are listed as ``placeholders``: a caller fills
them from what it was given; every other value is sent as the seed wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STRING: dict[str, Any] = {"type": "string"}
ID: dict[str, Any] = {"type": "string"}
IDEMPOTENCY_KEY: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
ANY_JSON: dict[str, Any] = {}
ANY_OBJECT: dict[str, Any] = {"type": "object"}
# "Message or request content, bounded to 32 KiB of UTF-8 bytes": a byte bound, checked apart.
BODY: dict[str, Any] = {"type": "string", "maxBytes": 32 * 1024}
# The MCP transfer limit: "maxLength=87384".
BASE64: dict[str, Any] = {"type": "string", "maxLength": 87384}
ATTACHMENT_IDS: dict[str, Any] = {"type": "array", "items": ID, "maxItems": 5}
MENTIONS: dict[str, Any] = {
    "type": "array",
    "maxItems": 20,
    "items": {
        "type": "object",
        "properties": {
            "end": {"type": "integer", "minimum": 1},
            "principal_id": ID,
            "start": {"type": "integer", "minimum": 0},
        },
        "required": ["end", "principal_id", "start"],
    },
}
TARGET: dict[str, Any] = {
    "type": "object",
    "properties": {"id": ID, "kind": STRING},
    "required": ["id", "kind"],
}
VERSION: dict[str, Any] = {"type": "integer"}


def _tool(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    # -- session_heartbeat.md (MCP 2025-06-18)
    "session_heartbeat": _tool(
        {
            "sessionId": STRING,
            "status": {"enum": ["active", "waiting", "blocked"]},
            "progressPercent": {"type": "number", "minimum": 0, "maximum": 100},
            "currentStep": STRING,
            "stepIndex": {"type": "integer", "minimum": 1},
            "stepCount": {"type": "integer", "minimum": 1, "maximum": 1000},
            "acknowledgedInstructionIds": {"type": "array", "items": STRING},
            "instructionCursor": STRING,
            "idempotencyKey": STRING,
        },
        ["sessionId", "idempotencyKey"],
    ),
    # -- run_heartbeat.md
    "create_run_heartbeat": _tool(
        {
            "run_id": {"type": "string", "format": "uuid"},
            "lease_duration_seconds": {
                "type": "integer",
                "minimum": 5,
                "maximum": 300,
                "default": 60,
            },
        },
        ["run_id"],
    ),
    # -- deadman_heartbeat.md
    "heartbeat": _tool(
        {
            "scope": STRING,
            "expect_within_seconds": {"type": "integer", "minimum": 2, "maximum": 2592000},
            "on_expiry": {
                "type": "array",
                "items": {"enum": ["release_leases", "queue_alert", "mark_failed"]},
            },
            "notify_address": STRING,
            "agent_id": {"type": "string", "maxLength": 64},
            "disarm": BOOLEAN,
            "agent_key": STRING,
        },
        ["scope", "expect_within_seconds"],
    ),
    # -- coordination_tools.md
    "list_directory": _tool(
        {"kind": {"enum": ["person", "agent", "service"]}, "search": {**STRING, "maxLength": 200}},
        ["kind"],
    ),
    "get_conversation": _tool({"id": ID}, ["id"]),
    "list_attachments": _tool({"conversation_id": ID}, ["conversation_id"]),
    "upload_attachment": _tool(
        {"base64": BASE64, "conversation_id": ID, "file_name": STRING, "media_type": STRING},
        ["base64", "conversation_id", "file_name", "media_type"],
    ),
    "stage_attachment": _tool(
        {"base64": BASE64, "file_name": STRING, "media_type": STRING},
        ["base64", "file_name", "media_type"],
    ),
    "start_chat": _tool(
        {
            "approval": BOOLEAN,
            "attachment_ids": ATTACHMENT_IDS,
            "body": BODY,
            "choices": {"type": "array", "items": STRING},
            "idempotency_key": IDEMPOTENCY_KEY,
            "mentions": MENTIONS,
            "targets": {"type": "array", "items": TARGET, "maxItems": 100},
            "title": STRING,
        },
        ["body", "targets"],
    ),
    "change_chat_membership": _tool(
        {
            "conversation_id": ID,
            "idempotency_key": IDEMPOTENCY_KEY,
            "members": {"type": "array", "items": ID, "maxItems": 100},
            "next_manager": ID,
            "operation": {"enum": ["rename", "add", "remove", "leave"]},
            "share_history": BOOLEAN,
            "title": STRING,
            "version": {"type": "integer", "minimum": 1},
        },
        ["conversation_id", "operation", "version"],
    ),
    "download_attachment": _tool({"id": ID}, ["id"]),
    "receive": _tool({}),
    "acknowledge": _tool({"generation": {"type": "integer"}, "id": ID}, ["generation", "id"]),
    "report_progress": _tool({"progress": ANY_OBJECT}),
    "list_agents": _tool({}),
    "send": _tool(
        {
            "attachment_ids": ATTACHMENT_IDS,
            "body": BODY,
            "conversation_id": ID,
            "idempotency_key": IDEMPOTENCY_KEY,
            "mentions": MENTIONS,
            "reuse_direct": BOOLEAN,
            "target": TARGET,
            "title": STRING,
        },
        ["body"],
    ),
    "ask": _tool(
        {
            "action": ANY_OBJECT,
            "attachment_ids": ATTACHMENT_IDS,
            "blocking": BOOLEAN,
            "body": BODY,
            "choices": {"type": "array", "items": STRING},
            "conversation_id": ID,
            "idempotency_key": IDEMPOTENCY_KEY,
            "kind": STRING,
            "mentions": MENTIONS,
            "reuse_direct": BOOLEAN,
            "shared_key": STRING,
            "target": ANY_OBJECT,
            "title": STRING,
        }
    ),
    "set_blocking": _tool({"blocking": BOOLEAN, "id": ID}, ["blocking", "id"]),
    "replace_request": _tool(
        {
            "body": BODY,
            "id": ID,
            "idempotency_key": IDEMPOTENCY_KEY,
            "mentions": MENTIONS,
            "version": VERSION,
        },
        ["body", "id", "idempotency_key", "version"],
    ),
    "get_request": _tool({"id": ID}, ["id"]),
    "reply": _tool(
        {"answer": ANY_JSON, "id": ID, "outcome": STRING, "version": VERSION},
        ["id", "outcome", "version"],
    ),
    "redeem_approval": _tool({"action": ANY_OBJECT, "id": ID}, ["action", "id"]),
    "report_execution": _tool({"id": ID, "result": ANY_JSON, "state": STRING}, ["id", "state"]),
    "request_status": _tool({}),
}


@dataclass(frozen=True)
class Example:
    arguments: dict[str, Any]
    # Top-level arguments the caller fills from what it was given (see the module docstring).
    placeholders: frozenset[str] = field(default_factory=frozenset)


def _example(arguments: dict[str, Any], *placeholders: str) -> Example:
    return Example(arguments, frozenset(placeholders))


_MESSAGE = "Hold the staging rollout until checkout jobs drain."

EXAMPLES: dict[str, Example] = {
    # The envelope "deliberately leaves required resource values for your authorized context".
    "session_heartbeat": _example({}, "sessionId", "idempotencyKey"),
    "create_run_heartbeat": _example({"run_id": "00000000-0000-4000-8000-000000000000"}, "run_id"),
    # The dead-man seed gives an example per field rather than a call.
    "heartbeat": _example(
        {
            "scope": "permit-review-2026-08",
            "expect_within_seconds": 300,
            "on_expiry": ["release_leases", "queue_alert"],
            "notify_address": "agent:7k2p.../alerts",
            "agent_id": "worker-3",
            "disarm": False,
        },
        "notify_address",
    ),
    "list_directory": _example({"kind": "person"}),
    "get_conversation": _example({"id": "REPLACE_WITH_RETURNED_ID"}, "id"),
    "list_attachments": _example(
        {"conversation_id": "REPLACE_WITH_RETURNED_ID"}, "conversation_id"
    ),
    "upload_attachment": _example(
        {
            "base64": "REPLACE_WITH_BASE64",
            "conversation_id": "REPLACE_WITH_RETURNED_ID",
            "file_name": "REPLACE_WITH_FILE_NAME",
            "media_type": "REPLACE_WITH_MEDIA_TYPE",
        },
        "base64",
        "conversation_id",
        "file_name",
        "media_type",
    ),
    "stage_attachment": _example(
        {
            "base64": "REPLACE_WITH_BASE64",
            "file_name": "REPLACE_WITH_FILE_NAME",
            "media_type": "REPLACE_WITH_MEDIA_TYPE",
        },
        "base64",
        "file_name",
        "media_type",
    ),
    "start_chat": _example(
        {"body": _MESSAGE, "targets": [{"id": "REPLACE_WITH_RETURNED_ID", "kind": "agent"}]},
        "targets",
    ),
    "change_chat_membership": _example(
        {"conversation_id": "REPLACE_WITH_RETURNED_ID", "operation": "rename", "version": 1},
        "conversation_id",
        "version",
    ),
    "download_attachment": _example({"id": "REPLACE_WITH_RETURNED_ID"}, "id"),
    "receive": _example({}),
    "acknowledge": _example(
        {"generation": 1, "id": "REPLACE_WITH_RETURNED_ID"}, "generation", "id"
    ),
    "report_progress": _example({}),
    "list_agents": _example({}),
    "send": _example(
        {"body": _MESSAGE, "target": {"id": "REPLACE_WITH_RETURNED_ID", "kind": "agent"}},
        "target",
    ),
    "ask": _example({"body": _MESSAGE, "target": {}}, "target"),
    "set_blocking": _example({"blocking": False, "id": "REPLACE_WITH_RETURNED_ID"}, "id"),
    "replace_request": _example(
        {
            "body": _MESSAGE,
            "id": "REPLACE_WITH_RETURNED_ID",
            "idempotency_key": "REPLACE_WITH_IDEMPOTENCY_KEY",
            "version": 1,
        },
        "id",
        "idempotency_key",
        "version",
    ),
    "get_request": _example({"id": "REPLACE_WITH_RETURNED_ID"}, "id"),
    "reply": _example(
        {"id": "REPLACE_WITH_RETURNED_ID", "outcome": "REPLACE_WITH_OUTCOME", "version": 1},
        "id",
        "outcome",
        "version",
    ),
    "redeem_approval": _example({"action": {}, "id": "REPLACE_WITH_RETURNED_ID"}, "action", "id"),
    "report_execution": _example(
        {"id": "REPLACE_WITH_RETURNED_ID", "state": "REPLACE_WITH_STATE"}, "id", "state"
    ),
    "request_status": _example({}),
}

SEED_TOOLS = tuple(SCHEMAS)
