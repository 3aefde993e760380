"""The MCP Tasks extension (``io.modelcontextprotocol/tasks``, with the 2026-07-28 revision):
an ``ask`` from a host that declares it is answered with a task, which the host polls with
``tasks/get`` and withdraws with ``tasks/cancel``.

The task is the request: its id is the request's id, and its status is computed from the
stored request on every poll (open: working; decided: completed, with the result ``ask``
returns, as the request stands now; expired or replaced: failed, with the typed error a reply
to it gets; withdrawn: cancelled), so nothing is stored for a task and it never disagrees with
its request. Only its asker sees it: anyone else, the request's audience and other namespaces
included, is told what a task that does not exist is told (docs/DESIGN.md, "Requests as MCP
tasks").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from vigil.clock import iso
from vigil.errors import ErrorCode, VigilError, conflict, unauthenticated
from vigil.kit.principals import id_pattern
from vigil.transports.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CAPABILITY,
    tool_result,
)

if TYPE_CHECKING:
    from vigil.app import App
    from vigil.identity.records import Principal
    from vigil.requests.views import RequestView

TASKS = "io.modelcontextprotocol/tasks"
METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
# The tools whose call may become a task: those that ask a request and leave it open.
TASK_TOOLS = frozenset({"ask"})
# How often a host is asked to poll: a person decides in minutes, not seconds, and each poll
# costs two reads (the credential and the request).
POLL_INTERVAL_MS = 5_000
# The JSON-RPC error of a task whose request ended undecided: a server error of the range
# JSON-RPC leaves to implementations, carrying the typed error as its data.
UNDECIDED = -32000
# Where a 2026-07-28 request declares what its client supports; nothing is inferred from an
# earlier request.
_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
REQUIRED: dict[str, Any] = {"extensions": {TASKS: {}}}

_STATUS = {"open": "working", "expired": "failed", "replaced": "failed", "withdrawn": "cancelled"}


class TaskRefusal(Exception):
    """A task method's JSON-RPC error, at ``status``."""

    def __init__(self, code: int, message: str, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.data = data


def declares(params: dict[str, Any]) -> bool:
    """Whether the request declares the Tasks extension among its client's capabilities."""
    meta = params.get("_meta")
    capabilities = meta.get(_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS), dict)


def task_of(request: RequestView) -> dict[str, Any]:
    """The task ``request`` is, as tasks/get shows it: with its result once decided, its
    error once ended undecided."""
    status = _STATUS.get(request.state, "completed")
    task: dict[str, Any] = {
        "taskId": request.id,
        "status": status,
        "createdAt": iso(request.asked_at),
        "lastUpdatedAt": iso(_last_change(request)),
        # Its deadline: an open request fails then, and a host may stop waiting.
        "ttlMs": int((request.expires_at - request.asked_at).total_seconds() * 1000),
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if status == "completed":
        task["result"] = tool_result(request.model_dump(mode="json"), is_error=False)
    elif status == "failed":
        details = {"replaced_by": request.replaced_by} if request.replaced_by else {}
        error = conflict(f"the request is final: {request.state}", state=request.state, **details)
        task["statusMessage"] = error.message
        task["error"] = {"code": UNDECIDED, "message": error.message, "data": error.to_dict()}
    return task


def _last_change(request: RequestView) -> Any:
    last = request.history[-1]
    if request.state == "expired" and last.kind != "expired":
        # Expired by the clock before its alarm recorded it.
        return request.expires_at
    return last.at


def created(tool: str, params: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any] | None:
    """The task a tool's result becomes for a host that declares the extension, once the
    request it asked is stored (the call has committed it); None for a result that stays as
    it is: another tool's, or a request already final (a shared answer reused)."""
    if tool not in TASK_TOOLS or not declares(params) or payload.get("state") != "open":
        return None
    # Imported here, as the tools themselves are: a cold start loads what its call needs.
    from vigil.requests.views import RequestView

    return {**task_of(RequestView.model_validate(payload)), "resultType": "task"}


_TASK_ID = re.compile(id_pattern("req").strip("^$"))


def serve(
    app: App, caller: Principal | None, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """The result of a tasks/* method (one of ``METHODS``): refused (TaskRefusal) to a host
    that does not declare the extension and for a task the caller cannot see; a VigilError
    (unauthenticated) without a credential."""
    if not declares(params):
        raise TaskRefusal(
            MISSING_REQUIRED_CAPABILITY,
            "missing required client capability",
            400,
            {"requiredCapabilities": REQUIRED},
        )
    if caller is None:
        raise unauthenticated()
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise TaskRefusal(INVALID_PARAMS, "params.taskId must be a string")
    if not _TASK_ID.fullmatch(task_id):
        # A task is a request: an id of no request's shape names none, and is not looked up.
        raise TaskRefusal(INVALID_PARAMS, "task not found")
    from vigil.requests.calls import own_request, withdraw_request

    try:
        if method == "tasks/cancel":
            request = app.act_as(caller, lambda ctx: withdraw_request(ctx, task_id), via="mcp")
        else:
            request = app.act_as(caller, lambda ctx: own_request(ctx, task_id), via="mcp")
    except VigilError as error:
        if error.code is ErrorCode.NOT_FOUND:
            raise TaskRefusal(INVALID_PARAMS, "task not found") from None
        if error.code is ErrorCode.VERSION_CONFLICT and not error.retryable:
            # Decided, expired or replaced before the cancel: cancelling is cooperative, and
            # the task keeps the status its request ended with.
            return {}
        raise TaskRefusal(INTERNAL_ERROR, error.message, data=error.to_dict()) from None
    return task_of(request) if method == "tasks/get" else {}
