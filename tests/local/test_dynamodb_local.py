"""DynamoDB Local as the runtime starts it: found or clearly missing, its database locked by
the state directory's key, no browser let in."""

from __future__ import annotations

import http.client
import stat
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest

from vigil.local.dynamodb_local import (
    ENGINE_ENV,
    EngineMissing,
    database_key,
    find_jar,
    start_dynamodb_local,
)


def client(endpoint: str, key: str) -> object:
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key="any",
    )


def test_a_missing_engine_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENGINE_ENV, str(tmp_path))
    with pytest.raises(EngineMissing, match=ENGINE_ENV):
        find_jar()


def test_the_database_key_is_random_private_and_stable(tmp_path: Path) -> None:
    key = database_key(tmp_path / "a")
    assert key.isalnum()
    assert len(key) >= 32
    assert stat.S_IMODE((tmp_path / "a" / "key").stat().st_mode) == 0o600
    assert database_key(tmp_path / "a") == key
    assert database_key(tmp_path / "b") != key


def test_only_the_key_opens_the_database_and_no_browser_gets_in(tmp_path: Path) -> None:
    engine = start_dynamodb_local(tmp_path)
    try:
        ours = client(engine.endpoint_url, database_key(tmp_path))
        ours.create_table(  # type: ignore[attr-defined]
            TableName="private",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        stranger = client(engine.endpoint_url, "guessedkey")
        assert stranger.list_tables()["TableNames"] == []  # type: ignore[attr-defined]
        assert ours.list_tables()["TableNames"] == ["private"]  # type: ignore[attr-defined]

        parts = urlsplit(engine.endpoint_url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        connection.request(
            "OPTIONS",
            "/",
            headers={
                "Origin": "http://evil.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "x-amz-target,content-type",
            },
        )
        response = connection.getresponse()
        response.read()
        connection.close()
        assert response.getheader("Access-Control-Allow-Origin") is None
    finally:
        engine.stop()
    assert engine.process.returncode is not None
