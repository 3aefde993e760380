"""Shared fixtures: an injected clock, both stores, principals to call tools as, and the
in-memory world of tests/liveness_support.py with the agents that beat and watch in it."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.liveness_support import World
from tests.support import Tenant, app_on, serialise_moto_dynamodb
from vigil.app import App
from vigil.clock import ManualClock
from vigil.store import Store
from vigil.stores.dynamo import DynamoStore
from vigil.stores.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[1]

serialise_moto_dynamodb()


@functools.cache
def translated_template() -> dict[str, Any]:
    from vigil.infra.template import translate

    return translate(ROOT / "template.yaml")


def create_tables_from_template(client: Any) -> dict[str, str]:
    """Tables with the key schema deployed by template.yaml, so tests cannot drift from it."""
    names = {}
    for logical_id, resource in translated_template()["Resources"].items():
        if resource["Type"] != "AWS::DynamoDB::Table":
            continue
        props = resource["Properties"]
        name = f"test-{logical_id}"
        client.create_table(
            TableName=name,
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
            **(
                {"GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"]}
                if "GlobalSecondaryIndexes" in props
                else {}
            ),
        )
        names[logical_id] = name
    return names


@pytest.fixture
def aws() -> Iterator[None]:
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL"]}
    os.environ.update(env)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def dynamo_store(aws: None) -> DynamoStore:
    client = boto3.client("dynamodb", region_name="us-east-1")
    tables = create_tables_from_template(client)
    return DynamoStore(client, tables["VigilTable"])


@pytest.fixture(params=["memory", "dynamo"])
def store(request: pytest.FixtureRequest) -> Store:
    """Each contract test runs against the fake and against DynamoDB on moto."""
    if request.param == "memory":
        return MemoryStore()
    return request.getfixturevalue("dynamo_store")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def memory_app(clock: ManualClock) -> App:
    return app_on(MemoryStore(), clock)


@pytest.fixture
def tenant(memory_app: App, clock: ManualClock) -> Tenant:
    return Tenant(memory_app, clock, "acme")


@pytest.fixture
def other_tenant(memory_app: App, clock: ManualClock) -> Tenant:
    return Tenant(memory_app, clock, "globex")


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


@pytest.fixture
def agent(world: World) -> tuple[str, str]:
    """The worker agent: its principal id and secret."""
    return world.tenant.register(name="worker")


@pytest.fixture
def watcher(world: World) -> tuple[str, str]:
    """The agent whose mailbox receives the alerts."""
    return world.tenant.register(name="supervisor")
