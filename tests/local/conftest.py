"""A moto server for the local runtime's tests (behind the runtime's middleware, so that its
timetable follows the schedules), and the template provisioned on it.

Each test provisions its own stack name: moto's state is global to the process, so names, not
resets, keep tests (and any other local runtime in the process) apart.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import translated_template
from vigil.local.deployment import LocalDeployment
from vigil.local.moto_server import LocalMotoServer, Signers
from vigil.local.provisioning import provision
from vigil.local.stack import UNGUARDED_KEY, AwsClients, LocalNames
from vigil.local.timetable import Timetable


@pytest.fixture(scope="module")
def moto_server() -> Iterator[LocalMotoServer]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = LocalMotoServer(
        ip_address="127.0.0.1", port=0, verbose=False, signers=Signers(UNGUARDED_KEY)
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def moto_endpoint(moto_server: LocalMotoServer) -> str:
    host, port = moto_server.get_host_and_port()
    return f"http://{host}:{port}"


@pytest.fixture
def timetable(moto_server: LocalMotoServer) -> Timetable:
    return moto_server.timetable


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
