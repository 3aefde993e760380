"""What guards the local runtime's state, tried from another process as an agent or a stranger
on the network would: nothing handed out opens DynamoDB Local or moto, both refuse what the
runtime's own key did not sign, the presign key does only what a presigned URL may, and
neither engine answers on an address other than loopback."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.e2e.test_attachments import post_form, rest

REGION = "us-east-1"


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`vigil local` in a process of its own, and what its state directory says."""
    state_dir = tmp_path_factory.mktemp("locked")
    process = subprocess.Popen(
        [sys.executable, "-m", "vigil", "local", "--port", "0", "--state-dir", str(state_dir)],
        cwd=state_dir,
        env={**os.environ, "VIGIL_LOG_LEVEL": "WARNING"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 90
        for line in process.stdout:
            if line.startswith("Press Ctrl+C"):
                break
            assert time.monotonic() < deadline, "the runtime did not start"
        else:
            raise AssertionError(f"the runtime exited with {process.wait()}")
        state = dict(json.loads((state_dir / "local.json").read_text()))
        state["state_dir"] = state_dir
        yield state
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def handed_out(local: dict[str, Any]) -> dict[str, Any]:
    """An upload form and a download URL, as agents are given them."""
    sender = rest(local, "register", local["operator_secret"], kind="agent", name="sender")
    reader = rest(local, "register", local["operator_secret"], kind="agent", name="reader")
    begun = rest(
        local,
        "begin_attachment_upload",
        sender["secret"],
        file_name="big.bin",
        media_type="application/octet-stream",
    )
    form = begun["upload"]
    assert post_form(form["url"], form["fields"], b"x" * 70_000) in (200, 201, 204)
    draft = rest(local, "finish_attachment_upload", sender["secret"], id=begun["attachment"]["id"])
    target = {"kind": "agent", "id": reader["principal"]["id"]}
    rest(local, "send", sender["secret"], target=target, body="f", attachment_ids=[draft["id"]])
    got = rest(local, "download_attachment", reader["secret"], id=draft["id"])
    return {"form": form, "download_url": got["download_url"]}


def database_key_id(local: dict[str, Any]) -> str:
    return (Path(local["state_dir"]) / "dynamodb" / "key").read_text().strip()


def key_ids(handed_out: dict[str, Any]) -> set[str]:
    """The access key ids in a form and a URL, whichever signature version signed them."""
    fields = {name.lower(): value for name, value in handed_out["form"]["fields"].items()}
    query = {
        name.lower(): values[0]
        for name, values in parse_qs(urlsplit(handed_out["download_url"]).query).items()
    }
    found = set()
    for signed in (fields, query):
        credential = signed.get("x-amz-credential") or signed["awsaccesskeyid"]
        found.add(credential.split("/")[0])
    return found


def client(service: str, endpoint: str, key_id: str, secret: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        # SigV4 for presigning too, as the runtime's presigner signs.
        config=Config(signature_version="s3v4"),
    )


def refused(call: Any, **arguments: Any) -> bool:
    try:
        call(**arguments)
    except ClientError:
        return True
    return False


def status(url: str, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> int:
    split = urlsplit(url)
    connection = http.client.HTTPConnection(split.hostname, split.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_nothing_handed_out_names_the_database_key(
    local: dict[str, Any], handed_out: dict[str, Any]
) -> None:
    assert database_key_id(local) not in json.dumps(handed_out)


def test_a_key_id_from_a_presigned_url_opens_nothing_with_any_secret(
    local: dict[str, Any], handed_out: dict[str, Any]
) -> None:
    for key_id in [*key_ids(handed_out), database_key_id(local)]:
        dynamodb = client("dynamodb", local["dynamodb_endpoint_url"], key_id, "any")
        assert refused(dynamodb.list_tables)
        aws = local["aws_endpoint_url"]
        assert refused(client("secretsmanager", aws, key_id, "any").list_secrets)
        assert refused(client("sqs", aws, key_id, "any").list_queues)
        assert refused(client("s3", aws, key_id, "any").list_buckets)


def test_unsigned_and_wrongly_signed_requests_are_refused(local: dict[str, Any]) -> None:
    key_id = database_key_id(local)
    forged = (
        f"AWS4-HMAC-SHA256 Credential={key_id}/20260101/{REGION}/dynamodb/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={'0' * 64}"
    )
    list_tables = {
        "X-Amz-Target": "DynamoDB_20120810.ListTables",
        "Content-Type": "application/x-amz-json-1.0",
    }
    dynamodb = local["dynamodb_endpoint_url"]
    assert status(dynamodb, "POST", "/", list_tables, b"{}") >= 400
    signed_badly = {**list_tables, "Authorization": forged, "X-Amz-Date": "20260101T000000Z"}
    assert status(dynamodb, "POST", "/", signed_badly, b"{}") >= 400
    aws = local["aws_endpoint_url"]
    assert status(aws, "GET", "/moto-api/data.json", {}) == 403
    assert status(aws, "GET", "/", {}) == 403
    secrets = {"X-Amz-Target": "secretsmanager.ListSecrets"}
    assert (
        status(aws, "POST", "/", {**secrets, "Content-Type": "application/x-amz-json-1.1"}) == 403
    )


def test_the_presign_key_does_only_what_a_presigned_url_may(
    local: dict[str, Any], handed_out: dict[str, Any]
) -> None:
    keys = json.loads((Path(local["state_dir"]) / "keys.json").read_text())
    presign = keys["presign"]
    assert presign["id"] in key_ids(handed_out)
    aws = local["aws_endpoint_url"]

    def as_presigner(service: str, endpoint: str = aws) -> Any:
        return client(service, endpoint, presign["id"], presign["secret"])

    assert refused(as_presigner("dynamodb", local["dynamodb_endpoint_url"]).list_tables)
    assert refused(as_presigner("secretsmanager").list_secrets)
    assert refused(as_presigner("sqs").list_queues)
    s3 = as_presigner("s3")
    bucket = handed_out["download_url"].split("?")[0].removeprefix(aws).split("/")[1]
    assert refused(s3.list_objects_v2, Bucket=bucket)
    assert refused(s3.put_object, Bucket=bucket, Key="planted", Body=b"x")
    assert refused(s3.get_object, Bucket=bucket, Key="planted")
    # Presigned, it reads objects of the attachments bucket only.
    for operation, params in (
        ("list_buckets", {}),
        ("list_objects_v2", {"Bucket": bucket}),
        ("get_object", {"Bucket": "another-bucket", "Key": "x"}),
    ):
        split = urlsplit(s3.generate_presigned_url(operation, Params=params, ExpiresIn=60))
        assert status(aws, "GET", f"{split.path}?{split.query}", {}) == 403, operation
    # A handed-out form puts its own key only, at its own size only.
    form = handed_out["form"]
    for fields, size in (({**form["fields"], "key": "files/planted"}, 10), (form["fields"], 0)):
        with pytest.raises(urllib.error.HTTPError) as refusal:
            post_form(form["url"], fields, b"x" * size)
        assert refusal.value.code == 403
    # What it may do gets through the lock: moto itself answers that no such object exists.
    missing = s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "files/none"}, ExpiresIn=60
    )
    split = urlsplit(missing)
    assert status(aws, "GET", f"{split.path}?{split.query}", {}) == 404


def non_loopback_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            # No packet leaves: connecting a UDP socket only picks the route's source address.
            probe.connect(("192.0.2.1", 9))
        except OSError:
            pytest.skip("this machine has no route off loopback")
        address = str(probe.getsockname()[0])
    if address.startswith("127."):
        pytest.skip("this machine has no address but loopback")
    return address


def test_no_engine_answers_beyond_loopback(local: dict[str, Any]) -> None:
    log = (Path(local["state_dir"]) / "dynamodb" / "dynamodb-local.log").read_text()
    engine_port = int(re.findall(r"Port:\s+(\d+)", log)[-1])
    ports = [
        engine_port,
        int(urlsplit(local["dynamodb_endpoint_url"]).port or 0),
        int(urlsplit(local["aws_endpoint_url"]).port or 0),
    ]
    address = non_loopback_address()
    for port in ports:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address, port), timeout=2).close()
