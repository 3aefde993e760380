"""An orchestrator's beats against the local runtime: heartbeat_batch through the official MCP
SDK client (the fleet toolset chosen on the URL), and the Beater's background thread over the
REST mirror, beating on its own and disarming on exit. Real time: it polls, never sleeps blind.
"""

from __future__ import annotations

import time
import uuid
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

from tests.conftest import ROOT
from tests.e2e.clients import open_session
from vigil.beater import Beater
from vigil.people.client import Endpoint, RestClient, rest_base

pytestmark = pytest.mark.e2e


def _rest(state: dict[str, Any], secret: str) -> RestClient:
    return RestClient(Endpoint(rest_base(state["rest_url"]), secret, "test"))


def _agent(state: dict[str, Any], name: str) -> tuple[str, str]:
    operator = _rest(state, state["operator_secret"])
    issued = operator.call("register", {"kind": "agent", "name": name})
    return issued["principal"]["id"], issued["secret"]


def test_heartbeat_batch_through_the_mcp_sdk_answers_each_beat(state: dict[str, Any]) -> None:
    _, secret = _agent(state, "fleet-mcp")
    stem = uuid.uuid4().hex[:8]

    async def scenario() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            session = await open_session(
                stack, f"{state['mcp_url']}?toolsets=default,fleet", secret
            )
            listed = await session.client.list_tools()
            assert "heartbeat_batch" in {tool.name for tool in listed.tools}
            return await session.call(
                "heartbeat_batch",
                beats=[
                    {"scope": f"{stem}-a", "expect_within_seconds": 60},
                    {"scope": f"{stem}-b", "expect_within_seconds": 1},
                    {"scope": f"{stem}-c", "expect_within_seconds": 60, "agent_id": "w-3"},
                ],
            )

    result = anyio.run(scenario)
    assert result["failed"] == 1
    a, b, c = result["results"]
    assert (a["result"]["state"], c["result"]["agent_id"]) == ("armed", "w-3")
    assert b["error"]["code"] == "invalid_argument"
    assert b["result"] is None


def test_the_beater_beats_from_its_thread_and_disarms_on_exit(state: dict[str, Any]) -> None:
    _, secret = _agent(state, "fleet-beater")
    scopes = [f"beater-{uuid.uuid4().hex[:8]}-{n}" for n in range(3)]
    agent = _rest(state, secret)
    with Beater(state["rest_url"], secret, scopes=scopes, window=6) as beater:
        assert beater.beating == sorted(scopes)
        # Beaten every 2 s from the thread: wait (polling) for the third beat of each.
        give_up = time.monotonic() + 20
        operator = _rest(state, state["operator_secret"])
        while True:
            found = [
                operator.call("list_switches", {"scope_prefix": s})["switches"][0] for s in scopes
            ]
            if min(switch["beats"] for switch in found) >= 3:
                break
            assert time.monotonic() < give_up, found
            time.sleep(0.25)
        assert {switch["state"] for switch in found} == {"armed"}
    after = {agent.call("resume_packet", {"scope": s})["state"] for s in scopes}
    assert after == {"disarmed"}


def test_the_readmes_first_agent_example_runs_as_written(state: dict[str, Any]) -> None:
    """The README's "Keep an agent alive" block, run against this runtime: its switches are
    armed while it runs, labelled as it says, and disarmed when it ends."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Keep an agent alive") :]
    code = section[section.index("```python\n") + 10 : section.index("```\n", 10)]
    _, secret = _agent(state, "readme-agent")
    stem = uuid.uuid4().hex[:6]
    operator = _rest(state, state["operator_secret"])
    seen: list[dict[str, Any]] = []

    def render(part: str) -> None:
        seen.extend(
            operator.call("list_switches", {"scope_prefix": f"nightly-report-{stem}"})["switches"]
        )

    code = code.replace('"http://127.0.0.1:8080"', repr(rest_base(state["rest_url"])))
    code = code.replace('"nightly-report', f'"nightly-report-{stem}')
    exec(code, {"secret": secret, "parts": ["north", "south"], "render": render})
    assert {(s["scope"], s["state"]) for s in seen} >= {
        (f"nightly-report-{stem}", "armed"),
        (f"nightly-report-{stem}/north", "armed"),
        (f"nightly-report-{stem}/south", "armed"),
    }
    after = operator.call("list_switches", {"scope_prefix": f"nightly-report-{stem}"})
    assert {s["state"] for s in after["switches"]} == {"disarmed"}
    assert {s["agent_id"] for s in after["switches"]} >= {"worker-north", "worker-south"}
