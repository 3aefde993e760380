"""What the local AWS stand-ins do with a request before its body is trusted, attacked from
outside the runtime over real sockets: a presigned upload form that names its key twice (in
two cases) or carries a second file part is refused before moto reads it its own way; and a
request that is not signed by one of the runtime's keys, or whose body is larger than any the
runtime sends, is refused from its headers alone, its body never read."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from vigil.local.dynamodb_front import MAX_REQUEST_BYTES, DynamoDBFront
from vigil.local.moto_server import MAX_BODY_BYTES, LocalMotoServer, Signers
from vigil.local.signatures import AccessKey
from vigil.local.stack import UNGUARDED_KEY

BUCKET = "attachments"
PRESIGN = AccessKey.new("presign")


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    signers = Signers(UNGUARDED_KEY)
    signers.allow_presigned(PRESIGN, BUCKET)
    server = LocalMotoServer(ip_address="127.0.0.1", port=0, verbose=False, signers=signers)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    s3(url, UNGUARDED_KEY).create_bucket(Bucket=BUCKET)
    yield url
    server.stop()


def s3(url: str, key: AccessKey) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=key.id,
        aws_secret_access_key=key.secret,
        config=Config(signature_version="s3v4"),
    )


def form_body(fields: list[tuple[str, str]], files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = "attack-boundary"
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields
    )
    for name, data in files:
        body += (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="f"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + data
            + b"\r\n"
        )
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def raw(url: str, head: str, body: bytes = b"", wait: float = 10) -> tuple[str, float]:
    """The status line a server answers ``head`` (and ``body``) with, and how long it took."""
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=wait) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        answer = conn.recv(4096).decode(errors="replace")
    return answer.splitlines()[0], time.monotonic() - started


def post_form(url: str, fields: list[tuple[str, str]], files: list[tuple[str, bytes]]) -> str:
    body, kind = form_body(fields, files)
    head = (
        f"POST /{BUCKET} HTTP/1.1\r\nHost: x\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    )
    return raw(url, head, body)[0]


def presigned(url: str, key: str) -> dict[str, str]:
    form = s3(url, PRESIGN).generate_presigned_post(
        Bucket=BUCKET, Key=key, Conditions=[["content-length-range", 1, 100]], ExpiresIn=60
    )
    return dict(form["fields"])


def stored(url: str, key: str) -> bytes:
    body: bytes = s3(url, UNGUARDED_KEY).get_object(Bucket=BUCKET, Key=key)["Body"].read()
    return body


def test_a_form_naming_its_key_twice_in_two_cases_is_refused(moto: str) -> None:
    """The attack of an agent of another namespace: its own form, with the victim's object key
    first as ``key`` and the form's own last as ``Key``. The check read the last; moto stored
    under the first."""
    victim = "acme/attachments/victim"
    s3(moto, UNGUARDED_KEY).put_object(Bucket=BUCKET, Key=victim, Body=b"the original")
    mine = presigned(moto, "globex/attachments/mine")
    fields = [("key", victim)] + [
        ("Key" if name == "key" else name, value) for name, value in mine.items()
    ]
    assert post_form(moto, fields, [("file", b"rewritten")]).split()[1] == "403"
    assert stored(moto, victim) == b"the original"


def test_a_field_given_twice_or_a_second_file_part_is_refused(moto: str) -> None:
    key = "globex/attachments/twice"
    fields = list(presigned(moto, key).items())
    assert post_form(moto, [*fields, ("key", key)], [("file", b"x")]).split()[1] == "403"
    second = [("file", b"x"), ("extra", b"y" * 64)]
    assert post_form(moto, fields, second).split()[1] == "403"
    assert post_form(moto, fields, [("File", b"x")]).split()[1] == "403"
    # The form as it was made is admitted.
    assert post_form(moto, fields, [("file", b"x")]).split()[1] in ("200", "201", "204")
    assert stored(moto, key) == b"x"


def test_moto_refuses_a_large_or_foreign_body_before_reading_it(moto: str) -> None:
    huge = f"Content-Length: {300 * 1024 * 1024}\r\n"
    # A form may not be signed in its headers, but it is bounded: no body is awaited.
    form = (
        f"POST /{BUCKET} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
    )
    status, took = raw(moto, form + huge)
    assert status.split()[1] == "413"
    assert took < 5
    signed_by_nobody = (
        f"PUT /{BUCKET}/k HTTP/1.1\r\nHost: x\r\n"
        "Authorization: AWS4-HMAC-SHA256 Credential=AKIANOBODY/20261207/us-east-1/s3/aws4_request,"
        " SignedHeaders=host, Signature=00\r\n"
    )
    status, took = raw(moto, signed_by_nobody + f"Content-Length: {MAX_BODY_BYTES}\r\n")
    assert status.split()[1] == "403"
    assert took < 5


@pytest.fixture(scope="module")
def front() -> Iterator[str]:
    engine = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    engine.start()
    host, port = engine.get_host_and_port()
    served = DynamoDBFront(f"http://{host}:{port}", "unsigned", {UNGUARDED_KEY.id: "s"})
    served.start()
    yield served.url
    served.stop()
    engine.stop()


def test_the_dynamodb_front_refuses_a_foreign_or_oversized_body_before_reading_it(
    front: str,
) -> None:
    foreign = (
        "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\n"
        "Authorization: AWS4-HMAC-SHA256 Credential=AKIANOBODY/20261207/us-east-1/dynamodb/"
        "aws4_request, SignedHeaders=host, Signature=00\r\n"
        f"Content-Length: {300 * 1024 * 1024}\r\n"
    )
    status, took = raw(front, foreign)
    assert status.split()[1] == "400"
    assert took < 5
    ours = foreign.replace("AKIANOBODY", UNGUARDED_KEY.id).replace(
        str(300 * 1024 * 1024), str(MAX_REQUEST_BYTES + 1)
    )
    status, took = raw(front, ours)
    assert status.split()[1] == "400"
    assert took < 5
