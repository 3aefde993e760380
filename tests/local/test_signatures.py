"""The local engines' signature check against what the AWS SDK itself signs: its requests,
presigned URLs and presigned POST forms pass; a change to any signed part, another secret, an
unknown key or an expired grant does not."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config

from vigil.local.signatures import (
    AccessKey,
    Refused,
    Signed,
    UnknownKey,
    admit_form,
    verify,
    verify_post_policy,
)

KEY = AccessKey.new("vigil")
KEYS = {KEY.id: KEY.secret}
ENDPOINT = "http://127.0.0.1:4566"


class Sent(Exception):
    """Stops a client's call once its request is signed."""


def client(service: str, key: AccessKey = KEY) -> Any:
    return boto3.client(
        service,
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id=key.id,
        aws_secret_access_key=key.secret,
        config=Config(signature_version="s3v4") if service == "s3" else None,
    )


def sent(service: str, operation: str, key: AccessKey = KEY, **arguments: Any) -> dict[str, Any]:
    """The request the SDK sends for ``operation``, as the engine's front receives it."""
    caller = client(service, key)
    captured: list[Any] = []

    def capture(request: Any, **_: Any) -> None:
        captured.append(request)
        raise Sent

    caller.meta.events.register("before-send", capture)
    with pytest.raises(Sent):
        getattr(caller, operation)(**arguments)
    request = captured[0]
    url = urlsplit(request.url)
    body = request.body if isinstance(request.body, bytes) else (request.body or b"")
    return {
        "method": request.method,
        "path": url.path,
        "query": url.query,
        # The HTTP client adds Host, from the URL the signature covers.
        "headers": {"host": url.netloc}
        | {
            name.lower(): value.decode() if isinstance(value, bytes) else value
            for name, value in request.headers.items()
        },
        "body": body.encode() if isinstance(body, str) else bytes(body),
    }


CALLS = [
    ("dynamodb", "get_item", {"TableName": "t", "Key": {"pk": {"S": "a b/ü"}}}),
    ("sqs", "send_message", {"QueueUrl": f"{ENDPOINT}/123456789012/q", "MessageBody": "hi"}),
    ("secretsmanager", "get_secret_value", {"SecretId": "arn:aws:secretsmanager:x"}),
    ("s3", "get_object", {"Bucket": "b", "Key": "files/a b+ü~(1).txt"}),
    ("s3", "list_objects_v2", {"Bucket": "b", "Prefix": "a b", "MaxKeys": 5}),
]


@pytest.mark.parametrize(("service", "operation", "arguments"), CALLS)
def test_what_the_sdk_signs_is_verified(
    service: str, operation: str, arguments: dict[str, Any]
) -> None:
    request = sent(service, operation, **arguments)
    assert verify(**request, keys=KEYS, now=time.time()) == Signed(KEY.id, service, False)


@pytest.mark.parametrize(("service", "operation", "arguments"), CALLS)
def test_a_change_to_a_signed_part_is_refused(
    service: str, operation: str, arguments: dict[str, Any]
) -> None:
    request = sent(service, operation, **arguments)
    changes = [
        {"method": "PUT"},
        {"path": request["path"] + "x"},
        {"query": request["query"] + "&extra=1"},
        {"headers": {**request["headers"], "x-amz-date": "20260101T000000Z"}},
    ]
    if service != "s3":  # S3 signs its payload's hash in a header the SDK sets.
        changes.append({"body": request["body"] + b" "})
    for change in changes:
        with pytest.raises(Refused):
            verify(**{**request, **change}, keys=KEYS, now=time.time())


def test_another_secret_an_unknown_key_no_signature_and_an_old_one_are_refused() -> None:
    request = sent("dynamodb", "list_tables")
    with pytest.raises(Refused, match="signature"):
        verify(**request, keys={KEY.id: "not the secret"}, now=time.time())
    with pytest.raises(UnknownKey):
        verify(**request, keys={"someoneelse": KEY.secret}, now=time.time())
    unsigned = {k: v for k, v in request["headers"].items() if k != "authorization"}
    with pytest.raises(Refused, match="not signed"):
        verify(**{**request, "headers": unsigned}, keys=KEYS, now=time.time())
    with pytest.raises(Refused, match="too long ago"):
        verify(**request, keys=KEYS, now=time.time() + 16 * 60)


def test_a_presigned_get_works_until_it_expires_and_for_its_object_only() -> None:
    url = urlsplit(
        client("s3").generate_presigned_url(
            "get_object", Params={"Bucket": "b", "Key": "files/x"}, ExpiresIn=60
        )
    )
    request = {
        "method": "GET",
        "path": url.path,
        "query": url.query,
        "headers": {"host": url.netloc},
        "body": b"",
    }
    assert verify(**request, keys=KEYS, now=time.time()) == Signed(KEY.id, "s3", True)
    with pytest.raises(Refused, match="expired"):
        verify(**request, keys=KEYS, now=time.time() + 61)
    with pytest.raises(Refused, match="signature"):
        verify(**{**request, "path": "/b/files/y"}, keys=KEYS, now=time.time())


def presigned_form() -> dict[str, str]:
    form = client("s3").generate_presigned_post(
        Bucket="b",
        Key="staged/x",
        Conditions=[["content-length-range", 1, 100]],
        ExpiresIn=60,
    )
    return dict(form["fields"])


def test_a_presigned_form_is_admitted_only_as_its_policy_says() -> None:
    fields = presigned_form()
    policy = verify_post_policy(fields, KEYS, time.time())
    assert policy.key_id == KEY.id
    admit_form(policy, fields, "b", 100)
    refusals = [
        ({**fields, "key": "files/x"}, "b", 10),
        (fields, "other-bucket", 10),
        (fields, "b", 101),
        (fields, "b", 0),
        ({**fields, "acl": "public-read"}, "b", 10),
    ]
    for form, bucket, size in refusals:
        with pytest.raises(Refused):
            admit_form(policy, form, bucket, size)
    with pytest.raises(Refused, match="expired"):
        verify_post_policy(fields, KEYS, time.time() + 61)
    with pytest.raises(Refused, match="signature"):
        verify_post_policy({**fields, "policy": fields["policy"][:-4]}, KEYS, time.time())
    with pytest.raises(UnknownKey):
        verify_post_policy(fields, {"someoneelse": KEY.secret}, time.time())
