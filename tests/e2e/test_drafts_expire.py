"""A draft that waited 24 hours is refused, end to end: the local runtime runs on a clock the
test moves, over MCP with the official SDK client."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.clients import open_session
from vigil.clock import ManualClock, SystemClock, to_ms


@pytest.fixture(scope="module")
def clock() -> ManualClock:
    return ManualClock(to_ms(SystemClock().now()))


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, clock: ManualClock) -> Iterator[Any]:
    from vigil.local.runtime import start

    with start(port=0, state_dir=tmp_path_factory.mktemp("vigil-clock"), clock=clock) as local:
        yield local


def test_a_draft_left_for_24_hours_cannot_be_claimed(runtime: Any, clock: ManualClock) -> None:
    state = json.loads((Path(runtime.state_dir) / "local.json").read_text())

    async def scenario() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            sender = await operator.call("register", kind="agent", name="sender")
            reader = await operator.call("register", kind="agent", name="reader")
            session = await open_session(stack, state["mcp_url"], sender["secret"])
            draft = await session.call(
                "stage_attachment",
                base64=base64.b64encode(b"stale").decode(),
                file_name="stale.txt",
                media_type="text/plain",
            )
            clock.advance(24 * 3600)
            return await session.attempt(
                "send",
                target={"kind": "agent", "id": reader["principal"]["id"]},
                body="too late",
                attachment_ids=[draft["id"]],
            )

    refused = anyio.run(scenario)
    assert refused["error"]["code"] == "not_found"
