"""Where the local stack lives (its name, region, account and parameter values) and the AWS
clients that reach its stand-in: moto, and DynamoDB Local, never a real account."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vigil.local.signatures import AccessKey

DEFAULT_STACK_NAME = "vigil-local"
DEFAULT_REGION = "us-east-1"
# moto's default account; every ARN it issues carries it.
DEFAULT_ACCOUNT_ID = "123456789012"
# A moto that the runtime does not guard accepts any credentials; these keep a client of one
# from ever signing with real ones.
LOCAL_ACCESS_KEY_ID = "test-only-access-key"
LOCAL_SECRET_ACCESS_KEY = "test-only-secret-key"  # noqa: S105 - not a secret
UNGUARDED_KEY = AccessKey(LOCAL_ACCESS_KEY_ID, LOCAL_SECRET_ACCESS_KEY)


@dataclass(frozen=True)
class LocalNames:
    """Where the local stack lives and the values its parameters take."""

    stack_name: str = DEFAULT_STACK_NAME
    region: str = DEFAULT_REGION
    account_id: str = DEFAULT_ACCOUNT_ID
    parameters: Mapping[str, str] = field(default_factory=dict)

    def physical(self, logical_id: str) -> str:
        return f"{self.stack_name}-{logical_id}"

    def arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account_id}:{resource}"


@dataclass(frozen=True)
class AwsClients:
    dynamodb: Any
    sqs: Any
    s3: Any
    scheduler: Any
    iam: Any
    secretsmanager: Any
    sesv2: Any

    @classmethod
    def local(
        cls,
        endpoint_url: str,
        region: str = DEFAULT_REGION,
        dynamodb_endpoint_url: str | None = None,
        key: AccessKey = UNGUARDED_KEY,
    ) -> AwsClients:
        """Clients for the moto server at ``endpoint_url`` (and DynamoDB at
        ``dynamodb_endpoint_url`` when given) that sign with ``key``, never for a real account."""
        import boto3

        session = boto3.session.Session(
            aws_access_key_id=key.id,
            aws_secret_access_key=key.secret,
            region_name=region,
        )

        def client(service: str, url: str = endpoint_url) -> Any:
            return session.client(service, endpoint_url=url)

        return cls(
            dynamodb=client("dynamodb", dynamodb_endpoint_url or endpoint_url),
            sqs=client("sqs"),
            s3=client("s3"),
            scheduler=client("scheduler"),
            iam=client("iam"),
            secretsmanager=client("secretsmanager"),
            sesv2=client("sesv2"),
        )
