"""A client we did not write, against the local runtime, for every read-only tool.

The MCP Inspector CLI lists the tools; every tool whose annotations say readOnlyHint is then
called through the Inspector with arguments built from its schema. What those arguments refer to
is made first, over REST, by the same generic scenario the in-memory harness runs. Each call
must succeed, or come back as a typed isError (never a protocol failure, a crash, or a refused
credential: the secrets follow any rotation the scenario made).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.e2e.test_mcp_clients import inspector
from tests.harness.probe import Outcome, assert_clean, read_rest
from tests.harness.scenario import CREDENTIAL, Scenario
from tests.harness.schema import input_schema, simplest
from tests.harness.walk import walked
from tests.harness.worlds import Actor, absorb
from vigil import catalog
from vigil.errors import ErrorCode
from vigil.identity.records import parse_secret
from vigil.kit.http import HttpResponse
from vigil.kit.principals import Kind, Role

pytestmark = pytest.mark.e2e


def _rest(state: dict[str, Any], tool: str, arguments: Any, secret: str) -> Outcome:
    request = urllib.request.Request(
        f"{state['rest_url'].rstrip('/')}/{tool}",
        json.dumps(arguments).encode(),
        {"content-type": "application/json", "authorization": f"Bearer {secret}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return read_rest(HttpResponse(response.status, response.read()))
    except urllib.error.HTTPError as error:
        return read_rest(HttpResponse(error.code, error.read()))


def _actor(label: str, secret: str, role: Role, kind: Kind) -> Actor:
    parsed = parse_secret(secret)
    assert parsed is not None
    namespace, principal_id = parsed
    return Actor(label, namespace, principal_id, secret, role, kind)


unclean: list[str] = []


@pytest.fixture(scope="module")
def made(state: dict[str, Any]) -> Scenario:
    """One pass of the scenario over REST, as the local operator and a worker agent: on the
    DynamoDB, SQS and Scheduler adapters (on moto), where the in-memory harness has fakes."""
    operator = _actor("operator", state["operator_secret"], "operator", "person")
    registered = _rest(state, "register", {"kind": "agent", "name": "harness"}, operator.secret)
    assert registered.result is not None, registered.describe()
    worker = _actor("worker", registered.result["secret"], "worker", "agent")

    def call(tool: str, arguments: dict[str, Any], actor: Actor) -> Outcome:
        outcome = _rest(state, tool, arguments, actor.secret)
        try:
            assert_clean(outcome)
        except AssertionError as error:
            unclean.append(f"{tool} {arguments}: {error}")
        absorb([operator, worker], outcome.result)
        return outcome

    protected = [operator.principal_id, worker.principal_id]
    scenario = Scenario(call, walked(), [operator, worker], protected, limit=8)
    scenario.run()
    return scenario


def _every_toolset(state: dict[str, Any]) -> str:
    """The endpoint, listing every toolset: the Inspector calls only a tool it was shown."""
    return f"{state['mcp_url']}?toolsets=all"


def _listed(state: dict[str, Any], secret: str) -> list[dict[str, Any]]:
    """Every tool ``secret``'s principal may call."""
    listed = inspector(_every_toolset(state), secret, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    tools: list[dict[str, Any]] = json.loads(listed.stdout)["tools"]
    return tools


def test_the_inspector_calls_every_read_only_tool(state: dict[str, Any], made: Scenario) -> None:
    # The scenario rotates secrets: each actor's is the one it holds now.
    secrets = {actor.label: actor.secret for actor in made.actors}
    listed = _listed(state, secrets["operator"])
    assert {tool["name"] for tool in listed} == set(catalog.DECLARED_IN)
    read_only = [t["name"] for t in listed if t.get("annotations", {}).get("readOnlyHint")]
    assert read_only, "the catalog has no read-only tool"
    failures: list[str] = []
    for name in read_only:
        tool = catalog.tool(name)
        # As whoever made it succeed over REST (the operator first), else the simplest call.
        done = sorted(
            (s for s in made.successes if s.tool == name), key=lambda s: s.actor != "operator"
        )
        arguments = dict(done[0].arguments) if done else simplest(input_schema(tool))
        arguments.pop(CREDENTIAL, None)
        called = inspector(
            _every_toolset(state),
            secrets[done[0].actor if done else "operator"],
            "--method",
            "tools/call",
            "--tool-name",
            name,
            "--tool-args-json",
            json.dumps(arguments),
        )
        try:
            result = json.loads(called.stdout)
            [content] = result["content"]
            payload = json.loads(content["text"])
            if called.returncode == 0:
                assert result.get("isError") is not True, called.stdout
                assert result["structuredContent"] == payload
                tool.output_model.model_validate(payload)
            else:
                assert result["isError"] is True, called.stdout
                assert "tool_is_error" in called.stderr, called.stderr
                assert payload["error"]["code"] in {code.value for code in ErrorCode}
                # The Inspector carries a live credential: the refusal is the tool's own.
                assert payload["error"]["code"] not in ("unavailable", "unauthenticated")
        except (AssertionError, ValueError, KeyError) as error:
            failures.append(
                f"{name} {arguments}: {error!r}\n"
                f"  exit {called.returncode}\n  out {called.stdout[:300]}\n"
                f"  err {called.stderr[:300]}"
            )
    assert not failures, "\n".join(failures)


def test_schema_valid_calls_on_the_real_adapters_are_clean(made: Scenario) -> None:
    assert made.successes
    assert not unclean, "\n".join(unclean[:20])
