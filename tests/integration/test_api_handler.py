"""The API function's handler on moto, fed the sample events that `sam local invoke` uses."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from pydantic import BaseModel

from tests.conftest import ROOT, create_tables_from_template
from tests.support import import_entry_point, refuse_aws_clients
from vigil import catalog, wiring
from vigil.app import App
from vigil.bootstrap import bootstrap_operator
from vigil.clock import SystemClock
from vigil.entrypoints import alarm, api
from vigil.stores.dynamo import DynamoStore

EVENTS = ROOT / "events"


def sample(name: str, secret: str | None = None, body: Any = None) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    if secret is not None:
        event["headers"]["authorization"] = f"Bearer {secret}"
    if body is not None:
        event["body"] = json.dumps(body)
    return event


@pytest.fixture
def operator_secret(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = create_tables_from_template(client)["VigilTable"]
    env = {
        "TABLE_NAME": table,
        "TIMER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/timers",
        "SCHEDULE_GROUP": "alarms",
        "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
        "ALARM_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:alarm",
        "ALARM_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:alarm-dlq",
        "MAILBOX_QUEUE_PREFIX": "test-mb",
        "ATTACHMENTS_BUCKET": "test-attachments",
        "NOTIFY_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/notify",
        "WATCH_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/watch",
        "NOTIFY_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:notify",
        "NOTIFY_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:notify-dlq",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    wiring.settings.cache_clear()
    api.router.cache_clear()
    _, secret = bootstrap_operator(DynamoStore(client, table), SystemClock(), "acme", "Ops")
    yield secret
    wiring.settings.cache_clear()
    api.router.cache_clear()


def body_of(response: dict[str, Any]) -> Any:
    return json.loads(response["body"]) if response["body"] else None


def test_sample_events_round_trip(operator_secret: str) -> None:
    init = api.handler(sample("mcp_initialize.json"))
    assert init["statusCode"] == 200
    assert body_of(init)["result"]["protocolVersion"] == "2025-06-18"
    assert init["headers"]["x-correlation-id"] == "sample-request-1"

    listing = body_of(api.handler(sample("mcp_tools_list.json")))
    listed = {t["name"] for t in listing["result"]["tools"]}
    # The default toolsets: a worker's tools, not an operator's administration.
    assert "heartbeat" in listed
    assert "register" not in listed

    whoami = body_of(api.handler(sample("mcp_call_whoami.json", operator_secret)))
    assert whoami["result"]["structuredContent"]["principal"]["namespace"] == "acme"

    document = body_of(api.handler(sample("openapi.json")))
    assert "/v1/register" in document["paths"]


def test_a_function_url_event_is_served_as_an_http_api_one(operator_secret: str) -> None:
    """A Function URL's event has no route and no path parameters, and its request context
    names the URL: the handler reads the same request from it, the caller's address and the
    address the caller reached (for the challenge's metadata URL) included."""
    event = sample("function_url_whoami.json", operator_secret)
    request = api.request_from_event(event)
    assert (request.method, request.path, request.source_ip) == (
        "POST",
        "/v1/whoami",
        "203.0.113.10",
    )
    assert (
        request.origin() == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws"
    )

    answered = api.handler(event)
    assert answered["statusCode"] == 200
    assert body_of(answered)["principal"]["namespace"] == "acme"
    refused = api.handler(sample("function_url_whoami.json", "not-a-secret"))
    assert refused["statusCode"] == 401
    assert refused["headers"]["www-authenticate"].endswith(
        'resource_metadata="https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws'
        '/.well-known/oauth-protected-resource"'
    )


def test_rest_mirror_registers_and_lists(operator_secret: str) -> None:
    event = sample("rest_list_agents.json", operator_secret, {"kind": "agent", "name": "w1"})
    event["rawPath"] = "/v1/register"
    registered = api.handler(event)
    assert registered["statusCode"] == 200
    agent = body_of(registered)["principal"]

    listed = api.handler(sample("rest_list_agents.json", operator_secret))
    assert [a["id"] for a in body_of(listed)["agents"]] == [agent["id"]]


@pytest.mark.parametrize(
    ("path", "body", "secret", "status", "code"),
    [
        ("/v1/list_agents", {}, None, 401, "unauthenticated"),
        ("/v1/list_agents", {"x": 1}, "operator", 400, "invalid_argument"),
        ("/v1/nope", {}, "operator", 404, "not_found"),
        ("/v1/register", {"kind": "agent", "name": 3}, "operator", 400, "invalid_argument"),
    ],
)
def test_rest_errors_are_typed(
    operator_secret: str, path: str, body: Any, secret: str | None, status: int, code: str
) -> None:
    event = sample("rest_list_agents.json", operator_secret if secret else None, body)
    if secret is None:
        event["headers"].pop("authorization")
    event["rawPath"] = path
    response = api.handler(event)
    assert response["statusCode"] == status
    assert body_of(response)["error"]["code"] == code


def test_rest_rejects_a_body_that_is_not_json(operator_secret: str) -> None:
    event = sample("rest_list_agents.json", operator_secret)
    event["body"] = "{oops"
    response = api.handler(event)
    assert (response["statusCode"], body_of(response)["error"]["code"]) == (400, "invalid_argument")


def test_an_unreachable_store_is_a_retryable_error_without_aws_text(
    operator_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLE_NAME", "no-such-table")
    wiring.settings.cache_clear()
    api.router.cache_clear()
    response = api.handler(sample("rest_list_agents.json", operator_secret))
    error = body_of(response)["error"]
    assert (response["statusCode"], error["code"], error["retryable"]) == (503, "unavailable", True)
    assert "ResourceNotFound" not in response["body"]


def aws_clients(app: App) -> dict[str, Any]:
    return {
        "dynamodb": app.store.client,  # type: ignore[attr-defined]
        "sqs (mailboxes)": app.queues.client,  # type: ignore[attr-defined]
        "sqs (timers)": app.alarms.sqs,  # type: ignore[attr-defined]
        "scheduler": app.alarms.scheduler,  # type: ignore[attr-defined]
        "s3": app.blobs.client,  # type: ignore[attr-defined]
    }


def test_an_on_demand_init_builds_the_dynamodb_client_and_the_others_on_first_use(
    operator_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
    entry = import_entry_point("api")
    clients = aws_clients(api.router().app)
    waiting = {name for name, client in clients.items() if isinstance(client, wiring.OnFirstUse)}
    assert waiting == {"sqs (mailboxes)", "sqs (timers)", "scheduler", "s3"}
    assert not any(clients[name].is_built for name in waiting)

    with monkeypatch.context() as refused:
        refused.setattr(wiring, "aws_client", refuse_aws_clients)
        whoami = body_of(entry.handler(sample("mcp_call_whoami.json", operator_secret)))
    assert whoami["result"]["structuredContent"]["principal"]["namespace"] == "acme"

    register = sample("rest_list_agents.json", operator_secret, {"kind": "agent", "name": "w1"})
    register["rawPath"] = "/v1/register"
    agent = body_of(entry.handler(register))["principal"]["id"]
    message = {"target": {"kind": "agent", "id": agent}, "body": "hello"}
    send = sample("rest_list_agents.json", operator_secret, message)
    send["rawPath"] = "/v1/send"  # delivers to the agent's mailbox queue
    assert entry.handler(send)["statusCode"] == 200
    assert clients["sqs (mailboxes)"].is_built
    assert not clients["scheduler"].is_built


@pytest.mark.parametrize("function", ["api", "alarm"])
def test_the_entry_points_keep_what_init_made_out_of_garbage_collection(
    operator_secret: str, monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    built = {"api": api.router, "alarm": alarm.switch_engine}[function]
    built.cache_clear()
    seen = []
    monkeypatch.setattr(gc, "freeze", lambda: seen.append((gc.isenabled(), built.cache_info())))
    try:
        import_entry_point(function)
    finally:
        built.cache_clear()
    # Frozen once, when init had built what it builds, having run with no collection.
    assert [(enabled, info.currsize, info.hits) for enabled, info in seen] == [(False, 1, 0)]
    assert gc.isenabled()


def vigil_models(base: type[BaseModel] = BaseModel) -> list[type[BaseModel]]:
    found = []
    for model in base.__subclasses__():
        if model.__module__.startswith("vigil."):
            found.append(model)
        found += vigil_models(model)
    return found


def test_an_init_ahead_of_requests_builds_every_client_tool_and_validator(
    operator_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    import_entry_point("api")
    monkeypatch.setattr(wiring, "aws_client", refuse_aws_clients)
    clients = aws_clients(api.router().app)
    assert [name for name, c in clients.items() if isinstance(c, wiring.OnFirstUse)] == []
    assert set(catalog.DECLARED_IN.values()) <= set(sys.modules)
    incomplete = [m.__name__ for m in vigil_models() if not m.__pydantic_complete__]
    assert len(vigil_models()) > 100
    assert incomplete == []


def test_the_clients_know_every_service_botocore_does() -> None:
    from botocore.loaders import Loader

    known = wiring._session().get_component("data_loader").list_available_services("service-2")
    assert {"dynamodb", "sqs", "scheduler", "s3", "cloudformation"} <= set(known)
    assert set(Loader().list_available_services("service-2")) <= set(known)


def test_events_folder_has_the_documented_samples() -> None:
    names = {p.name for p in Path(EVENTS).glob("*.json")}
    assert {
        "mcp_initialize.json",
        "rest_list_agents.json",
        "function_url_whoami.json",
        "timer_sqs.json",
    } <= names
