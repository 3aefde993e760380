"""The local HTTP API turns requests into payload 2.0 events, and the whole runtime starts."""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import select
import socket
import stat
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from vigil.clock import ManualClock
from vigil.local.deployment import LocalDeployment
from vigil.local.doors import FunctionUrlDoor, HttpApiDoor, front_door, http_routes
from vigil.local.logs import ACCESS_LOGGER
from vigil.local.provisioning import provision
from vigil.local.server import MAX_BODY_BYTES, LocalHttpServer
from vigil.local.stack import AwsClients, LocalNames


class StubFunction:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.result: Any = {"statusCode": 200, "headers": {}, "body": ""}
        self.error: Exception | None = None

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.events.append(event)
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def function() -> StubFunction:
    return StubFunction()


@pytest.fixture
def server(
    cfn: dict[str, Any], function: StubFunction, clock: ManualClock
) -> Iterator[LocalHttpServer]:
    server = LocalHttpServer(HttpApiDoor(tuple(http_routes(cfn))), function, clock=clock)
    server.start()
    yield server
    server.stop()


def request(
    server: LocalHttpServer,
    method: str,
    target: str,
    body: bytes | None = None,
    headers: list[tuple[str, str]] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.putrequest(method, target)
        for name, value in headers or []:
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_routes_come_from_the_template(cfn: dict[str, Any]) -> None:
    assert {route.key for route in http_routes(cfn)} == {
        "ANY /mcp",
        "POST /v1/{tool}",
        "OPTIONS /v1/{tool}",
        "GET /openapi.json",
        "ANY /console",
        "ANY /console/{proxy+}",
        "GET /docs",
        "GET /docs/{proxy+}",
        "$default",
    }


def test_a_request_becomes_a_payload_2_event(
    server: LocalHttpServer, function: StubFunction, clock: ManualClock
) -> None:
    function.result = {
        "statusCode": 201,
        "headers": {"Content-Type": "application/json", "x-answer": "42"},
        "body": '{"ok":true}',
        "cookies": ["session=1; HttpOnly"],
    }

    status, headers, body = request(
        server,
        "POST",
        "/v1/heartbeat?x=1&x=2&empty=",
        b'{"a":1}',
        [
            ("Authorization", "Bearer s3cret"),
            ("X-Multi", "a"),
            ("X-Multi", "b"),
            ("Cookie", "c1=v1; c2=v2"),
            ("User-Agent", "tester/1.0"),
            ("Content-Type", "application/json"),
        ],
    )

    assert (status, body) == (201, b'{"ok":true}')
    assert headers["x-answer"] == "42"
    assert headers["set-cookie"] == "session=1; HttpOnly"
    assert headers["apigw-requestid"]
    [event] = function.events
    context = event.pop("requestContext")
    assert event == {
        "version": "2.0",
        "routeKey": "POST /v1/{tool}",
        "rawPath": "/v1/heartbeat",
        "rawQueryString": "x=1&x=2&empty=",
        "cookies": ["c1=v1", "c2=v2"],
        "headers": {
            "host": f"127.0.0.1:{server.port}",
            "accept-encoding": "identity",
            "authorization": "Bearer s3cret",
            "x-multi": "a,b",
            "user-agent": "tester/1.0",
            "content-type": "application/json",
            "content-length": "7",
            "x-forwarded-for": "127.0.0.1",
            "x-forwarded-port": str(server.port),
            "x-forwarded-proto": "http",
        },
        "queryStringParameters": {"x": "1,2", "empty": ""},
        "pathParameters": {"tool": "heartbeat"},
        "body": '{"a":1}',
        "isBase64Encoded": False,
    }
    assert uuid.UUID(context.pop("requestId"))
    assert context == {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": f"127.0.0.1:{server.port}",
        "domainPrefix": "127",
        "http": {
            "method": "POST",
            "path": "/v1/heartbeat",
            "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1",
            "userAgent": "tester/1.0",
        },
        "routeKey": "POST /v1/{tool}",
        "stage": "$default",
        "time": "01/Jan/2026:00:00:00 +0000",
        "timeEpoch": int(clock.now().timestamp() * 1000),
    }


def test_binary_bodies_travel_base64_both_ways(
    server: LocalHttpServer, function: StubFunction
) -> None:
    function.result = {
        "statusCode": 200,
        "headers": {"content-type": "application/octet-stream"},
        "body": base64.b64encode(b"\xff\x00").decode(),
        "isBase64Encoded": True,
    }

    status, _, body = request(server, "PUT", "/mcp", b"\xff\xfe\x00")

    assert (status, body) == (200, b"\xff\x00")
    [event] = function.events
    assert event["routeKey"] == "ANY /mcp"
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\xff\xfe\x00"


def test_a_result_without_status_code_is_a_json_body(
    server: LocalHttpServer, function: StubFunction
) -> None:
    function.result = {"hello": "world"}

    status, headers, body = request(server, "GET", "/openapi.json")

    assert (status, headers["content-type"], json.loads(body)) == (
        200,
        "application/json",
        {"hello": "world"},
    )


@pytest.mark.parametrize(
    ("method", "target"),
    [("GET", "/nowhere"), ("GET", "/v1/heartbeat"), ("POST", "/v1"), ("POST", "/v1/a/b")],
)
def test_unknown_routes_reach_the_function_through_default(
    server: LocalHttpServer, function: StubFunction, method: str, target: str
) -> None:
    """The template routes every other path to the function ($default), which answers typed
    JSON rather than API Gateway's untyped 404."""
    status, _, _ = request(server, method, target, b"{}")

    assert status == 200
    (event,) = function.events
    assert (event["routeKey"], event["rawPath"]) == ("$default", target)


@pytest.mark.parametrize(
    ("method", "target"),
    [("GET", "/nowhere"), ("GET", "/v1/heartbeat"), ("POST", "/v1"), ("POST", "/v1/a/b")],
)
def test_without_a_default_route_unknown_routes_get_api_gateways_404(
    cfn: dict[str, Any], function: StubFunction, clock: ManualClock, method: str, target: str
) -> None:
    routes = tuple(route for route in http_routes(cfn) if route.key != "$default")
    server = LocalHttpServer(HttpApiDoor(routes), function, clock=clock)
    server.start()
    try:
        status, headers, body = request(server, method, target, b"{}")
    finally:
        server.stop()

    assert (status, json.loads(body)) == (404, {"message": "Not Found"})
    assert headers["content-type"] == "application/json"
    assert function.events == []


@pytest.mark.parametrize(
    ("method", "target"), [("POST", "/v1/heartbeat?x=1"), ("GET", "/nowhere"), ("PUT", "/mcp")]
)
def test_a_function_url_sends_every_request_as_its_default_route(
    function: StubFunction, clock: ManualClock, method: str, target: str
) -> None:
    """A Function URL has no routes: every request reaches the function, and its event names
    route $default, carries no path parameters and is keyed by the URL's id."""
    server = LocalHttpServer(FunctionUrlDoor("abcdefgh"), function, clock=clock)
    server.start()
    try:
        status, headers, _ = request(server, method, target, b"{}", [("User-Agent", "t/1")])
    finally:
        server.stop()

    assert status == 200
    assert headers["x-amzn-requestid"]
    assert "apigw-requestid" not in headers
    (event,) = function.events
    assert event["routeKey"] == "$default"
    assert "pathParameters" not in event
    assert event["rawPath"] == target.split("?")[0]
    context = event["requestContext"]
    assert (context["apiId"], context["routeKey"], context["stage"]) == (
        "abcdefgh",
        "$default",
        "$default",
    )
    assert context["domainName"] == event["headers"]["host"] == f"127.0.0.1:{server.port}"
    assert context["http"]["sourceIp"] == "127.0.0.1"
    assert event["headers"]["x-forwarded-proto"] == "http"


@pytest.mark.parametrize("door", ["HttpApi", "FunctionUrl"])
def test_the_server_plays_the_door_the_front_door_parameter_opens(
    cfn: dict[str, Any], clients: AwsClients, door: str
) -> None:
    names = LocalNames(stack_name=f"t{uuid.uuid4().hex[:10]}", parameters={"FrontDoor": door})
    deployment: LocalDeployment = provision(cfn, clients, names)

    played = front_door(cfn, deployment)

    if door == "FunctionUrl":
        (url,) = deployment.function_urls.values()
        assert url == f"https://{played.api_id}.lambda-url.us-east-1.on.aws/"
        assert isinstance(played, FunctionUrlDoor)
    else:
        assert deployment.function_urls == {}
        assert isinstance(played, HttpApiDoor)
        assert {route.key for route in played.routes} == {route.key for route in http_routes(cfn)}
    # Links in notifications name the door's address (the runtime then points them here).
    notify = deployment.functions["NotifyFunction"].environment["CONSOLE_BASE_URL"]
    assert ("lambda-url" in notify) is (door == "FunctionUrl")


def test_a_failing_function_is_a_500_without_details(
    server: LocalHttpServer, function: StubFunction
) -> None:
    function.error = RuntimeError("secret detail")

    status, _, body = request(server, "POST", "/mcp", b"{}")

    assert (status, json.loads(body)) == (500, {"message": "Internal Server Error"})


def test_bodies_over_lambdas_limit_are_refused(
    server: LocalHttpServer, function: StubFunction
) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\n"
            + f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
        )
        reply = connection.makefile("rb").read()

    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(body) == {"message": "Request Entity Too Large"}
    assert function.events == []
    status, _, _ = request(server, "POST", "/mcp", b"x" * MAX_BODY_BYTES)
    assert status == 200


def test_chunked_bodies_are_read(server: LocalHttpServer, function: StubFunction) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        )
        assert connection.makefile("rb").read().startswith(b"HTTP/1.1 200")
    assert function.events[0]["body"] == "abcde"


# ---------------------------------------------------------------- the whole runtime


def post_json(url: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
    from urllib.parse import urlsplit

    split = urlsplit(url)
    connection = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
    try:
        connection.request("POST", split.path, json.dumps(payload), headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("door", "request_id_header"),
    [("HttpApi", "apigw-requestid"), ("FunctionUrl", "x-amzn-requestid")],
)
def test_the_runtime_serves_the_real_handlers_and_stops_cleanly(
    tmp_path: Path, door: str, request_id_header: str
) -> None:
    """Through either front door (``vigil local --parameter FrontDoor=...``): MCP, REST, the
    OpenAPI document and a browser's preflight, answered by the real handlers."""
    from vigil.local.runtime import start

    endpoint_before = os.environ.get("AWS_ENDPOINT_URL")
    state_dir = tmp_path / "state"

    with start(
        port=0,
        state_dir=state_dir,
        template=ROOT / "template.yaml",
        parameters={"FrontDoor": door},
    ) as runtime:
        state_file = state_dir / "local.json"
        state = json.loads(state_file.read_text())
        assert set(state) == {
            "mcp_url",
            "rest_url",
            "openapi_url",
            "console_url",
            "namespace",
            "operator_id",
            "operator_secret",
            "aws_endpoint_url",
            "dynamodb_endpoint_url",
        }
        assert stat.S_IMODE(state_file.stat().st_mode) == 0o600
        assert state["namespace"] == "local"
        assert state["mcp_url"] == runtime.mcp_url
        assert state["console_url"] == runtime.mcp_url.removesuffix("/mcp") + "/console"
        assert os.environ["AWS_ENDPOINT_URL"] == runtime.aws_endpoint_url
        port = int(runtime.mcp_url.rsplit(":", 1)[1].split("/")[0])

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/openapi.json")
        response = connection.getresponse()
        document = json.loads(response.read())
        connection.close()
        assert response.status == 200
        assert document["openapi"].startswith("3.")

        status, answer = post_json(
            runtime.mcp_url,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
            {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {runtime.operator_secret}",
            },
        )
        assert status == 200
        assert answer["result"]["protocolVersion"] == "2025-06-18"
        assert answer["result"]["serverInfo"]["name"] == "vigil"

        origin = runtime.mcp_url.removesuffix("/mcp")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(
            "POST",
            "/v1/whoami",
            "{}",
            {
                "Content-Type": "application/json",
                "Authorization": f"Bearer {runtime.operator_secret}",
                "Origin": origin,
            },
        )
        response = connection.getresponse()
        whoami = json.loads(response.read())
        assert response.status == 200
        assert whoami["principal"]["id"] == runtime.operator_id
        assert response.getheader(request_id_header)
        # One source of CORS headers, the function's, whichever the door.
        allowed = [v for k, v in response.getheaders() if k == "access-control-allow-origin"]
        assert allowed == [origin]
        connection.request(
            "OPTIONS",
            "/v1/whoami",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
        )
        response = connection.getresponse()
        response.read()
        connection.close()
        assert response.status == 204
        allowed = [v for k, v in response.getheaders() if k == "access-control-allow-origin"]
        assert allowed == [origin]

    # Kept: the next start goes on with the same operator (tests/local/test_durable.py).
    assert json.loads(state_file.read_text()) == state
    assert os.environ.get("AWS_ENDPOINT_URL") == endpoint_before
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        probe.listen()


def test_stopping_closes_kept_alive_connections(cfn: dict[str, Any]) -> None:
    function = StubFunction()
    server = LocalHttpServer(HttpApiDoor(tuple(http_routes(cfn))), function)
    server.start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("POST", "/mcp", b"{}")
    assert connection.getresponse().read() == b""

    server.stop()

    def send_again() -> None:
        connection.request("POST", "/mcp", b"{}")
        connection.getresponse()

    with pytest.raises((ConnectionError, http.client.HTTPException)):
        send_again()
    connection.close()
    assert len(function.events) == 1


def test_stopping_lets_the_requests_being_answered_finish_and_takes_no_more(
    cfn: dict[str, Any],
) -> None:
    """A function stopped halfway would find its engines gone, which stop after the server."""
    entered, release = threading.Event(), threading.Event()
    happened: list[str] = []

    def function(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if event.get("body") == "slow":
            entered.set()
            release.wait(10)
            happened.append("answered")
        return {"statusCode": 200, "body": event.get("body") or ""}

    server = LocalHttpServer(HttpApiDoor(tuple(http_routes(cfn))), function)
    server.start()
    kept = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    kept.request("POST", "/mcp", b"quick")
    assert kept.getresponse().read() == b"quick"
    slow: list[tuple[int, dict[str, str], bytes]] = []
    answering = threading.Thread(
        target=lambda: slow.append(request(server, "POST", "/mcp", b"slow"))
    )
    answering.start()
    assert entered.wait(10)

    def stop() -> None:
        server.stop()
        happened.append("stopped")

    stopping = threading.Thread(target=stop)
    stopping.start()
    # Once the stop has begun, a kept-alive connection's next request reaches no function.
    while True:
        kept.request("POST", "/mcp", b"quick")
        response = kept.getresponse()
        body = response.read()
        if response.status == 503:
            break
        assert body == b"quick"
    assert response.getheader("connection") == "close"
    release.set()
    answering.join()
    stopping.join()

    assert happened == ["answered", "stopped"]
    assert [(status, body) for status, _, body in slow] == [(200, b"slow")]
    kept.close()


def test_the_local_dynamodb_serves_concurrent_transactions(tmp_path: Path) -> None:
    """moto's DynamoDB copied the whole table in a transaction and failed (500) under a
    concurrent write; DynamoDB Local, the runtime's engine, takes them all."""
    import concurrent.futures

    import boto3
    from botocore.config import Config

    from vigil.local.dynamodb_local import database_key, start_dynamodb_local

    engine = start_dynamodb_local(tmp_path)
    try:
        client = boto3.client(
            "dynamodb",
            endpoint_url=engine.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=database_key(tmp_path),
            aws_secret_access_key="local",
            config=Config(retries={"total_max_attempts": 1}),
        )
        table = "concurrency"
        client.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )

        def writes(worker: int) -> None:
            for i in range(40):
                client.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": table, "Item": {"pk": {"S": f"{worker}-{i}-{j}"}}}}
                        for j in range(2)
                    ]
                )
                client.put_item(TableName=table, Item={"pk": {"S": f"p{worker}-{i}"}})

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            for outcome in [pool.submit(writes, w) for w in range(6)]:
                outcome.result()  # raises if any request failed
        assert client.scan(TableName=table, Select="COUNT")["Count"] == 6 * 40 * 3
    finally:
        engine.stop()


def test_the_aws_stand_in_answers_no_browser() -> None:
    import urllib.error
    import urllib.request

    from vigil.local.moto_server import LocalMotoServer, Signers
    from vigil.local.stack import UNGUARDED_KEY, AwsClients

    moto = LocalMotoServer(
        ip_address="127.0.0.1", port=0, verbose=False, signers=Signers(UNGUARDED_KEY)
    )
    moto.start()
    try:
        host, port = moto.get_host_and_port()
        url = f"http://{host}:{port}/"
        target = {
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "Content-Type": "application/x-amz-json-1.0",
        }
        for method, headers in (
            (
                "OPTIONS",
                {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
            ),
            ("POST", {**target, "Origin": "https://evil.example"}),
        ):
            request = urllib.request.Request(
                url, data=b"{}" if method == "POST" else None, headers=headers, method=method
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 403
            assert not any(k.lower().startswith("access-control-") for k in refused.value.headers)
        # An SDK's request (no Origin) is served, without CORS headers.
        answer = AwsClients.local(url.rstrip("/")).sqs.list_queues()["ResponseMetadata"]
        assert answer["HTTPStatusCode"] == 200
        assert not any(k.lower().startswith("access-control-") for k in answer["HTTPHeaders"])
    finally:
        moto.stop()


def test_the_access_line_is_written_before_the_reply_goes(
    server: LocalHttpServer, function: StubFunction
) -> None:
    """A client that has its answer finds the request logged: a line logged after the reply
    raced the client, and the test that had its answer had closed the captured stream."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    answered_before_logged: list[bool] = []

    class Looking(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            # On loopback a reply sent is already in the client's socket.
            ready, _, _ = select.select([connection.sock], [], [], 0)
            answered_before_logged.append(bool(ready))

    looking = Looking()
    access = logging.getLogger(ACCESS_LOGGER)
    access.addHandler(looking)
    try:
        connection.request("GET", "/openapi.json")
        assert connection.getresponse().status == 200
    finally:
        access.removeHandler(looking)
        connection.close()
    assert answered_before_logged == [False]
