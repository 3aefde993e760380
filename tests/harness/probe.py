"""Calling a tool through each door (``App.call``, MCP ``tools/call``, REST ``POST /v1/<tool>``),
reading what came back as one ``Outcome``, and checking that a refusal is typed and clean."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from tests.harness.mutations import MARKER
from vigil import catalog
from vigil.app import App
from vigil.catalog import UnknownTool
from vigil.errors import HTTP_STATUS, ErrorCode, VigilError
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.transports.router import Router

DOORS = ("app", "mcp", "rest")
# Text that would mean an internal failure reached the caller.
LEAKS = ("Traceback", "botocore", "ClientError", "Exception")
# No refusal needs more than this: an error names fields and problems, never echoes values.
MAX_ERROR_BYTES = 64 * 1024
_CODES = {code.value for code in ErrorCode}
# A value the mutator invented; the names of unknown properties it invents (MARKER_...) may be
# named in a refusal, their values may not.
_ECHO = re.compile(re.escape(MARKER) + "(?!_)")
_ABSENT = object()


@dataclass
class Outcome:
    door: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # the typed error: code, message, details, retryable
    rpc_error: dict[str, Any] | None = None  # a JSON-RPC error (MCP only)
    status: int = 200
    body: bytes = b""

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def code(self) -> str | None:
        return None if self.error is None else str(self.error["code"])

    def describe(self) -> str:
        return f"{self.door} {self.status} {self.body[:400]!r}"


def request(path: str, body: bytes, bearer: str | None, **headers: str) -> HttpRequest:
    all_headers = {"content-type": "application/json", **headers}
    if bearer is not None:
        all_headers["authorization"] = f"Bearer {bearer}"
    return HttpRequest("POST", path, all_headers, body, request_id="harness")


def tools_call(tool: str, arguments: Any = _ABSENT, request_id: int = 1) -> bytes:
    params: dict[str, Any] = {"name": tool}
    if arguments is not _ABSENT:
        params["arguments"] = arguments
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


class Doors:
    """The three ways into one App."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.router = Router(app, frozenset())

    def call(self, door: str, tool: str, arguments: Any, bearer: str | None) -> Outcome:
        if door == "app":
            return self._direct(tool, arguments, bearer)
        if door == "mcp":
            return read_mcp(self.post("/mcp", tools_call(tool, arguments), bearer))
        assert door == "rest", door
        return read_rest(self.post(f"/v1/{tool}", json.dumps(arguments).encode(), bearer))

    def post(self, path: str, body: bytes, bearer: str | None, **headers: str) -> HttpResponse:
        return self.router.handle(request(path, body, bearer, **headers))

    def _direct(self, tool: str, arguments: Any, bearer: str | None) -> Outcome:
        try:
            result = self.app.call(tool, arguments, bearer, via="rest")
        except VigilError as error:
            payload = error.to_dict()
            return Outcome("app", error=payload, body=json.dumps(payload).encode())
        except UnknownTool:
            return Outcome("app", rpc_error={"code": "unknown tool"})
        return Outcome("app", result=result, body=json.dumps(result).encode())


def read_mcp(response: HttpResponse) -> Outcome:
    """The outcome of a ``tools/call``: a JSON-RPC error, a 401 carrying the refusal, or a
    tool result whose text is the JSON of its structured content (a success) or of
    ``{"error": ...}`` (a refusal)."""
    assert response.headers.get("content-type") == "application/json", response
    message = json.loads(response.body)
    outcome = Outcome("mcp", status=response.status, body=response.body)
    if response.status == 401:
        # Without a valid credential the call never runs: HTTP 401, its challenge, and the
        # typed refusal as the JSON-RPC error's data.
        assert response.headers["www-authenticate"].startswith("Bearer "), response
        outcome.error = message["error"]["data"]
        return outcome
    if "error" in message:
        outcome.rpc_error = message["error"]
        assert isinstance(outcome.rpc_error["code"], int), message
        return outcome
    assert response.status == 200, response
    result = message["result"]
    assert isinstance(result["isError"], bool), message
    [content] = result["content"]
    payload = json.loads(content["text"])
    if result["isError"]:
        # Refusals travel as text only: some clients check structuredContent against the
        # output schema, which describes success.
        assert "structuredContent" not in result, message
        outcome.error = payload["error"]
    else:
        assert result["structuredContent"] == payload, message
        outcome.result = payload
    return outcome


def read_rest(response: HttpResponse) -> Outcome:
    body = json.loads(response.body) if response.body else None
    outcome = Outcome("rest", status=response.status, body=response.body)
    if response.status == 200:
        assert isinstance(body, dict), response
        outcome.result = body
        return outcome
    assert isinstance(body, dict), response
    assert "error" in body, response
    outcome.error = body["error"]
    return outcome


def assert_clean(outcome: Outcome) -> None:
    """Whatever came back, it is no crash: no 5xx, no internal text, no ``unavailable`` (the
    code the app gives unexpected exceptions), and a refusal has the typed shape."""
    for leak in LEAKS:
        assert leak not in outcome.body.decode(errors="replace"), outcome.describe()
    assert outcome.status < 500, outcome.describe()
    if outcome.error is not None:
        error = outcome.error
        assert set(error) <= {"code", "message", "details", "retryable"}, outcome.describe()
        assert error["code"] in _CODES, outcome.describe()
        assert isinstance(error["message"], str), outcome.describe()
        # Retryable exactly when the message tells the caller to retry the call.
        assert error["retryable"] is ("retry" in error["message"]), outcome.describe()
        assert error["code"] != "unavailable", outcome.describe()
        assert len(outcome.body) <= MAX_ERROR_BYTES, outcome.describe()
        if outcome.door == "rest":
            assert outcome.status == HTTP_STATUS[ErrorCode(error["code"])], outcome.describe()


@functools.cache
def _published_outputs(name: str) -> tuple[Draft202012Validator, ...]:
    """The tool's whole output schema (the REST mirror's) and its outline (tools/list's)."""
    tool = catalog.tool(name)
    return tuple(map(Draft202012Validator, (tool.output_schema(), tool.listed_output_schema())))


def assert_published(tool: str, result: dict[str, Any]) -> None:
    """A result is what both of its published schemas describe, and what its model reads."""
    catalog.tool(tool).output_model.model_validate(result)
    for schema in _published_outputs(tool):
        schema.validate(result)


# Tools that validate each item of a list apart, answering each in its own result: a defect
# inside item n is item n's refusal, in a call that answers (docs/TOOLS.md, heartbeat_batch).
ANSWERED_APART = {"heartbeat_batch": ("beats", "results")}


def item_of(tool: str, label: str) -> int | None:
    """The item of ``tool``'s list that the defect ``label`` lies in, if the tool answers
    its items apart."""
    if tool not in ANSWERED_APART:
        return None
    found = re.match(rf"{ANSWERED_APART[tool][0]}\.(\d+)[.:]", label)
    return int(found[1]) if found else None


def assert_refused(outcome: Outcome, code: str, *, tool: str = "", label: str = "") -> None:
    """A typed refusal with exactly ``code`` that echoes no value the harness invented: the
    call's, or, for a defect inside an item answered apart, that item's."""
    assert_clean(outcome)
    item = item_of(tool, label)
    if item is not None and code == "invalid_argument":
        assert outcome.result is not None, f"expected item {item} refused: {outcome.describe()}"
        answered = outcome.result[ANSWERED_APART[tool][1]][item]
        assert answered["error"] is not None, f"item {item} answered: {outcome.describe()}"
        assert answered["error"]["code"] == code, f"expected {code}: {outcome.describe()}"
    else:
        assert outcome.code == code, f"expected {code}: {outcome.describe()}"
    echoed = _ECHO.search(outcome.body.decode(errors="replace"))
    assert echoed is None, f"the refusal echoes an argument value: {outcome.describe()}"
