"""The local deployment: what provisioning made or found of the template's resources, and
the functions, event source mappings and invocation settings the event pump and the HTTP
server run from."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from vigil.local.resolver import TemplateError
from vigil.local.stack import LocalNames

# Lambda's own defaults for what the template may leave out.
DEFAULT_TIMEOUT_SECONDS = 3
DEFAULT_MEMORY_MB = 128
_DEFAULT_ASYNC_RETRY_ATTEMPTS = 2
_DEFAULT_ASYNC_EVENT_AGE_SECONDS = 6 * 60 * 60


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
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    memory_mb: int = DEFAULT_MEMORY_MB
    dead_letter_arn: str | None = None
    # Asynchronous invocation (how the Scheduler invokes a function): Lambda's retries and
    # failure destination, from the function's AWS::Lambda::EventInvokeConfig if any.
    async_retry_attempts: int = _DEFAULT_ASYNC_RETRY_ATTEMPTS
    async_max_event_age_seconds: int = _DEFAULT_ASYNC_EVENT_AGE_SECONDS
    on_failure_arn: str | None = None
    # ReservedConcurrentExecutions: at most this many invocations at once (None: unreserved).
    reserved_concurrency: int | None = None

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
    # ScalingConfig's MaximumConcurrency: at most this many batches of the queue at once.
    maximum_concurrency: int | None = None


@dataclass
class LocalDeployment:
    names: LocalNames
    tables: dict[str, LocalTable] = field(default_factory=dict)
    queues: dict[str, LocalQueue] = field(default_factory=dict)
    buckets: dict[str, str] = field(default_factory=dict)
    schedule_groups: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # logical id: ARN
    function_urls: dict[str, str] = field(default_factory=dict)  # logical id: URL
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
