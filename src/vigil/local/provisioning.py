"""Create the resources of the translated template on moto, as CloudFormation would.

Only what the handlers touch is created: tables, queues, buckets, schedule groups, the
template's own schedules (the sweep's, which the event pump fires) and roles.
Functions, their event source mappings and their asynchronous invocation settings are collected
for the event pump, which runs them in-process, and a Function URL for the local HTTP server.
Everything else is listed in ``LocalDeployment.ignored``. Provisioning is idempotent, so it may
run again against the same moto (a restart within one process keeps moto's state).
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Mapping
from graphlib import TopologicalSorter
from typing import Any

from botocore.exceptions import ClientError

from vigil.kit.aws import error_code
from vigil.local.deployment import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_SECONDS,
    LocalDeployment,
    LocalEventSourceMapping,
    LocalFunction,
    LocalQueue,
    LocalTable,
)
from vigil.local.resolver import Resolver, as_text, references
from vigil.local.stack import AwsClients, LocalNames


def _found(look: Callable[[], Any], *absent: str) -> Any:
    """What ``look`` finds, or None when it fails with one of the ``absent`` codes: each
    resource is looked for before it is created, so that provisioning can run again."""
    try:
        return look()
    except Exception as error:
        if error_code(error) not in absent:
            raise
        return None


Provisioner = Callable[["_Provisioning", str, Mapping[str, Any]], None]


class _Provisioning:
    def __init__(self, cfn: Mapping[str, Any], clients: AwsClients, names: LocalNames) -> None:
        self.clients = clients
        self.names = names
        self.resolver = Resolver(cfn, names)
        self.deployment = LocalDeployment(names=names)

    def resolve(self, properties: Mapping[str, Any], *keys: str) -> dict[str, Any]:
        """Resolves only ``keys`` (all when none): the rest may need what is not local."""
        chosen = {k: v for k, v in properties.items() if not keys or k in keys}
        resolved: dict[str, Any] = self.resolver.resolve(chosen)
        return resolved

    def table(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(raw)
        ddb = self.clients.dynamodb
        name = props.get("TableName") or self.names.physical(logical_id)
        description = _found(
            lambda: ddb.describe_table(TableName=name)["Table"], "ResourceNotFoundException"
        )
        if description is None:
            description = ddb.create_table(**_create_table_request(name, props))["TableDescription"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl and _ttl_differs(ddb, name, ttl):
            ddb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={
                    "AttributeName": ttl["AttributeName"],
                    "Enabled": bool(ttl.get("Enabled", True)),
                },
            )
        recovery = props.get("PointInTimeRecoverySpecification")
        if recovery:
            try:
                ddb.update_continuous_backups(
                    TableName=name,
                    PointInTimeRecoverySpecification={
                        "PointInTimeRecoveryEnabled": bool(recovery["PointInTimeRecoveryEnabled"])
                    },
                )
            except ClientError as error:
                # DynamoDB Local keeps no backups; its database file is the only copy.
                if error_code(error) != "UnknownOperationException":
                    raise
                self.deployment.ignored.append(f"{logical_id} point-in-time recovery")
        arn = description["TableArn"]
        self.resolver.register(
            logical_id, name, Arn=arn, StreamArn=description.get("LatestStreamArn")
        )
        expiry = ttl["AttributeName"] if ttl and ttl.get("Enabled", True) else None
        self.deployment.tables[logical_id] = LocalTable(logical_id, name, arn, expiry)

    def queue(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(raw)
        sqs = self.clients.sqs
        fifo = bool(props.get("FifoQueue"))
        name = props.get("QueueName") or self.names.physical(logical_id) + (".fifo" if fifo else "")
        attributes = _queue_attributes(props)
        url = _found(
            lambda: sqs.get_queue_url(QueueName=name)["QueueUrl"],
            "AWS.SimpleQueueService.NonExistentQueue",
        )
        if url is None:
            url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        else:
            mutable = {k: v for k, v in attributes.items() if k != "FifoQueue"}
            if mutable:
                sqs.set_queue_attributes(QueueUrl=url, Attributes=mutable)
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.resolver.register(logical_id, url, Arn=arn, QueueName=name, QueueUrl=url)
        self.deployment.queues[logical_id] = LocalQueue(logical_id, name, url, arn, attributes)

    def bucket(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(
            raw,
            "BucketName",
            "PublicAccessBlockConfiguration",
            "BucketEncryption",
            "OwnershipControls",
            "VersioningConfiguration",
        )
        s3 = self.clients.s3
        # Bucket names are lower-case; CloudFormation lower-cases the names it generates too.
        name = props.get("BucketName") or self.names.physical(logical_id).lower()[:63]
        if _found(lambda: s3.head_bucket(Bucket=name), "404", "NoSuchBucket") is None:
            if self.names.region == "us-east-1":
                s3.create_bucket(Bucket=name)
            else:
                s3.create_bucket(
                    Bucket=name,
                    CreateBucketConfiguration={"LocationConstraint": self.names.region},
                )
        if "PublicAccessBlockConfiguration" in props:
            s3.put_public_access_block(
                Bucket=name, PublicAccessBlockConfiguration=props["PublicAccessBlockConfiguration"]
            )
        encryption = props.get("BucketEncryption")
        if encryption:
            rules = [
                {
                    "ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"],
                    **(
                        {"BucketKeyEnabled": rule["BucketKeyEnabled"]}
                        if "BucketKeyEnabled" in rule
                        else {}
                    ),
                }
                for rule in encryption["ServerSideEncryptionConfiguration"]
            ]
            s3.put_bucket_encryption(
                Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules}
            )
        if "OwnershipControls" in props:
            s3.put_bucket_ownership_controls(
                Bucket=name, OwnershipControls=props["OwnershipControls"]
            )
        if "VersioningConfiguration" in props:
            s3.put_bucket_versioning(
                Bucket=name,
                VersioningConfiguration={"Status": props["VersioningConfiguration"]["Status"]},
            )
        self.resolver.register(
            logical_id,
            name,
            Arn=f"arn:aws:s3:::{name}",
            DomainName=f"{name}.s3.amazonaws.com",
            RegionalDomainName=f"{name}.s3.{self.names.region}.amazonaws.com",
        )
        self.deployment.buckets[logical_id] = name

    def schedule_group(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(raw, "Name")
        scheduler = self.clients.scheduler
        name = props.get("Name") or self.names.physical(logical_id)
        arn = _found(
            lambda: scheduler.get_schedule_group(Name=name)["Arn"], "ResourceNotFoundException"
        )
        if arn is None:
            # Only when absent: moto's CreateScheduleGroup replaces an existing group and so
            # would drop the schedules armed before a restart.
            arn = scheduler.create_schedule_group(Name=name)["ScheduleGroupArn"]
        self.resolver.register(logical_id, name, Arn=arn)
        self.deployment.schedule_groups[logical_id] = name

    def schedule(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        """A schedule of the template's own (the sweep's recurring one), made as CloudFormation
        would, or brought to what the template says now; the event pump fires it."""
        props = self.resolve(raw)
        scheduler = self.clients.scheduler
        name = props.get("Name") or self.names.physical(logical_id)[:64]
        group = props.get("GroupName") or "default"
        wanted = {k: v for k, v in props.items() if k in _SCHEDULE_PROPERTIES}
        found = _found(
            lambda: scheduler.get_schedule(GroupName=group, Name=name),
            "ResourceNotFoundException",
        )
        if found is None:
            arn = scheduler.create_schedule(Name=name, GroupName=group, **wanted)["ScheduleArn"]
        elif any(found.get(key) != value for key, value in wanted.items()):
            arn = scheduler.update_schedule(Name=name, GroupName=group, **wanted)["ScheduleArn"]
        else:
            arn = found["Arn"]
        self.resolver.register(logical_id, name, Arn=arn)

    def secret(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        """A Secrets Manager secret, its value generated as CloudFormation would (random, of
        GenerateSecretString's length) when it is first made, and kept across restarts."""
        props = self.resolve(raw, "Name", "Description", "GenerateSecretString", "SecretString")
        client = self.clients.secretsmanager
        name = props.get("Name") or self.names.physical(logical_id)
        arn = _found(
            lambda: client.describe_secret(SecretId=name)["ARN"], "ResourceNotFoundException"
        )
        if arn is None:
            value = props.get("SecretString")
            if value is None:
                length = int((props.get("GenerateSecretString") or {}).get("PasswordLength", 32))
                value = secrets.token_urlsafe(length)[:length]
            arn = client.create_secret(Name=name, SecretString=value)["ARN"]
        self.resolver.register(logical_id, arn, Id=arn)
        self.deployment.secrets[logical_id] = arn

    def role(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        # Policies are not created: moto does not enforce IAM unless told to.
        props = self.resolve(raw, "RoleName", "Path", "AssumeRolePolicyDocument", "Description")
        iam = self.clients.iam
        name = props.get("RoleName") or self.names.physical(logical_id)[:64]
        role = _found(lambda: iam.get_role(RoleName=name)["Role"], "NoSuchEntity")
        if role is None:
            request: dict[str, Any] = {
                "RoleName": name,
                "AssumeRolePolicyDocument": json.dumps(props.get("AssumeRolePolicyDocument", {})),
                "Path": props.get("Path", "/"),
            }
            if props.get("Description"):
                request["Description"] = props["Description"]
            role = iam.create_role(**request)["Role"]
        self.resolver.register(logical_id, name, Arn=role["Arn"], RoleId=role["RoleId"])
        self.deployment.roles[logical_id] = role["Arn"]

    def function(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(
            raw,
            "FunctionName",
            "Handler",
            "Environment",
            "Timeout",
            "MemorySize",
            "DeadLetterConfig",
            "ReservedConcurrentExecutions",
        )
        name = props.get("FunctionName") or self.names.physical(logical_id)[:64]
        arn = self.names.arn("lambda", f"function:{name}")
        variables = (props.get("Environment") or {}).get("Variables") or {}
        self.deployment.functions[logical_id] = LocalFunction(
            logical_id=logical_id,
            name=name,
            arn=arn,
            handler=props.get("Handler", ""),
            environment={key: as_text(value) for key, value in variables.items()},
            timeout_seconds=int(props.get("Timeout", DEFAULT_TIMEOUT_SECONDS)),
            memory_mb=int(props.get("MemorySize", DEFAULT_MEMORY_MB)),
            dead_letter_arn=(props.get("DeadLetterConfig") or {}).get("TargetArn"),
            reserved_concurrency=_count(props.get("ReservedConcurrentExecutions")),
        )
        self.resolver.register(logical_id, name, Arn=arn)

    def function_url(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        """A Function URL: the local HTTP server plays it (vigil.local.server); its address
        is named as Lambda names one, for what the template builds from it."""
        url_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{self.names.stack_name}/{logical_id}").hex
        url = f"https://{url_id}.lambda-url.{self.names.region}.on.aws/"
        self.resolver.register(logical_id, url, FunctionUrl=url)
        self.deployment.function_urls[logical_id] = url

    def event_invoke_config(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(raw)
        function = self.deployment.function_by_reference(as_text(props["FunctionName"]))
        if function is None:
            self.deployment.ignored.append(f"{logical_id} (its function is not local)")
            return
        if "MaximumRetryAttempts" in props:
            function.async_retry_attempts = int(props["MaximumRetryAttempts"])
        if "MaximumEventAgeInSeconds" in props:
            function.async_max_event_age_seconds = int(props["MaximumEventAgeInSeconds"])
        on_failure = (props.get("DestinationConfig") or {}).get("OnFailure") or {}
        function.on_failure_arn = on_failure.get("Destination")
        self.resolver.register(logical_id, f"{function.name}:{props.get('Qualifier', '$LATEST')}")

    def event_source_mapping(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(
            raw,
            "EventSourceArn",
            "FunctionName",
            "BatchSize",
            "FunctionResponseTypes",
            "Enabled",
            "ScalingConfig",
        )
        function = self.deployment.function_by_reference(as_text(props["FunctionName"]))
        queue = self.deployment.queue_by_arn(as_text(props.get("EventSourceArn", "")))
        if function is None or queue is None:
            self.deployment.ignored.append(
                f"{logical_id} (AWS::Lambda::EventSourceMapping: not an SQS queue of this stack)"
            )
            return
        self.deployment.event_source_mappings.append(
            LocalEventSourceMapping(
                logical_id=logical_id,
                function=function.logical_id,
                queue=queue.logical_id,
                batch_size=int(props.get("BatchSize", 10)),
                report_batch_item_failures="ReportBatchItemFailures"
                in (props.get("FunctionResponseTypes") or []),
                enabled=props.get("Enabled", True) not in (False, "false"),
                maximum_concurrency=_count(
                    (props.get("ScalingConfig") or {}).get("MaximumConcurrency")
                ),
            )
        )
        self.resolver.register(logical_id, str(uuid.uuid5(uuid.NAMESPACE_URL, queue.arn)))


def _count(value: Any) -> int | None:
    """A whole number the template may leave out (or drop with ``AWS::NoValue``)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return int(value)


_PROVISIONERS: dict[str, Provisioner] = {
    "AWS::DynamoDB::Table": _Provisioning.table,
    "AWS::SQS::Queue": _Provisioning.queue,
    "AWS::S3::Bucket": _Provisioning.bucket,
    "AWS::Scheduler::ScheduleGroup": _Provisioning.schedule_group,
    "AWS::Scheduler::Schedule": _Provisioning.schedule,
    "AWS::IAM::Role": _Provisioning.role,
    "AWS::SecretsManager::Secret": _Provisioning.secret,
    "AWS::Lambda::Function": _Provisioning.function,
    "AWS::Lambda::Url": _Provisioning.function_url,
    "AWS::Lambda::EventInvokeConfig": _Provisioning.event_invoke_config,
    "AWS::Lambda::EventSourceMapping": _Provisioning.event_source_mapping,
}


# What CreateSchedule takes of AWS::Scheduler::Schedule's properties, beside its name and group.
_SCHEDULE_PROPERTIES = frozenset(
    {
        "Description",
        "ScheduleExpression",
        "ScheduleExpressionTimezone",
        "FlexibleTimeWindow",
        "Target",
        "State",
        "StartDate",
        "EndDate",
        "KmsKeyArn",
    }
)


def _create_table_request(name: str, props: Mapping[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "TableName": name,
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": props.get("BillingMode", "PROVISIONED"),
    }
    if "ProvisionedThroughput" in props:
        request["ProvisionedThroughput"] = _throughput(props["ProvisionedThroughput"])
    index_keys = ("IndexName", "KeySchema", "Projection")
    if props.get("GlobalSecondaryIndexes"):
        request["GlobalSecondaryIndexes"] = [
            {
                **{k: index[k] for k in index_keys},
                **(
                    {"ProvisionedThroughput": _throughput(index["ProvisionedThroughput"])}
                    if "ProvisionedThroughput" in index
                    else {}
                ),
            }
            for index in props["GlobalSecondaryIndexes"]
        ]
    if props.get("LocalSecondaryIndexes"):
        request["LocalSecondaryIndexes"] = [
            {k: index[k] for k in index_keys} for index in props["LocalSecondaryIndexes"]
        ]
    stream = props.get("StreamSpecification")
    if stream:
        request["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": stream["StreamViewType"],
        }
    sse = props.get("SSESpecification")
    if sse:
        request["SSESpecification"] = {
            "Enabled": bool(sse.get("SSEEnabled", False)),
            **({"SSEType": sse["SSEType"]} if "SSEType" in sse else {}),
            **({"KMSMasterKeyId": sse["KMSMasterKeyId"]} if "KMSMasterKeyId" in sse else {}),
        }
    if "DeletionProtectionEnabled" in props:
        request["DeletionProtectionEnabled"] = bool(props["DeletionProtectionEnabled"])
    if "TableClass" in props:
        request["TableClass"] = props["TableClass"]
    return request


def _throughput(spec: Mapping[str, Any]) -> dict[str, int]:
    return {
        "ReadCapacityUnits": int(spec["ReadCapacityUnits"]),
        "WriteCapacityUnits": int(spec["WriteCapacityUnits"]),
    }


def _ttl_differs(ddb: Any, name: str, wanted: Mapping[str, Any]) -> bool:
    current = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    enabled = current.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
    return enabled != bool(wanted.get("Enabled", True)) or (
        enabled and current.get("AttributeName") != wanted["AttributeName"]
    )


# CloudFormation's AWS::SQS::Queue properties are SQS attribute names, less these two.
_QUEUE_NON_ATTRIBUTES = frozenset({"QueueName", "Tags"})


def _queue_attributes(props: Mapping[str, Any]) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for key, value in props.items():
        if key in _QUEUE_NON_ATTRIBUTES:
            continue
        if isinstance(value, dict | list):
            attributes[key] = json.dumps(value, separators=(",", ":"))
        else:
            attributes[key] = as_text(value)
    return attributes


def provision(
    cfn: Mapping[str, Any], clients: AwsClients, names: LocalNames | None = None
) -> LocalDeployment:
    """Creates (or finds) on moto every resource of ``cfn`` that the handlers need."""
    work = _Provisioning(cfn, clients, names or LocalNames())
    present = work.resolver.present()
    graph: dict[str, set[str]] = {}
    for logical_id, resource in present.items():
        depends_on = resource.get("DependsOn") or []
        dependencies = references(resource.get("Properties") or {}) | set(
            [depends_on] if isinstance(depends_on, str) else depends_on
        )
        graph[logical_id] = dependencies & present.keys()
    for logical_id in TopologicalSorter(graph).static_order():
        resource = present[logical_id]
        provisioner = _PROVISIONERS.get(resource["Type"])
        if provisioner is None:
            work.deployment.ignored.append(f"{logical_id} ({resource['Type']})")
            continue
        provisioner(work, logical_id, resource.get("Properties") or {})
    work.deployment.ignored.sort()
    return work.deployment
