"""Bodies no tool can read, at the HTTP layer (vigil.transports.router.Router), for every tool:
malformed JSON, bytes that are not UTF-8, JSON that is not an object, huge bodies. REST answers
a 4xx with a typed error (413 limit_exceeded for a body over 2 MiB); MCP a JSON-RPC error,
or a tool result with isError when only the arguments are wrong. Nothing crashes, nothing
leaks, nothing changes."""

from __future__ import annotations

import json

import pytest

from tests.harness.probe import assert_clean, assert_refused, read_mcp, read_rest
from tests.harness.scenario import Seeded
from tests.harness.settings import TOOL_NAMES
from tests.harness.worlds import Unchanged

MiB = 1 << 20

MALFORMED = (b"{", b'{"kind": ', b"{'kind': 'agent'}", b"nul", b'{"a": 1,}', b"{} x", b"\x00")
NOT_UTF8 = (
    b'{"name": "\xff"}',
    b"\xc3\x28",
    b'{"name": "\xc0\xaf"}',  # an overlong encoding of "/"
    b'{"name": "\xed\xa0\x80"}',  # a surrogate, encoded
    b"\xfe\xff\xfe",
)
NOT_OBJECTS = (b"[]", b'"zz-harness"', b"7", b"-0.5", b"null", b"true", b"[{}]")
HUGE = (json.dumps({"zz-harness_unknown": "zz-harness" + "a" * (5 * MiB)}).encode(),)
# Slower to read, and read the same way whatever the tool: sent to one tool only.
HUGE_ONCE = (json.dumps(["zz-harness"] * MiB).encode(), b"[" + b"7," * (2 * MiB) + b"7]")
# The JSON-RPC errors a transport may answer with: parse error, invalid request, invalid params.
RPC_REFUSALS = (-32700, -32600, -32602)


def _tools_call(tool: str, fragment: bytes) -> bytes:
    """A tools/call whose arguments are ``fragment``, spliced in as raw bytes."""
    head = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})[:-1].encode()
    return (
        head
        + b', "params": {"name": '
        + json.dumps(tool).encode()
        + b', "arguments": '
        + (fragment + b"}}")
    )


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_unreadable_bodies_are_refused(home: Seeded, tool_name: str) -> None:
    world = home.world
    secret = world.cast.operator.secret
    watch = Unchanged(world)
    failures: list[str] = []
    for label, bodies in (
        ("malformed", MALFORMED),
        ("not UTF-8", NOT_UTF8),
        ("not an object", NOT_OBJECTS),
        ("huge", HUGE + (HUGE_ONCE if tool_name == TOOL_NAMES[0] else ())),
    ):
        for body in bodies:
            try:
                rest = read_rest(world.doors.post(f"/v1/{tool_name}", body, secret))
                mcp = read_mcp(world.doors.post("/mcp", _tools_call(tool_name, body), secret))
                assert_clean(mcp)
                if label == "huge":
                    # Over 2 MiB, refused before it is read: typed over REST, a JSON-RPC
                    # invalid request carrying the same typed refusal over MCP, both 413.
                    assert_refused(rest, "limit_exceeded")
                    assert (rest.status, mcp.status) == (413, 413), mcp.describe()
                    assert mcp.rpc_error is not None, mcp.describe()
                    assert mcp.rpc_error["code"] == -32600, mcp.describe()
                    assert mcp.rpc_error["data"] == rest.error, mcp.describe()
                    continue
                assert_refused(rest, "invalid_argument")
                if mcp.rpc_error is not None:
                    assert mcp.rpc_error["code"] == -32700, mcp.describe()
                    assert mcp.status == 400, mcp.describe()
                else:
                    # Python's JSON reader takes an encoded surrogate ("surrogatepass"); the
                    # schema then refuses the string it makes.
                    assert label not in ("malformed",), mcp.describe()
                    assert_refused(mcp, "invalid_argument")
                moved = watch.moved()
                assert not moved, f"the state changed: {moved}"
            except AssertionError as error:
                failures.append(f"{label} {body[:30]!r}: {error}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "body",
    [*MALFORMED, *NOT_UTF8, *NOT_OBJECTS, b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}'],
)
def test_messages_that_are_not_json_rpc_are_protocol_errors(home: Seeded, body: bytes) -> None:
    world = home.world
    watch = Unchanged(world)
    mcp = read_mcp(world.doors.post("/mcp", body, world.cast.operator.secret))
    assert_clean(mcp)
    assert mcp.rpc_error is not None, mcp.describe()
    assert mcp.rpc_error["code"] in RPC_REFUSALS, mcp.describe()
    assert mcp.status == 400, mcp.describe()
    assert not watch.moved()


@pytest.mark.parametrize(
    "params",
    [
        b"[]",
        b'"whoami"',
        b'{"name": 7}',
        b'{"name": null}',
        b'{"name": "zz-harness-no-such-tool"}',
        b'{"name": "whoami", "arguments": "zz-harness"}',
    ],
)
def test_malformed_tool_calls_are_refused(home: Seeded, params: bytes) -> None:
    world = home.world
    watch = Unchanged(world)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + params + b"}"
    mcp = read_mcp(world.doors.post("/mcp", body, world.cast.operator.secret))
    assert_clean(mcp)
    if mcp.rpc_error is None:
        assert_refused(mcp, "invalid_argument")
    else:
        assert mcp.rpc_error["code"] in RPC_REFUSALS, mcp.describe()
    assert not watch.moved()


# -- bodies built to break the parser, the encoder or the size of a refusal ------------------
@pytest.mark.parametrize("path", ["/v1/whoami", "/mcp"])
def test_deeply_nested_json_is_refused(home: Seeded, path: str) -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    response = home.world.doors.post(path, body, home.world.cast.operator.secret)
    assert 400 <= response.status < 500


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "who\ud800ami"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/\ud800", "params": {}},
        {
            "jsonrpc": "2.0",
            "id": "\ud800",
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        },
    ],
)
def test_a_lone_surrogate_is_never_echoed(home: Seeded, message: dict[str, object]) -> None:
    body = json.dumps(message).encode()  # ASCII: the surrogate travels as an escape
    mcp = read_mcp(home.world.doors.post("/mcp", body, home.world.cast.operator.secret))
    assert_clean(mcp)


def test_a_refusal_stays_small_however_many_properties_are_wrong(home: Seeded) -> None:
    # As many wrong properties as a body under the 2 MiB limit holds.
    body = json.dumps({f"k{i}": 0 for i in range(150_000)}).encode()
    assert len(body) < 2 * MiB
    rest = read_rest(home.world.doors.post("/v1/whoami", body, home.world.cast.operator.secret))
    assert_refused(rest, "invalid_argument")
