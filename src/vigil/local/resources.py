"""Create the resources of the translated template on moto, as CloudFormation would.

Only what the handlers touch is created: tables, queues, buckets, schedule groups and roles.
Functions, their event source mappings and their asynchronous invocation settings are collected
for the event pump, which runs them in-process. Everything else is listed in
``LocalDeployment.ignored``. Provisioning is idempotent, so it may run again against the same
moto (a restart within one process keeps moto's state).
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from typing import Any

from botocore.exceptions import ClientError

from vigil.kit.aws import error_code

DEFAULT_STACK_NAME = "vigil-local"
DEFAULT_REGION = "us-east-1"
# moto's default account; every ARN it issues carries it.
DEFAULT_ACCOUNT_ID = "123456789012"
# moto accepts any credentials; these keep a local client from ever signing with real ones.
LOCAL_ACCESS_KEY_ID = "test-only-access-key"
LOCAL_SECRET_ACCESS_KEY = "test-only-secret-key"  # noqa: S105 - not a secret

# Lambda's own defaults for what the template may leave out.
_DEFAULT_TIMEOUT_SECONDS = 3
_DEFAULT_MEMORY_MB = 128
_DEFAULT_ASYNC_RETRY_ATTEMPTS = 2
_DEFAULT_ASYNC_EVENT_AGE_SECONDS = 6 * 60 * 60

_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class TemplateError(ValueError):
    """The template uses something the local runtime cannot reproduce."""


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE: Any = _NoValue()


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
        access_key_id: str = LOCAL_ACCESS_KEY_ID,
    ) -> AwsClients:
        """Clients for the moto server at ``endpoint_url`` (and DynamoDB at
        ``dynamodb_endpoint_url`` when given), never for a real account."""
        import boto3

        session = boto3.session.Session(
            aws_access_key_id=access_key_id,
            aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
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


@dataclass(frozen=True)
class LocalTable:
    logical_id: str
    name: str
    arn: str
    # The attribute TTL reads, when enabled: the pump deletes the items it has expired.
    ttl_attribute: str | None = None


@dataclass(frozen=True)
class LocalQueue:
    logical_id: str
    name: str
    url: str
    arn: str
    attributes: Mapping[str, str]


@dataclass
class LocalFunction:
    logical_id: str
    name: str
    arn: str
    handler: str
    environment: dict[str, str]
    timeout_seconds: int = _DEFAULT_TIMEOUT_SECONDS
    memory_mb: int = _DEFAULT_MEMORY_MB
    dead_letter_arn: str | None = None
    # Asynchronous invocation (how the Scheduler invokes a function): Lambda's retries and
    # failure destination, from the function's AWS::Lambda::EventInvokeConfig if any.
    async_retry_attempts: int = _DEFAULT_ASYNC_RETRY_ATTEMPTS
    async_max_event_age_seconds: int = _DEFAULT_ASYNC_EVENT_AGE_SECONDS
    on_failure_arn: str | None = None

    def context(self, request_id: str | None = None) -> LambdaContext:
        return LambdaContext(
            function_name=self.name,
            invoked_function_arn=self.arn,
            memory_limit_in_mb=self.memory_mb,
            timeout_seconds=self.timeout_seconds,
            aws_request_id=request_id or str(uuid.uuid4()),
        )


@dataclass
class LambdaContext:
    """What Lambda passes as ``context``; the timeout is reported, not enforced."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_seconds: int
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic, repr=False)

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/[{self.function_version}]{self.aws_request_id}"

    def get_remaining_time_in_millis(self) -> int:
        elapsed = time.monotonic() - self._started
        return max(0, int((self.timeout_seconds - elapsed) * 1000))


@dataclass(frozen=True)
class LocalEventSourceMapping:
    logical_id: str
    function: str  # logical id of the function
    queue: str  # logical id of the queue
    batch_size: int
    report_batch_item_failures: bool
    enabled: bool = True


@dataclass
class LocalDeployment:
    names: LocalNames
    tables: dict[str, LocalTable] = field(default_factory=dict)
    queues: dict[str, LocalQueue] = field(default_factory=dict)
    buckets: dict[str, str] = field(default_factory=dict)
    schedule_groups: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # logical id: ARN
    functions: dict[str, LocalFunction] = field(default_factory=dict)
    event_source_mappings: list[LocalEventSourceMapping] = field(default_factory=list)
    # "LogicalId (Type)" of every resource that exists in AWS but not locally.
    ignored: list[str] = field(default_factory=list)

    def queue_by_arn(self, arn: str) -> LocalQueue | None:
        return next((q for q in self.queues.values() if q.arn == arn), None)

    def function_by_reference(self, reference: str) -> LocalFunction | None:
        """The function a name, an ARN, or either with a version or alias qualifier names."""
        if reference.startswith("arn:"):
            parts = reference.split(":")
            name = parts[6] if len(parts) > 6 else ""
        else:
            name = reference.split(":", 1)[0]
        return next((f for f in self.functions.values() if f.name == name), None)

    def environment(self) -> dict[str, str]:
        """The one environment every local function runs in, as they share a process."""
        merged: dict[str, str] = {}
        for function in self.functions.values():
            for key, value in function.environment.items():
                if merged.setdefault(key, value) != value:
                    raise TemplateError(
                        f"functions disagree on {key}: they share one process locally, "
                        "so their environments must agree"
                    )
        return merged


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise TemplateError(f"expected a scalar, got {value!r}")


def _references(value: Any) -> set[str]:
    """Names that ``value`` refers to through Ref, Fn::GetAtt and Fn::Sub."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= _references(item)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                found.add(arg)
            elif key == "Fn::GetAtt":
                found.add(arg.split(".", 1)[0] if isinstance(arg, str) else str(arg[0]))
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                for name in _SUB_VARIABLE.findall(text):
                    if not name.startswith("!"):
                        found.add(name.split(".", 1)[0])
                if isinstance(arg, list) and len(arg) > 1:
                    found |= _references(arg[1])
            else:
                found |= _references(arg)
    return found


class Resolver:
    """Evaluates CloudFormation intrinsic functions against the local stack."""

    def __init__(self, cfn: Mapping[str, Any], names: LocalNames) -> None:
        self.cfn = cfn
        self.names = names
        self.refs: dict[str, Any] = {}
        self.attributes: dict[str, dict[str, Any]] = {}
        self._conditions: dict[str, bool] = {}
        self._parameters = self._parameter_values()

    def _parameter_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        declared = self.cfn.get("Parameters") or {}
        unknown = set(self.names.parameters) - set(declared)
        if unknown:
            raise TemplateError(f"unknown parameters: {', '.join(sorted(unknown))}")
        for name, spec in declared.items():
            if name in self.names.parameters:
                raw: Any = self.names.parameters[name]
            elif "Default" in spec:
                raw = spec["Default"]
            else:
                raise TemplateError(f"parameter {name} has no default: give it a value")
            allowed = spec.get("AllowedValues")
            if allowed is not None and _text(raw) not in [_text(a) for a in allowed]:
                raise TemplateError(f"parameter {name}={raw!r} is not one of {allowed}")
            kind = str(spec.get("Type", "String"))
            if kind.startswith("AWS::SSM::"):
                raise TemplateError(f"parameter {name}: SSM parameters are not available locally")
            if kind == "CommaDelimitedList" or kind.startswith("List<"):
                values[name] = [part.strip() for part in _text(raw).split(",")] if raw else []
            else:
                values[name] = _text(raw)
        return values

    def register(self, logical_id: str, ref: Any, **attributes: Any) -> None:
        self.refs[logical_id] = ref
        self.attributes[logical_id] = attributes

    def pseudo(self, name: str) -> Any:
        names = self.names
        pseudo: dict[str, Any] = {
            "AWS::Region": names.region,
            "AWS::AccountId": names.account_id,
            "AWS::Partition": "aws",
            "AWS::StackName": names.stack_name,
            "AWS::StackId": names.arn(
                "cloudformation",
                f"stack/{names.stack_name}/{uuid.uuid5(uuid.NAMESPACE_URL, names.stack_name)}",
            ),
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NotificationARNs": [],
            "AWS::NoValue": NO_VALUE,
        }
        if name not in pseudo:
            raise TemplateError(f"unknown pseudo parameter {name}")
        return pseudo[name]

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        if name in self._parameters:
            return self._parameters[name]
        if name in self.refs:
            return self.refs[name]
        if name in (self.cfn.get("Resources") or {}):
            # A resource that has no local counterpart still has a stable physical id.
            return self.names.physical(name)
        raise TemplateError(f"Ref to unknown name {name}")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        attributes = self.attributes.get(logical_id, {})
        if attribute not in attributes:
            raise TemplateError(f"{logical_id}.{attribute} is not available locally")
        return attributes[attribute]

    def present(self) -> dict[str, Any]:
        """The template's resources whose condition holds: those a deploy would create."""
        resources: Mapping[str, Any] = self.cfn.get("Resources") or {}
        return {
            logical_id: resource
            for logical_id, resource in resources.items()
            if "Condition" not in resource or self.condition(resource["Condition"])
        }

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions = self.cfn.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"unknown condition {name}")
            self._conditions[name] = self._truth(conditions[name])
        return self._conditions[name]

    def _truth(self, expression: Any) -> bool:
        if isinstance(expression, dict) and len(expression) == 1:
            ((key, arg),) = expression.items()
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::Equals":
                left, right = (self.resolve(side) for side in arg)
                return bool(_comparable(left) == _comparable(right))
            if key == "Fn::Not":
                return not self._truth(arg[0])
            if key == "Fn::And":
                return all(self._truth(part) for part in arg)
            if key == "Fn::Or":
                return any(self._truth(part) for part in arg)
        resolved = self.resolve(expression)
        if isinstance(resolved, bool):
            return resolved
        raise TemplateError(f"not a condition: {expression!r}")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [item for item in map(self.resolve, value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key.startswith("Fn::"):
                return self._function(key, arg)
        resolved = {key: self.resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not NO_VALUE}

    def _function(self, key: str, arg: Any) -> Any:
        handlers: dict[str, Callable[[Any], Any]] = {
            "Fn::GetAtt": self._fn_get_att,
            "Fn::Sub": self._fn_sub,
            "Fn::Join": lambda a: _text(a[0]).join(_text(p) for p in self.resolve(a[1])),
            "Fn::If": lambda a: self.resolve(a[1] if self.condition(a[0]) else a[2]),
            "Fn::Select": lambda a: self.resolve(a[1])[int(self.resolve(a[0]))],
            "Fn::Split": lambda a: _text(self.resolve(a[1])).split(_text(a[0])),
            "Fn::Base64": lambda a: base64.b64encode(_text(self.resolve(a)).encode()).decode(),
            "Fn::FindInMap": self._fn_find_in_map,
            "Fn::GetAZs": lambda a: [f"{self.names.region}{zone}" for zone in "abc"],
            "Fn::Equals": lambda a: self._truth({key: a}),
            "Fn::Not": lambda a: self._truth({key: a}),
            "Fn::And": lambda a: self._truth({key: a}),
            "Fn::Or": lambda a: self._truth({key: a}),
        }
        if key not in handlers:
            raise TemplateError(f"{key} is not supported locally")
        return handlers[key](arg)

    def _fn_get_att(self, arg: Any) -> Any:
        if isinstance(arg, str):
            logical_id, attribute = arg.split(".", 1)
        else:
            logical_id, attribute = arg[0], self.resolve(arg[1])
        return self.get_att(logical_id, attribute)

    def _fn_find_in_map(self, arg: Any) -> Any:
        name, top, second = (_text(self.resolve(part)) for part in arg[:3])
        try:
            return self.cfn["Mappings"][name][top][second]
        except KeyError:
            raise TemplateError(f"Fn::FindInMap: no {name}/{top}/{second}") from None

    def _fn_sub(self, arg: Any) -> str:
        if isinstance(arg, str):
            text, variables = arg, {}
        else:
            text, variables = arg[0], self.resolve(arg[1] if len(arg) > 1 else {})

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return _text(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return _text(self.get_att(logical_id, attribute))
            return _text(self.ref(name))

        return _SUB_VARIABLE.sub(substitute, text)


def _comparable(value: Any) -> Any:
    return _text(value) if isinstance(value, bool | int | float) else value


def _is_client_error(error: Exception, *codes: str) -> bool:
    return error_code(error) in codes


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
        try:
            description = ddb.describe_table(TableName=name)["Table"]
        except Exception as error:
            if not _is_client_error(error, "ResourceNotFoundException"):
                raise
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
        try:
            url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        except Exception as error:
            if not _is_client_error(error, "AWS.SimpleQueueService.NonExistentQueue"):
                raise
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
        try:
            s3.head_bucket(Bucket=name)
        except Exception as error:
            if not _is_client_error(error, "404", "NoSuchBucket"):
                raise
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
        try:
            arn = scheduler.get_schedule_group(Name=name)["Arn"]
        except Exception as error:
            if not _is_client_error(error, "ResourceNotFoundException"):
                raise
            # Only when absent: moto's CreateScheduleGroup replaces an existing group and so
            # would drop the schedules armed before a restart.
            arn = scheduler.create_schedule_group(Name=name)["ScheduleGroupArn"]
        self.resolver.register(logical_id, name, Arn=arn)
        self.deployment.schedule_groups[logical_id] = name

    def secret(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        """A Secrets Manager secret, its value generated as CloudFormation would (random, of
        GenerateSecretString's length) when it is first made, and kept across restarts."""
        props = self.resolve(raw, "Name", "Description", "GenerateSecretString", "SecretString")
        client = self.clients.secretsmanager
        name = props.get("Name") or self.names.physical(logical_id)
        try:
            arn = client.describe_secret(SecretId=name)["ARN"]
        except Exception as error:
            if not _is_client_error(error, "ResourceNotFoundException"):
                raise
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
        try:
            role = iam.get_role(RoleName=name)["Role"]
        except Exception as error:
            if not _is_client_error(error, "NoSuchEntity"):
                raise
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
        )
        name = props.get("FunctionName") or self.names.physical(logical_id)[:64]
        arn = self.names.arn("lambda", f"function:{name}")
        variables = (props.get("Environment") or {}).get("Variables") or {}
        self.deployment.functions[logical_id] = LocalFunction(
            logical_id=logical_id,
            name=name,
            arn=arn,
            handler=props.get("Handler", ""),
            environment={key: _text(value) for key, value in variables.items()},
            timeout_seconds=int(props.get("Timeout", _DEFAULT_TIMEOUT_SECONDS)),
            memory_mb=int(props.get("MemorySize", _DEFAULT_MEMORY_MB)),
            dead_letter_arn=(props.get("DeadLetterConfig") or {}).get("TargetArn"),
        )
        self.resolver.register(logical_id, name, Arn=arn)

    def event_invoke_config(self, logical_id: str, raw: Mapping[str, Any]) -> None:
        props = self.resolve(raw)
        function = self.deployment.function_by_reference(_text(props["FunctionName"]))
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
            raw, "EventSourceArn", "FunctionName", "BatchSize", "FunctionResponseTypes", "Enabled"
        )
        function = self.deployment.function_by_reference(_text(props["FunctionName"]))
        queue = self.deployment.queue_by_arn(_text(props.get("EventSourceArn", "")))
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
            )
        )
        self.resolver.register(logical_id, str(uuid.uuid5(uuid.NAMESPACE_URL, queue.arn)))


_PROVISIONERS: dict[str, Provisioner] = {
    "AWS::DynamoDB::Table": _Provisioning.table,
    "AWS::SQS::Queue": _Provisioning.queue,
    "AWS::S3::Bucket": _Provisioning.bucket,
    "AWS::Scheduler::ScheduleGroup": _Provisioning.schedule_group,
    "AWS::IAM::Role": _Provisioning.role,
    "AWS::SecretsManager::Secret": _Provisioning.secret,
    "AWS::Lambda::Function": _Provisioning.function,
    "AWS::Lambda::EventInvokeConfig": _Provisioning.event_invoke_config,
    "AWS::Lambda::EventSourceMapping": _Provisioning.event_source_mapping,
}


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
            attributes[key] = _text(value)
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
        dependencies = _references(resource.get("Properties") or {}) | set(
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
