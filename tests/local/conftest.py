"""A moto server for the local runtime's tests, and the template provisioned on it.

Each test provisions its own stack name: moto's state is global to the process, so names, not
resets, keep tests (and any other local runtime in the process) apart.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from tests.conftest import translated_template
from vigil.local.deployment import LocalDeployment
from vigil.local.provisioning import provision
from vigil.local.stack import AwsClients, LocalNames


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def clients(moto_endpoint: str) -> AwsClients:
    return AwsClients.local(moto_endpoint)


@pytest.fixture
def names() -> LocalNames:
    return LocalNames(stack_name=f"t{uuid.uuid4().hex[:10]}")


@pytest.fixture
def cfn() -> dict[str, Any]:
    return translated_template()


@pytest.fixture
def deployment(cfn: dict[str, Any], clients: AwsClients, names: LocalNames) -> LocalDeployment:
    return provision(cfn, clients, names)
