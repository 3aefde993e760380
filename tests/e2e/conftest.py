"""One local runtime (moto, the event pump, the HTTP server) shared by the end-to-end tests.

It opens the front door that ``VIGIL_E2E_FRONT_DOOR`` names (the template's FrontDoor:
``HttpApi``, the default, or ``FunctionUrl``); `make test` runs the suite through both."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from vigil.bootstrap import bootstrap_operator
from vigil.clock import SystemClock
from vigil.stores.dynamo import DynamoStore


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from vigil.local.runtime import start

    state_dir = tmp_path_factory.mktemp("vigil-state")
    door = {"FrontDoor": os.environ.get("VIGIL_E2E_FRONT_DOOR", "HttpApi")}
    with start(port=0, state_dir=state_dir, parameters=door) as local:
        yield local


@pytest.fixture(scope="module")
def state(runtime: Any) -> dict[str, Any]:
    import json

    return dict(json.loads((Path(runtime.state_dir) / "local.json").read_text()))


@pytest.fixture(scope="module")
def foreign_secret(runtime: Any) -> str:
    """The operator of a second namespace on the same deployment."""
    # The runtime's environment points DynamoDB at its DynamoDB Local, with its key.
    client = boto3.client("dynamodb")
    store = DynamoStore(client, os.environ["TABLE_NAME"])
    _, secret = bootstrap_operator(store, SystemClock(), "intruders", "Mallory")
    return secret
