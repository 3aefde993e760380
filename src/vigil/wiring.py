"""Builds the application from its settings and real AWS clients."""

from __future__ import annotations

import functools

from vigil.app import App
from vigil.clock import SystemClock
from vigil.config import Settings


@functools.cache
def settings() -> Settings:
    return Settings.from_env()


def aws_client(service: str):  # type: ignore[no-untyped-def]
    import boto3
    from botocore.config import Config

    # Fail fast and retry with jitter inside the function's own timeout.
    config = Config(
        connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3}
    )
    return boto3.client(service, config=config)


def aws_app() -> App:
    from vigil.adapters.dynamo import DynamoStore

    return App(DynamoStore(aws_client("dynamodb"), settings().table_name), SystemClock())
