"""The deployable template: lint clean in both forms, and secure by construction.

The structural tests read the CloudFormation that SAM expands the template to,
so they see what would really be deployed (generated roles, policies, event
source mappings), and they fail if a security property regresses.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vigil.config import REQUIRED
from vigil.entrypoints.sweep import SWEEP_EVENT
from vigil.errors import HTTP_STATUS, ErrorCode, VigilError
from vigil.infra.template import load, translate
from vigil.local.resolver import NO_VALUE, Resolver
from vigil.local.stack import LocalNames
from vigil.observability import Metrics
from vigil.switches.dynamo import SWEEP_INDEX

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template.yaml"

# Actions that AWS offers only on Resource "*" (no resource-level scoping).
RESOURCE_STAR_ALLOWED = frozenset({"xray:PutTraceSegments", "xray:PutTelemetryRecords"})

# AWS managed policies a role may carry. Anything else (for instance the SQS
# execution role, which grants receive/delete on every queue) is a regression.
MANAGED_POLICIES_ALLOWED = frozenset(
    {"service-role/AWSLambdaBasicExecutionRole", "AWSXrayWriteOnlyAccess"}
)

# The contract between the template and the code that runs in the functions.
FUNCTION_ENV = frozenset(
    {
        *REQUIRED,
        "ALLOWED_ORIGINS",
        "VIGIL_ENV",
        "VIGIL_LOG_LEVEL",
    }
)

PSEUDO_PARAMETERS = frozenset(
    {
        "AWS::AccountId",
        "AWS::NotificationARNs",
        "AWS::NoValue",
        "AWS::Partition",
        "AWS::Region",
        "AWS::StackId",
        "AWS::StackName",
        "AWS::URLSuffix",
    }
)


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def cfn() -> dict[str, Any]:
    return translate(TEMPLATE)


@pytest.fixture(scope="module")
def sam() -> dict[str, Any]:
    return load(TEMPLATE)


def resources_of(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == resource_type
    }


def props(resource: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = resource.get("Properties", {})
    return properties


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def getatt_target(value: Any) -> str | None:
    """Logical id named by ``{"Fn::GetAtt": [id, attr]}``, else None."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return str(target[0] if isinstance(target, list) else target.split(".", 1)[0])
    return None


def ref_target(value: Any) -> str | None:
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return str(value["Ref"])
    return None


def role_statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every permission statement granted through a role or a policy resource."""
    for logical_id, role in resources_of(template, "AWS::IAM::Role").items():
        for policy in props(role).get("Policies", []):
            for statement in as_list(policy["PolicyDocument"]["Statement"]):
                yield logical_id, statement
    for policy_type in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for logical_id, policy in resources_of(template, policy_type).items():
            for statement in as_list(props(policy)["PolicyDocument"]["Statement"]):
                yield logical_id, statement


def denies_insecure_transport(statement: dict[str, Any]) -> bool:
    condition = statement.get("Condition", {}).get("Bool", {})
    return (
        statement.get("Effect") == "Deny"
        and statement.get("Principal") in ("*", {"AWS": "*"})
        and str(condition.get("aws:SecureTransport")).lower() == "false"
    )


def references(value: Any) -> Iterator[str]:
    """Logical ids (and parameters) that a property value depends on."""
    if isinstance(value, dict):
        if set(value) == {"Ref"} and isinstance(value["Ref"], str):
            yield value["Ref"]
            return
        if "Fn::GetAtt" in value:
            target = getatt_target(value)
            if target:
                yield target
            return
        if "Fn::Sub" in value:
            sub = value["Fn::Sub"]
            text, variables = (sub[0], sub[1]) if isinstance(sub, list) else (sub, {})
            for name in re.findall(r"\$\{([^!}][^}]*)\}", text):
                name = name.split(".", 1)[0]
                if name not in variables:
                    yield name
            yield from references(variables)
            return
        for item in value.values():
            yield from references(item)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)


def resolver_for(
    template: dict[str, Any], region: str = "us-east-1", **parameters: str
) -> Resolver:
    """Evaluates the template's conditions and intrinsics as a deploy with these values would."""
    return Resolver(template, LocalNames(region=region, parameters=parameters))


def chosen(resolver: Resolver, value: Any) -> Any:
    """``value`` with each Fn::If replaced by the branch its condition picks, and every other
    intrinsic left as it is (to read which resource a property names)."""
    if isinstance(value, list):
        return [chosen(resolver, item) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::If"}:
        condition, when_true, when_false = value["Fn::If"]
        return chosen(resolver, when_true if resolver.condition(condition) else when_false)
    return {key: chosen(resolver, item) for key, item in value.items()}


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, **kwargs
    )


def cfn_lint(path: Path) -> None:
    from cfnlint.api import lint_file

    # Errors and warnings both fail: cfn-lint warnings here are real defects
    # (unused conditions, missing policies) rather than style.
    matches = lint_file(path)
    report = "\n".join(f"{path.name}:{match.linenumber}: {match}" for match in matches)
    assert not matches, f"cfn-lint:\n{report}"


# ---------------------------------------------------------------- lint


def test_cfn_lint_sam_template() -> None:
    cfn_lint(TEMPLATE)


# Each front door, as a deploy would choose it: the template's conditions keep one door's
# resources, and each door's expansion must lint and deploy on its own.
DOORS = {
    "HttpApi": {"FrontDoor": "HttpApi"},
    "FunctionUrl": {"FrontDoor": "FunctionUrl", "ApiReservedConcurrency": "50"},
}


@pytest.fixture(scope="module", params=sorted(DOORS))
def door(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def cfn_of_door(door: str) -> dict[str, Any]:
    return translate(TEMPLATE, DOORS[door])


def test_cfn_lint_translated_template(cfn_of_door: dict[str, Any], tmp_path: Path) -> None:
    # Linting the expanded form is what catches a dependency cycle between
    # generated resources (E3004) that the SAM form hides.
    translated = tmp_path / "template.json"
    translated.write_text(json.dumps(cfn_of_door, indent=2), encoding="utf-8")
    cfn_lint(translated)


def test_sam_validate_lint() -> None:
    configured = os.environ.get("VIGIL_SAM_CLI", str(REPO / ".venv-sam" / "bin" / "sam"))
    sam_cli = shutil.which(configured) if os.sep not in configured else configured
    if not sam_cli or not Path(sam_cli).is_file():
        pytest.fail(
            f"SAM CLI not found at {configured}: run `make tools` to install it "
            "(or point VIGIL_SAM_CLI at a `sam` executable)"
        )
    env = {
        **os.environ,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "SAM_CLI_TELEMETRY": "0",
    }
    result = run(
        [sam_cli, "validate", "--lint", "--template", str(TEMPLATE)],
        cwd=REPO,
        env=env,
    )
    assert result.returncode == 0, f"sam validate --lint:\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize(
    "parameters",
    [
        {"EnableSnapStart": "false", "DeletionProtection": "false"},
        {"LogLevel": "DEBUG", "AllowedOrigins": "https://a.example,https://b.example"},
        {"ApiBurstLimit": "50", "ApiRateLimit": "25", "EdgeProtection": "cloudfront-waf"},
        {"ApiAccessLog": "off", "PlatformLogLevel": "INFO", "Tracing": "PassThrough"},
        {**DOORS["FunctionUrl"], "EdgeProtection": "cloudfront-waf"},
    ],
)
def test_translates_with_non_default_parameters(parameters: dict[str, str]) -> None:
    assert resources_of(translate(TEMPLATE, parameters), "AWS::Lambda::Function")


def test_samconfig_overrides_name_template_parameters(sam: dict[str, Any]) -> None:
    config = tomllib.loads((REPO / "samconfig.toml").read_text(encoding="utf-8"))
    overrides = config["default"]["deploy"]["parameters"]["parameter_overrides"]
    for override in shlex.split(overrides):
        name, value = override.split("=", 1)
        spec = sam["Parameters"][name]
        assert value in [str(allowed) for allowed in spec.get("AllowedValues", [value])], name


def test_no_dependency_cycle(cfn_of_door: dict[str, Any], door: str) -> None:
    # Among the resources the door's deploy creates: a cycle that only the other door's
    # resources would close is still a cycle for that door.
    resources = resolver_for(cfn_of_door, **DOORS[door]).present()
    graph: dict[str, set[str]] = {}
    for logical_id, resource in resources.items():
        deps = {name for name in references(resource.get("Properties", {})) if name in resources}
        deps.update(as_list(resource.get("DependsOn", [])))
        graph[logical_id] = deps

    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        if node in visiting:
            cycle = [*visiting[visiting.index(node) :], node]
            pytest.fail("dependency cycle: " + " -> ".join(cycle))
        visiting.append(node)
        for dep in sorted(graph[node]):
            visit(dep)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)


def test_every_reference_resolves(cfn: dict[str, Any]) -> None:
    known = set(cfn["Resources"]) | set(cfn.get("Parameters", {})) | PSEUDO_PARAMETERS
    unknown = {
        name
        for resource in cfn["Resources"].values()
        for name in references(resource.get("Properties", {}))
        if name not in known
    }
    assert not unknown


FRONT_DOOR_TYPES = {
    "HttpApi": {
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Stage",
        "AWS::Logs::LogGroup:access",
        "AWS::Lambda::Permission:apigateway.amazonaws.com",
    },
    "FunctionUrl": {
        "AWS::Lambda::Url",
        "AWS::Lambda::Permission:*",
    },
}


def front_door_resources(resources: dict[str, Any]) -> set[str]:
    """The kinds of front-door resource among ``resources``."""
    kinds = set()
    for logical_id, resource in resources.items():
        kind = resource["Type"]
        if kind in ("AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage", "AWS::Lambda::Url"):
            kinds.add(kind)
        elif kind == "AWS::Lambda::Permission":
            kinds.add(f"{kind}:{props(resource)['Principal']}")
        elif logical_id == "HttpApiAccessLogGroup":
            kinds.add(f"{kind}:access")
    return kinds


def test_exactly_one_front_door_exists(cfn_of_door: dict[str, Any], door: str) -> None:
    present = resolver_for(cfn_of_door, **DOORS[door]).present()
    assert front_door_resources(present) == FRONT_DOOR_TYPES[door]


def test_neither_door_adds_cors_headers_of_its_own(cfn: dict[str, Any]) -> None:
    """The function answers CORS from ALLOWED_ORIGINS behind either door: a door that added
    its own headers would send them twice."""
    api = props(cfn["Resources"]["HttpApi"])
    assert "CorsConfiguration" not in api
    assert "x-amazon-apigateway-cors" not in api["Body"]
    assert "Cors" not in props(cfn["Resources"]["ApiFunctionUrl"])


def test_the_front_door_is_the_http_api_by_default(sam: dict[str, Any]) -> None:
    assert sam["Parameters"]["FrontDoor"]["Default"] == "HttpApi"
    assert sam["Parameters"]["FrontDoor"]["AllowedValues"] == ["HttpApi", "FunctionUrl"]


# ---------------------------------------------------------------- IAM


def test_no_wildcard_grants(cfn: dict[str, Any]) -> None:
    problems = []
    for owner, statement in role_statements(cfn):
        if statement.get("Effect") != "Allow":
            continue
        if "NotAction" in statement or "NotResource" in statement:
            problems.append(f"{owner}: NotAction/NotResource in an Allow statement")
            continue
        actions = [str(action) for action in as_list(statement["Action"])]
        resources = as_list(statement["Resource"])
        for action in actions:
            if action == "*" or action.endswith(":*"):
                problems.append(f"{owner}: wildcard action {action}")
        if "*" in resources:
            broad = sorted(set(actions) - RESOURCE_STAR_ALLOWED)
            if broad:
                problems.append(f"{owner}: Resource '*' for {broad}")
    assert not problems, "\n".join(problems)


def test_managed_policies_are_allow_listed(cfn: dict[str, Any]) -> None:
    for logical_id, role in resources_of(cfn, "AWS::IAM::Role").items():
        for arn in props(role).get("ManagedPolicyArns", []):
            assert isinstance(arn, str), f"{logical_id}: managed policy {arn!r}"
            name = arn.split(":policy/", 1)[1]
            assert name in MANAGED_POLICIES_ALLOWED, f"{logical_id}: managed policy {name}"


def test_pass_role_is_limited_to_scheduler(cfn: dict[str, Any]) -> None:
    found = False
    for owner, statement in role_statements(cfn):
        if "iam:PassRole" not in as_list(statement.get("Action", [])):
            continue
        found = True
        assert getatt_target(statement["Resource"]) == "SchedulerRole", owner
        passed_to = statement["Condition"]["StringEquals"]["iam:PassedToService"]
        assert passed_to == "scheduler.amazonaws.com", owner
    assert found


def test_scheduler_role(cfn: dict[str, Any]) -> None:
    role = props(cfn["Resources"]["SchedulerRole"])
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
    # Only schedules in the stack's own group may use the role.
    assert getatt_target(trust["Condition"]["ArnEquals"]["aws:SourceArn"]) == "AlarmScheduleGroup"

    granted: dict[str, Any] = {}
    for owner, statement in role_statements(cfn):
        if owner == "SchedulerRole":
            for action in as_list(statement["Action"]):
                granted[action] = statement["Resource"]
    assert set(granted) == {"lambda:InvokeFunction", "sqs:SendMessage"}
    assert granted["lambda:InvokeFunction"] == [
        {
            "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
            f":function:${{AWS::StackName}}-{name}"
        }
        for name in ("alarm", "notify")
    ]
    assert [getatt_target(q) for q in granted["sqs:SendMessage"]] == ["AlarmDLQ", "NotifyDLQ"]


def test_alarm_function_arn_matches_its_name(cfn: dict[str, Any]) -> None:
    # The ARN is built by hand to avoid a cycle, so it must track the name.
    function = props(cfn["Resources"]["AlarmFunction"])
    assert function["FunctionName"] == {"Fn::Sub": "${AWS::StackName}-alarm"}
    built = function["Environment"]["Variables"]["ALARM_FUNCTION_ARN"]["Fn::Sub"]
    assert built.endswith(":function:${AWS::StackName}-alarm")


# ---------------------------------------------------------------- storage


def test_buckets_are_private_and_encrypted(cfn: dict[str, Any]) -> None:
    buckets = resources_of(cfn, "AWS::S3::Bucket")
    assert buckets
    policies = resources_of(cfn, "AWS::S3::BucketPolicy").values()
    for logical_id, bucket in buckets.items():
        properties = props(bucket)
        block = properties["PublicAccessBlockConfiguration"]
        assert block == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, logical_id
        rules = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        algorithms = {rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] for rule in rules}
        assert algorithms <= {"AES256", "aws:kms", "aws:kms:dsse"}, logical_id
        assert algorithms, logical_id
        assert properties["OwnershipControls"]["Rules"] == [
            {"ObjectOwnership": "BucketOwnerEnforced"}
        ]
        tls_resources = [
            statement["Resource"]
            for policy in policies
            if ref_target(props(policy)["Bucket"]) == logical_id
            for statement in as_list(props(policy)["PolicyDocument"]["Statement"])
            if denies_insecure_transport(statement)
        ]
        assert tls_resources, f"{logical_id}: no TLS-only bucket policy"
        bucket_arn = {"Fn::GetAtt": [logical_id, "Arn"]}
        objects_arn = {"Fn::Sub": f"${{{logical_id}.Arn}}/*"}
        assert any(
            bucket_arn in as_list(resources) and objects_arn in as_list(resources)
            for resources in tls_resources
        ), f"{logical_id}: TLS-only policy must cover the bucket and its objects"


def test_attachment_bucket_expires_staged_uploads(cfn: dict[str, Any]) -> None:
    rules = props(cfn["Resources"]["AttachmentsBucket"])["LifecycleConfiguration"]["Rules"]
    # Drafts under staged/, and what presigned forms put under uploads/ (a form works for an
    # hour, after its upload's finish too, and nothing reads what it puts then).
    for prefix in ("staged/", "uploads/"):
        assert any(
            rule.get("Prefix") == prefix and rule.get("ExpirationInDays") == 1 for rule in rules
        ), prefix
    assert any(
        rule.get("AbortIncompleteMultipartUpload", {}).get("DaysAfterInitiation") == 1
        for rule in rules
    )


def test_the_api_function_deletes_only_what_upload_forms_put(cfn: dict[str, Any]) -> None:
    deletes = [
        (owner, statement["Resource"])
        for owner, statement in role_statements(cfn)
        if statement.get("Effect") == "Allow" and "s3:DeleteObject" in as_list(statement["Action"])
    ]
    assert deletes == [("ApiFunctionRole", {"Fn::Sub": "${AttachmentsBucket.Arn}/uploads/*"})]


def test_table(cfn: dict[str, Any], sam: dict[str, Any]) -> None:
    (table,) = resources_of(cfn, "AWS::DynamoDB::Table").values()
    properties = props(table)
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"]["SSEEnabled"] is True
    assert properties["DeletionProtectionEnabled"] == {"Fn::If": ["ProtectTable", True, False]}
    assert sam["Parameters"]["DeletionProtection"]["Default"] == "true"
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


def test_the_sweep_reads_a_sparse_keys_only_index_on_a_schedule(
    cfn: dict[str, Any], sam: dict[str, Any]
) -> None:
    """The net under the timers: gsi2 holds the armed switches' keys by shard, and a recurring
    schedule of the alarm schedules' group invokes the alarm function with the sweep's event
    every SweepMinutes; the alarm function may query the index and read switches in batches."""
    table = props(cfn["Resources"]["VigilTable"])
    (index,) = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == SWEEP_INDEX]
    assert index["KeySchema"] == [
        {"AttributeName": "sweep", "KeyType": "HASH"},
        {"AttributeName": "pk", "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert {"AttributeName": "sweep", "AttributeType": "S"} in table["AttributeDefinitions"]

    (schedule,) = resources_of(cfn, "AWS::Scheduler::Schedule").values()
    properties = props(schedule)
    assert ref_target(properties["GroupName"]) == "AlarmScheduleGroup"
    assert properties["ScheduleExpression"] == {"Fn::Sub": "rate(${SweepMinutes} minutes)"}
    assert properties["FlexibleTimeWindow"] == {"Mode": "OFF"}
    target = properties["Target"]
    assert getatt_target(target["Arn"]) == "AlarmFunction"
    assert getatt_target(target["RoleArn"]) == "SchedulerRole"
    assert getatt_target(target["DeadLetterConfig"]["Arn"]) == "AlarmDLQ"
    assert json.loads(target["Input"]) == SWEEP_EVENT
    minutes = sam["Parameters"]["SweepMinutes"]
    assert (minutes["Default"], minutes["MinValue"]) == (5, 2)

    (items,) = [
        statement
        for role, statement in role_statements(cfn)
        if role == "AlarmFunctionRole" and statement.get("Sid") == "TableItems"
    ]
    assert {"dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:GetItem"} <= set(items["Action"])
    assert {"Fn::Sub": "${VigilTable.Arn}/index/*"} in items["Resource"]


# ---------------------------------------------------------------- queues


def test_every_queue_has_or_is_a_dead_letter_queue(cfn: dict[str, Any]) -> None:
    queues = resources_of(cfn, "AWS::SQS::Queue")
    dead_letter_queues = {
        getatt_target(props(queue)["RedrivePolicy"]["deadLetterTargetArn"])
        for queue in queues.values()
        if "RedrivePolicy" in props(queue)
    }
    dead_letter_queues |= {
        getatt_target(props(function)["DeadLetterConfig"]["TargetArn"])
        for function in resources_of(cfn, "AWS::Lambda::Function").values()
        if "DeadLetterConfig" in props(function)
    }
    for logical_id, queue in queues.items():
        assert "RedrivePolicy" in props(queue) or logical_id in dead_letter_queues, logical_id
        if logical_id in dead_letter_queues:
            assert props(queue)["MessageRetentionPeriod"] == 14 * 24 * 3600, logical_id


def test_queues_are_encrypted_and_tls_only(cfn: dict[str, Any]) -> None:
    policies = resources_of(cfn, "AWS::SQS::QueuePolicy").values()
    for logical_id, queue in resources_of(cfn, "AWS::SQS::Queue").items():
        properties = props(queue)
        assert properties.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in properties
        assert any(
            {"Ref": logical_id} in props(policy)["Queues"]
            and getatt_target(statement["Resource"]) == logical_id
            for policy in policies
            for statement in as_list(props(policy)["PolicyDocument"]["Statement"])
            if denies_insecure_transport(statement)
        ), f"{logical_id}: no TLS-only queue policy"


def test_timer_queue_outlives_a_batch(cfn: dict[str, Any]) -> None:
    timeout = props(cfn["Resources"]["AlarmFunction"])["Timeout"]
    timer_queue = props(cfn["Resources"]["TimerQueue"])
    assert timer_queue["VisibilityTimeout"] >= 6 * timeout


def test_a_failed_timer_is_tried_for_minutes_before_its_dead_letter_queue(
    cfn: dict[str, Any],
) -> None:
    from vigil.alarms.timers import hand_back_seconds

    for queue in ("TimerQueue", "NotifyQueue", "WatchQueue"):
        receives = props(cfn["Resources"][queue])["RedrivePolicy"]["maxReceiveCount"]
        # The waits between receives: minutes in all, each far below the visibility timeout.
        waits = [hand_back_seconds(n) for n in range(1, receives)]
        assert 240 <= sum(waits) <= 600, (queue, waits)


def test_event_source_mappings_report_partial_failures(cfn: dict[str, Any]) -> None:
    mappings = resources_of(cfn, "AWS::Lambda::EventSourceMapping")
    assert mappings
    for logical_id, mapping in mappings.items():
        assert "ReportBatchItemFailures" in props(mapping)["FunctionResponseTypes"], logical_id


def test_alarm_function_async_failures(cfn: dict[str, Any]) -> None:
    function = props(cfn["Resources"]["AlarmFunction"])
    assert getatt_target(function["DeadLetterConfig"]["TargetArn"]) == "AlarmDLQ"
    configs = resources_of(cfn, "AWS::Lambda::EventInvokeConfig").values()
    assert any(
        ref_target(props(config)["FunctionName"]) == "AlarmFunction"
        and props(config)["MaximumRetryAttempts"] == 2
        for config in configs
    )


# ---------------------------------------------------------------- functions and API


def test_functions(cfn: dict[str, Any]) -> None:
    functions = resources_of(cfn, "AWS::Lambda::Function")
    assert set(functions) == {"ApiFunction", "AlarmFunction", "NotifyFunction"}
    log_groups = resources_of(cfn, "AWS::Logs::LogGroup")
    for logical_id, function in functions.items():
        properties = props(function)
        assert properties["Runtime"] == "python3.13", logical_id
        assert properties["Architectures"] == ["arm64"], logical_id
        assert properties["Handler"] == "app.handler", logical_id
        assert resolver_for(cfn).resolve(properties["TracingConfig"]) == {"Mode": "Active"}
        off = resolver_for(cfn, Tracing="PassThrough").resolve(properties["TracingConfig"])
        assert off == {"Mode": "PassThrough"}, logical_id
        assert set(properties["Environment"]["Variables"]) >= FUNCTION_ENV, logical_id
        assert properties["Environment"]["Variables"]["VIGIL_ENV"] == "aws"
        log_group = ref_target(properties["LoggingConfig"]["LogGroup"])
        assert log_group in log_groups, logical_id
        assert props(log_groups[log_group])["RetentionInDays"] > 0, logical_id


def test_api_function_is_served_through_its_snapstart_alias(cfn: dict[str, Any]) -> None:
    function = props(cfn["Resources"]["ApiFunction"])
    assert function["SnapStart"] == {
        "Fn::If": ["UseSnapStart", {"ApplyOn": "PublishedVersions"}, {"Ref": "AWS::NoValue"}]
    }
    aliases = resources_of(cfn, "AWS::Lambda::Alias")
    assert {props(alias)["Name"] for alias in aliases.values()} == {"live"}
    (alias_id,) = aliases

    body = props(cfn["Resources"]["HttpApi"])["Body"]
    routes = {
        (path, method)
        for path, operations in body["paths"].items()
        for method in operations
        if method != "parameters"
    }
    assert {
        ("/mcp", "x-amazon-apigateway-any-method"),
        ("/v1/{tool}", "post"),
        ("/openapi.json", "get"),
    } <= routes
    for path, operations in body["paths"].items():
        for method, operation in operations.items():
            text, variables = operation["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
            assert text.endswith("/functions/${Alias}/invocations"), f"{method} {path}"
            assert variables == {"Alias": {"Ref": alias_id}}, f"{method} {path} bypasses the alias"
    for logical_id, permission in resources_of(cfn, "AWS::Lambda::Permission").items():
        assert ref_target(props(permission)["FunctionName"]) == alias_id, logical_id


def test_version_description_fits(sam: dict[str, Any]) -> None:
    # Every parameter that reaches the function is in the version description,
    # so that changing only a parameter still publishes a new version.
    text = sam["Resources"]["ApiFunction"]["Properties"]["VersionDescription"]["Fn::Sub"]
    parameters = sam["Parameters"]
    for name in ("LogLevel", "PlatformLogLevel", "EnableSnapStart", "AllowedOrigins"):
        assert f"${{{name}}}" in text
    longest = text
    for name, spec in parameters.items():
        if f"${{{name}}}" not in text:
            continue
        if "AllowedValues" in spec:
            value = max(spec["AllowedValues"], key=len)
        else:
            value = "x" * spec["MaxLength"]
        longest = longest.replace(f"${{{name}}}", value)
    assert len(longest) <= 256


def test_api_throttling_and_access_logs(cfn: dict[str, Any]) -> None:
    (stage,) = resources_of(cfn, "AWS::ApiGatewayV2::Stage").values()
    properties = props(stage)
    assert resolver_for(cfn).resolve(properties["DefaultRouteSettings"]) == {
        "ThrottlingBurstLimit": "2000",
        "ThrottlingRateLimit": "1000",
    }
    resolver = resolver_for(cfn)
    resolver.register("HttpApiAccessLogGroup", "access", Arn="arn:of:the:access:log")
    access_log = resolver.resolve(properties["AccessLogSettings"])
    assert access_log["DestinationArn"] == "arn:of:the:access:log"
    json.loads(access_log["Format"])  # one JSON object per request
    assert "header" not in access_log["Format"].lower()


def test_the_access_log_can_be_turned_off(cfn: dict[str, Any]) -> None:
    """API Gateway cannot sample an HTTP API's access log: it is on or off, by parameter."""
    resolver = resolver_for(cfn, ApiAccessLog="off")
    resolver.register("HttpApi", "api123")
    (stage,) = present_of(resolver, "AWS::ApiGatewayV2::Stage").values()
    assert "AccessLogSettings" not in resolver.resolve(props(stage))
    assert "HttpApiAccessLogGroup" not in resolver.present()


def test_the_functions_log_json_and_drop_the_platform_lines_by_default(
    cfn: dict[str, Any], sam: dict[str, Any]
) -> None:
    assert sam["Parameters"]["PlatformLogLevel"]["Default"] == "WARN"
    for logical_id, function in resources_of(cfn, "AWS::Lambda::Function").items():
        config = resolver_for(cfn).resolve(props(function)["LoggingConfig"])
        assert config["LogFormat"] == "JSON", logical_id
        # Vigil filters its own lines (LogLevel): Lambda passes on whatever it writes.
        assert config["ApplicationLogLevel"] == "TRACE", logical_id
        assert config["SystemLogLevel"] == "WARN", logical_id
        kept = resolver_for(cfn, PlatformLogLevel="INFO").resolve(props(function)["LoggingConfig"])
        assert kept["SystemLogLevel"] == "INFO", logical_id


def test_stage_throttle_comes_from_the_parameters(cfn: dict[str, Any]) -> None:
    (stage,) = resources_of(cfn, "AWS::ApiGatewayV2::Stage").values()
    settings = props(stage)["DefaultRouteSettings"]
    resolver = resolver_for(cfn, ApiBurstLimit="50", ApiRateLimit="25")
    assert resolver.resolve(settings) == {"ThrottlingBurstLimit": "50", "ThrottlingRateLimit": "25"}


# ---------------------------------------------------------------- edge protection

EDGE_TYPES = frozenset({"AWS::WAFv2::WebACL", "AWS::CloudFront::Distribution"})
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST_HEADER = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
EXECUTE_API = "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"


FUNCTION_URL = "https://abcdefgh.lambda-url.us-east-1.on.aws/"


def edge_on(cfn: dict[str, Any], region: str = "us-east-1", **parameters: str) -> Resolver:
    resolver = resolver_for(cfn, region, EdgeProtection="cloudfront-waf", **parameters)
    # Attributes the stack would have once deployed, for the intrinsics that name them.
    resolver.register("EdgeWebAcl", "edge-acl-id", Arn="arn:of:the:stack:web:acl")
    resolver.register("EdgeDistribution", "EDGEID", DomainName="d111.cloudfront.net")
    resolver.register("HttpApi", "api123")
    return resolver


def present_of(resolver: Resolver, resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in resolver.present().items()
        if resource["Type"] == resource_type
    }


def output_urls(cfn: dict[str, Any], resolver: Resolver) -> dict[str, str]:
    return {
        name: resolver.resolve(output["Value"])
        for name, output in cfn["Outputs"].items()
        if name.endswith("Url")
    }


def broken_rules(cfn: dict[str, Any], resolver: Resolver) -> list[str]:
    """The AssertDescription of every template rule the values would fail."""
    broken = []
    for rule in cfn.get("Rules", {}).values():
        if "RuleCondition" in rule and not resolver.resolve(rule["RuleCondition"]):
            continue
        broken += [
            assertion["AssertDescription"]
            for assertion in rule["Assertions"]
            if not resolver.resolve(assertion["Assert"])
        ]
    return broken


def test_edge_protection_is_off_by_default(cfn: dict[str, Any], sam: dict[str, Any]) -> None:
    assert sam["Parameters"]["EdgeProtection"]["Default"] == "none"
    resolver = resolver_for(cfn)
    resolver.register("HttpApi", "api123")
    present = resolver.present()
    assert {resource["Type"] for resource in present.values()}.isdisjoint(EDGE_TYPES)
    assert "ApiFunction" in present
    assert output_urls(cfn, resolver) == {
        "McpUrl": "https://api123.execute-api.us-east-1.amazonaws.com/mcp",
        "RestBaseUrl": "https://api123.execute-api.us-east-1.amazonaws.com/v1",
        "OpenApiUrl": "https://api123.execute-api.us-east-1.amazonaws.com/openapi.json",
        "ConsoleUrl": "https://api123.execute-api.us-east-1.amazonaws.com/console",
        "ApiDocsUrl": "https://api123.execute-api.us-east-1.amazonaws.com/docs",
    }


def test_edge_web_acl_limits_each_source_address(cfn: dict[str, Any]) -> None:
    resolver = edge_on(cfn, PerAddressRateLimit="500")
    ((acl_id, acl),) = present_of(resolver, "AWS::WAFv2::WebACL").items()
    properties = resolver.resolve(props(acl))
    assert properties["Scope"] == "CLOUDFRONT"
    assert properties["DefaultAction"] == {"Allow": {}}
    (rule,) = properties["Rules"]
    assert rule["Statement"] == {
        "RateBasedStatement": {
            "Limit": "500",
            "AggregateKeyType": "IP",
            "EvaluationWindowSec": 300,
        }
    }
    response = rule["Action"]["Block"]["CustomResponse"]
    assert response["ResponseCode"] == HTTP_STATUS[ErrorCode.THROTTLED] == 429
    body = json.loads(
        properties["CustomResponseBodies"][response["CustomResponseBodyKey"]]["Content"]
    )
    # The service's own throttled error, so a client handles both alike.
    assert body == VigilError(ErrorCode.THROTTLED, body["message"]).to_dict()

    ((_, distribution),) = present_of(resolver, "AWS::CloudFront::Distribution").items()
    config = props(distribution)["DistributionConfig"]
    assert getatt_target(config["WebACLId"]["Fn::If"][1]) == acl_id
    assert resolver.resolve(config["WebACLId"]) == "arn:of:the:stack:web:acl"


def test_edge_distribution_forwards_every_request_uncached(cfn: dict[str, Any]) -> None:
    resolver = edge_on(cfn)
    resolver.register("ApiFunctionUrl", "url", FunctionUrl=FUNCTION_URL)
    ((_, distribution),) = present_of(resolver, "AWS::CloudFront::Distribution").items()
    config = resolver.resolve(props(distribution)["DistributionConfig"])
    assert config["Enabled"] is True
    (origin,) = config["Origins"]
    assert origin["DomainName"] == "api123.execute-api.us-east-1.amazonaws.com"
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    behavior = config["DefaultCacheBehavior"]
    assert behavior["TargetOriginId"] == origin["Id"]
    assert behavior["ViewerProtocolPolicy"] == "https-only"
    # No cache, and every viewer header (Authorization, Mcp-Session-Id, Mcp-Protocol-Version,
    # Accept, Content-Type, Origin) reaches the API; Host must be the API's own.
    assert behavior["CachePolicyId"] == CACHING_DISABLED
    assert behavior["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST_HEADER
    assert set(behavior["AllowedMethods"]) == {
        "GET",
        "HEAD",
        "OPTIONS",
        "PUT",
        "PATCH",
        "POST",
        "DELETE",
    }
    assert "CacheBehaviors" not in config
    assert output_urls(cfn, resolver) == {
        "McpUrl": "https://d111.cloudfront.net/mcp",
        "RestBaseUrl": "https://d111.cloudfront.net/v1",
        "OpenApiUrl": "https://d111.cloudfront.net/openapi.json",
        "ConsoleUrl": "https://d111.cloudfront.net/console",
        "ApiDocsUrl": "https://d111.cloudfront.net/docs",
    }


def test_edge_protection_can_use_an_existing_web_acl(cfn: dict[str, Any]) -> None:
    arn = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/shared/0123abcd"
    resolver = edge_on(cfn, "eu-west-1", EdgeWebAclArn=arn)
    assert not present_of(resolver, "AWS::WAFv2::WebACL")
    ((_, distribution),) = present_of(resolver, "AWS::CloudFront::Distribution").items()
    assert resolver.resolve(props(distribution)["DistributionConfig"]["WebACLId"]) == arn
    assert broken_rules(cfn, resolver) == []


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("", True),
        ("arn:aws:wafv2:us-east-1:123456789012:global/webacl/shared/0123abcd", True),
        ("arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/shared/0123abcd", False),
        ("shared", False),
    ],
)
def test_edge_web_acl_arn_names_a_cloudfront_web_acl(
    sam: dict[str, Any], value: str, accepted: bool
) -> None:
    pattern = sam["Parameters"]["EdgeWebAclArn"]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is accepted


def test_a_stack_made_web_acl_needs_us_east_1(cfn: dict[str, Any]) -> None:
    # CloudFront takes WebACLs of scope CLOUDFRONT only, and those exist only in us-east-1:
    # elsewhere the deploy is refused before anything is created.
    assert broken_rules(cfn, edge_on(cfn, "us-east-1")) == []
    (reason,) = broken_rules(cfn, edge_on(cfn, "eu-west-1"))
    assert "us-east-1" in reason
    assert "EdgeWebAclArn" in reason
    assert broken_rules(cfn, resolver_for(cfn, "eu-west-1")) == []


def test_alarms(cfn: dict[str, Any]) -> None:
    watched = set()
    for alarm in resources_of(cfn, "AWS::CloudWatch::Alarm").values():
        properties = chosen(resolver_for(cfn), props(alarm))
        for dimension in properties["Dimensions"]:
            target = getatt_target(dimension["Value"]) or ref_target(dimension["Value"])
            watched.add((properties["MetricName"], target))
    assert ("ApproximateNumberOfMessagesVisible", "TimerDLQ") in watched
    assert ("ApproximateNumberOfMessagesVisible", "AlarmDLQ") in watched
    assert ("Errors", "ApiFunction") in watched


def test_outputs(cfn: dict[str, Any]) -> None:
    outputs = cfn["Outputs"]
    assert set(outputs) >= {
        "McpUrl",
        "RestBaseUrl",
        "OpenApiUrl",
        "ConsoleUrl",
        "ApiDocsUrl",
        "TableName",
        "StackName",
    }
    for name, suffix in (
        ("McpUrl", "/mcp"),
        ("RestBaseUrl", "/v1"),
        ("OpenApiUrl", "/openapi.json"),
        ("ConsoleUrl", "/console"),
        ("ApiDocsUrl", "/docs"),
    ):
        edge, rest = outputs[name]["Value"]["Fn::If"][1:]
        custom, door = rest["Fn::If"][1:]
        function_url, http_api = door["Fn::If"][1:]
        assert edge["Fn::Sub"].endswith(suffix)
        assert custom["Fn::Sub"] == "https://${CustomDomainName}" + suffix
        assert function_url["Fn::Sub"] == "${ApiFunctionUrl.FunctionUrl}" + suffix[1:]
        assert http_api["Fn::Sub"] == EXECUTE_API + suffix


# ---------------------------------------------------------------- the Function URL door


def function_url_on(cfn: dict[str, Any], **parameters: str) -> Resolver:
    resolver = resolver_for(cfn, **{**DOORS["FunctionUrl"], **parameters})
    resolver.register("ApiFunctionUrl", "url", FunctionUrl=FUNCTION_URL)
    resolver.register("EdgeDistribution", "EDGEID", DomainName="d111.cloudfront.net")
    resolver.register("EdgeWebAcl", "edge-acl-id", Arn="arn:of:the:stack:web:acl")
    return resolver


def test_the_function_url_is_public_and_leaves_authentication_and_cors_to_vigil(
    cfn: dict[str, Any],
) -> None:
    resolver = function_url_on(cfn)
    ((_, url),) = present_of(resolver, "AWS::Lambda::Url").items()
    (alias_id,) = resources_of(cfn, "AWS::Lambda::Alias")
    # No Cors: the function answers CORS itself, so the headers have one source.
    assert props(url) == {
        "AuthType": "NONE",
        "InvokeMode": "BUFFERED",
        "TargetFunctionArn": {"Ref": alias_id},
    }
    grants = {
        props(permission)["Action"]: props(permission)
        for permission in present_of(resolver, "AWS::Lambda::Permission").values()
    }
    assert grants == {
        "lambda:InvokeFunctionUrl": {
            "Action": "lambda:InvokeFunctionUrl",
            "FunctionName": {"Ref": alias_id},
            "Principal": "*",
            "FunctionUrlAuthType": "NONE",
        },
        "lambda:InvokeFunction": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Ref": alias_id},
            "Principal": "*",
            "InvokedViaFunctionUrl": True,
        },
    }
    assert output_urls(cfn, resolver) == {
        "McpUrl": FUNCTION_URL + "mcp",
        "RestBaseUrl": FUNCTION_URL + "v1",
        "OpenApiUrl": FUNCTION_URL + "openapi.json",
        "ConsoleUrl": FUNCTION_URL + "console",
        "ApiDocsUrl": FUNCTION_URL + "docs",
    }
    notify = props(cfn["Resources"]["NotifyFunction"])["Environment"]["Variables"]
    assert resolver.resolve(notify["CONSOLE_BASE_URL"]) == FUNCTION_URL.rstrip("/")
    assert broken_rules(cfn, resolver) == []


def test_the_function_url_is_capped_by_reserved_concurrency(cfn: dict[str, Any]) -> None:
    reservation = props(cfn["Resources"]["ApiFunction"])["ReservedConcurrentExecutions"]
    assert function_url_on(cfn).resolve(reservation) == "50"
    # The HTTP API's stage throttles; by default nothing is reserved there.
    assert resolver_for(cfn).resolve({"x": reservation}) == {}
    (reason,) = broken_rules(cfn, function_url_on(cfn, ApiReservedConcurrency="0"))
    assert "ApiReservedConcurrency" in reason


def test_a_function_url_takes_no_custom_domain(cfn: dict[str, Any]) -> None:
    resolver = function_url_on(
        cfn,
        CustomDomainName="api.example.com",
        CustomDomainCertificateArn="arn:aws:acm:us-east-1:123456789012:certificate/abc",
    )
    assert not present_of(resolver, "AWS::ApiGatewayV2::DomainName")
    (reason,) = broken_rules(cfn, resolver)
    assert "Function URL takes no custom domain" in reason


def test_edge_protection_fronts_the_function_url(cfn: dict[str, Any]) -> None:
    resolver = function_url_on(cfn, EdgeProtection="cloudfront-waf")
    ((_, distribution),) = present_of(resolver, "AWS::CloudFront::Distribution").items()
    config = resolver.resolve(props(distribution)["DistributionConfig"])
    (origin,) = config["Origins"]
    assert origin["DomainName"] == "abcdefgh.lambda-url.us-east-1.on.aws"
    assert config["DefaultCacheBehavior"]["OriginRequestPolicyId"] == (
        ALL_VIEWER_EXCEPT_HOST_HEADER
    )
    assert output_urls(cfn, resolver)["McpUrl"] == "https://d111.cloudfront.net/mcp"
    assert broken_rules(cfn, resolver) == []


def test_the_5xx_alarm_watches_the_door_in_use(cfn: dict[str, Any]) -> None:
    alarm = props(cfn["Resources"]["Api5xxAlarm"])
    via_url = chosen(function_url_on(cfn), alarm)
    assert (via_url["Namespace"], via_url["MetricName"]) == ("AWS/Lambda", "Url5xxCount")
    assert via_url["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "ApiFunction"}}]
    via_api = chosen(resolver_for(cfn), alarm)
    assert (via_api["Namespace"], via_api["MetricName"]) == ("AWS/ApiGateway", "5xx")


# ---------------------------------------------------------------- build


def test_makefile_builds_every_function(sam: dict[str, Any], tmp_path: Path) -> None:
    make = shutil.which("make")
    assert make, "make is required by `sam build` (BuildMethod: makefile)"
    for logical_id, resource in sam["Resources"].items():
        if resource.get("Metadata", {}).get("BuildMethod") != "makefile":
            continue
        result = run(
            [make, "-n", f"build-{logical_id}", f"ARTIFACTS_DIR={tmp_path / logical_id}"],
            cwd=REPO,
        )
        assert result.returncode == 0, f"make build-{logical_id}:\n{result.stderr}"
        copied = re.findall(r"^cp (?:-R )?(\S+) ", result.stdout, flags=re.MULTILINE)
        assert copied, result.stdout
        for source in copied:
            assert (REPO / source).exists(), f"build-{logical_id} copies missing {source}"
        # What ships is the lock, every file's hash checked.
        assert "--require-hashes -r requirements/lambda.lock" in result.stdout
        # And the source-only lock: its wheels made from its hashed sdists, by the locked
        # backend (never one that pip's build isolation would fetch unchecked), installed for
        # the Lambda platform with nothing downloaded.
        assert re.search(
            r"pip install .*--require-hashes .*-r requirements/lambda-build\.lock", result.stdout
        )
        assert re.search(
            r"pip wheel .*--require-hashes .*--no-build-isolation .*--no-binary=:all: .*"
            r"-r requirements/lambda-source\.lock",
            result.stdout,
        )
        assert re.search(
            r"pip install .*--no-deps --no-index .*--platform manylinux2014_aarch64 ", result.stdout
        )
        # Bytecode for the runtime's Python, never checked against the sources' mtimes.
        assert re.search(
            r"python3\.13 -m compileall .*--invalidation-mode unchecked-hash", result.stdout
        )


def test_the_service_key_is_generated_and_readable_by_the_api_and_notify_functions_alone(
    cfn: dict[str, Any],
) -> None:
    resources = cfn["Resources"]
    key = resources["ServiceKey"]
    assert key["Type"] == "AWS::SecretsManager::Secret"
    generated = key["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 43  # at least 256 bits of letters and digits
    assert "SecretString" not in key["Properties"]  # never a value written in the template
    api = resources["ApiFunction"]["Properties"]
    assert api["Environment"]["Variables"]["SERVICE_KEY_ARN"] == {"Ref": "ServiceKey"}
    readers = []
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for policy in resource["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                actions = [actions] if isinstance(actions, str) else actions
                if any(a.startswith("secretsmanager:") for a in actions):
                    assert actions == ["secretsmanager:GetSecretValue"]
                    assert statement["Resource"] == {"Ref": "ServiceKey"}
                    readers.append(logical_id)
    assert sorted(readers) == ["ApiFunctionRole", "NotifyFunctionRole"]


def test_the_console_routes_reach_the_api_function(cfn: dict[str, Any]) -> None:
    paths = cfn["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]
    for path in ("/console", "/console/{proxy+}"):
        assert "x-amazon-apigateway-any-method" in paths[path]


def test_the_api_page_routes_reach_the_api_function(cfn: dict[str, Any]) -> None:
    paths = cfn["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]
    for path in ("/docs", "/docs/{proxy+}"):
        assert set(paths[path]) - {"parameters"} == {"get"}


def custom_domain_on(cfn: dict[str, Any], **parameters: str) -> Resolver:
    resolver = resolver_for(
        cfn,
        CustomDomainName="api.example.com",
        CustomDomainCertificateArn="arn:aws:acm:us-east-1:123456789012:certificate/abc",
        **parameters,
    )
    resolver.register("HttpApi", "api123")
    resolver.register("ApiDomain", "api.example.com", RegionalDomainName="d-abc.execute-api")
    return resolver


def test_no_custom_domain_by_default(cfn: dict[str, Any]) -> None:
    resolver = resolver_for(cfn)
    resolver.register("HttpApi", "api123")
    assert not present_of(resolver, "AWS::ApiGatewayV2::DomainName")
    assert not present_of(resolver, "AWS::ApiGatewayV2::ApiMapping")
    assert "CustomDomainTarget" not in {
        name
        for name, output in cfn["Outputs"].items()
        if "Condition" not in output or resolver.condition(output["Condition"])
    }


def test_a_custom_domain_maps_the_api_and_names_every_url(cfn: dict[str, Any]) -> None:
    resolver = custom_domain_on(cfn)
    ((domain_id, domain),) = present_of(resolver, "AWS::ApiGatewayV2::DomainName").items()
    config = resolver.resolve(props(domain))
    assert config["DomainName"] == "api.example.com"
    (endpoint,) = config["DomainNameConfigurations"]
    assert endpoint == {
        "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/abc",
        "EndpointType": "REGIONAL",
        "SecurityPolicy": "TLS_1_2",
    }
    ((_, mapping),) = present_of(resolver, "AWS::ApiGatewayV2::ApiMapping").items()
    assert props(mapping)["ApiId"] == {"Ref": "HttpApi"}
    assert props(mapping)["DomainName"] == {"Ref": domain_id}
    assert props(mapping)["Stage"] == "$default"
    assert mapping["DependsOn"] in cfn["Resources"]  # the stage SAM makes
    assert output_urls(cfn, resolver) == {
        "McpUrl": "https://api.example.com/mcp",
        "RestBaseUrl": "https://api.example.com/v1",
        "OpenApiUrl": "https://api.example.com/openapi.json",
        "ConsoleUrl": "https://api.example.com/console",
        "ApiDocsUrl": "https://api.example.com/docs",
    }
    target = cfn["Outputs"]["CustomDomainTarget"]
    assert resolver.condition(target["Condition"])
    assert resolver.resolve(target["Value"]) == "d-abc.execute-api"
    assert broken_rules(cfn, resolver) == []


def test_a_custom_domain_needs_its_certificate_and_no_edge(cfn: dict[str, Any]) -> None:
    no_certificate = resolver_for(cfn, CustomDomainName="api.example.com")
    assert broken_rules(cfn, no_certificate) == [
        "CustomDomainName needs CustomDomainCertificateArn."
    ]
    with_edge = custom_domain_on(cfn, EdgeProtection="cloudfront-waf")
    (broken,) = broken_rules(cfn, with_edge)
    assert "cannot be combined" in broken


def test_the_build_ships_exactly_the_locked_versions(tmp_path: Path) -> None:
    """A real artifact build (the make target `sam build` runs, wheels for the Lambda
    platform from PyPI and wheels made from PyPI's sdists, every hash checked): its
    distributions are the locks', no more."""
    from tests.unit.test_lock import shipped

    artifact = tmp_path / "AlarmFunction"
    result = run(["make", "build-AlarmFunction", f"ARTIFACTS_DIR={artifact}"], cwd=REPO)
    assert result.returncode == 0, result.stderr
    found = {}
    for info in artifact.glob("*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        found[re.sub(r"[-_.]+", "-", name).lower()] = version
    assert found == shipped()
    assert (artifact / "vigil" / "entrypoints" / "alarm.py").exists()
    for laptop_only in ("local", "infra", "people"):
        assert not (artifact / "vigil" / laptop_only).exists(), laptop_only
    # OnCalendar text is read on Lambda: oncalendar, which PyPI has as source alone, ships as
    # a pure-Python wheel made from its sdist, and reads a calendar from the artifact alone
    # (-I -S: neither this environment's packages nor the user's).
    wheel = artifact / f"oncalendar-{shipped()['oncalendar']}.dist-info" / "WHEEL"
    assert "Tag: py3-none-any" in wheel.read_text()
    assert not [path for path in (artifact / "oncalendar").rglob("*") if path.suffix == ".so"]
    reads = run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1])\n"
            "from datetime import datetime\n"
            "from zoneinfo import ZoneInfo\n"
            "import oncalendar\n"
            "start = datetime(2026, 1, 2, 3, tzinfo=ZoneInfo('Europe/Berlin'))\n"
            "slots = oncalendar.OnCalendar('Mon..Fri 02:00', start)\n"
            "print(oncalendar.__file__)\n"
            "print(next(slots).isoformat(), next(slots).isoformat())",
            str(artifact),
        ]
    )
    assert reads.returncode == 0, reads.stderr
    where, slots = reads.stdout.splitlines()
    assert Path(where).is_relative_to(artifact)
    assert slots == "2026-01-05T02:00:00+01:00 2026-01-06T02:00:00+01:00"


def test_the_api_artifact_ships_the_swagger_ui_files_the_page_serves_and_no_others(
    tmp_path: Path,
) -> None:
    """Swagger UI's package holds every build of it with source maps; the artifact keeps the
    files /docs serves, and the page's own initializer."""
    from vigil.transports.docs import INITIALIZER, SWAGGER_UI_FILES

    artifact = tmp_path / "ApiFunction"
    result = run(["make", "build-ApiFunction", f"ARTIFACTS_DIR={artifact}"], cwd=REPO)
    assert result.returncode == 0, result.stderr
    vendored = [path for path in (artifact / "swagger_ui_bundle").rglob("*") if path.is_file()]
    assert sorted(path.name for path in vendored if path.suffix != ".py") == sorted(
        name for name, _ in SWAGGER_UI_FILES
    )
    assert (artifact / "vigil" / "transports" / "assets" / INITIALIZER[0]).is_file()
    # Its package's template helper and what it needs are locked but not shipped.
    assert not (artifact / "jinja2").exists()
    assert not (artifact / "markupsafe").exists()
    # Nothing shipped asks for them (the artifact's binaries are for Lambda: not imported here).
    for module in [
        *(artifact / "vigil").rglob("*.py"),
        *(artifact / "swagger_ui_bundle").rglob("*.py"),
    ]:
        text = module.read_text(encoding="utf-8")
        assert "jinja2" not in text, module
        assert "markupsafe" not in text, module


def test_every_alarm_notifies_the_encrypted_topic_when_it_fires_and_clears(
    cfn: dict[str, Any],
) -> None:
    resources = cfn["Resources"]
    topic = resources["AlarmTopic"]
    assert topic["Type"] == "AWS::SNS::Topic"
    # Its own key: CloudWatch may not use the AWS-managed alias/aws/sns to publish.
    assert props(topic)["KmsMasterKeyId"] == {"Ref": "AlarmTopicKey"}
    key = resources["AlarmTopicKey"]
    assert props(key)["EnableKeyRotation"] is True
    statements = props(key)["KeyPolicy"]["Statement"]
    (cloudwatch,) = [s for s in statements if s["Principal"].get("Service")]
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert set(cloudwatch["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    alarms = {k: v for k, v in resources.items() if v["Type"] == "AWS::CloudWatch::Alarm"}
    assert len(alarms) >= 10
    for logical_id, alarm in alarms.items():
        assert props(alarm)["AlarmActions"] == [{"Ref": "AlarmTopic"}], logical_id
        assert props(alarm)["OKActions"] == [{"Ref": "AlarmTopic"}], logical_id
    assert cfn["Outputs"]["AlarmTopic"]["Value"] == {"Ref": "AlarmTopic"}


def test_the_alarms_watch_throttles_5xx_and_the_timer_queues_age(cfn: dict[str, Any]) -> None:
    watched = set()
    for resource in cfn["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = chosen(resolver_for(cfn), props(resource))
        for dimension in properties["Dimensions"]:
            value = dimension["Value"]
            target = getatt_target(value) or ref_target(value) or value
            watched.add((properties["Namespace"], properties["MetricName"], target))
    assert ("AWS/Lambda", "Throttles", "ApiFunction") in watched
    assert ("AWS/Lambda", "Throttles", "AlarmFunction") in watched
    assert ("AWS/ApiGateway", "5xx", "HttpApi") in watched
    assert ("AWS/SQS", "ApproximateAgeOfOldestMessage", "TimerQueue") in watched


def test_an_email_subscription_only_when_an_address_is_given(cfn: dict[str, Any]) -> None:
    assert not present_of(resolver_for(cfn), "AWS::SNS::Subscription")
    resolver = resolver_for(cfn, AlarmEmail="oncall@example.com")
    ((_, subscription),) = present_of(resolver, "AWS::SNS::Subscription").items()
    assert resolver.resolve(props(subscription)) == {
        "TopicArn": resolver.resolve({"Ref": "AlarmTopic"}),
        "Protocol": "email",
        "Endpoint": "oncall@example.com",
    }


def test_the_api_function_may_make_tag_and_delete_mailbox_queues_and_nothing_else(
    cfn: dict[str, Any],
) -> None:
    """What the mailbox code calls on queues it makes at run time (create with tags, look up,
    set attributes, delete on revoke) is granted on the stack's mailbox prefix only; the alarm
    function, which never revokes, may not delete them."""
    granted: dict[str, set[str]] = {}
    for logical_id, resource in cfn["Resources"].items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for policy in resource["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                if statement.get("Sid") != "MailboxQueues":
                    continue
                assert statement["Resource"]["Fn::Sub"].endswith(":${AWS::StackName}-mb-*")
                granted[logical_id] = set(statement["Action"])
    assert {"sqs:CreateQueue", "sqs:TagQueue", "sqs:GetQueueUrl", "sqs:SetQueueAttributes"} <= (
        granted["ApiFunctionRole"]
    )
    assert "sqs:DeleteQueue" in granted["ApiFunctionRole"]
    assert "sqs:DeleteQueue" not in granted["AlarmFunctionRole"]
    assert "sqs:TagQueue" in granted["AlarmFunctionRole"]


def test_the_api_function_alone_may_read_the_timers_dead_letter_queues_and_send_them_back(
    cfn: dict[str, Any],
) -> None:
    """The console counts the dead-letter queues of timers and sends their timers back: the
    API function is given their URLs, may count, receive, delete and release on exactly those
    queues, and send to exactly the queues their timers go back to; no other function may
    receive from them or delete in them (the Scheduler and the functions only put there)."""
    from vigil.alarms.redrive import DEAD_LETTER_QUEUES, NOTIFY_QUEUE, TIMER_QUEUE, WATCH_QUEUE

    resources = cfn["Resources"]
    # They are every dead-letter queue of a timer queue or of a timer function.
    redriven = {
        getatt_target(props(resources[q])["RedrivePolicy"]["deadLetterTargetArn"])
        for q in (TIMER_QUEUE, NOTIFY_QUEUE, WATCH_QUEUE)
    } | {
        getatt_target(props(resources[f])["DeadLetterConfig"]["TargetArn"])
        for f in ("AlarmFunction", "NotifyFunction")
    }
    assert redriven == set(DEAD_LETTER_QUEUES)
    variables = props(resources["ApiFunction"])["Environment"]["Variables"]
    assert {
        name: ref_target(variables[name])
        for name in ("TIMER_DLQ_URL", "ALARM_DLQ_URL", "NOTIFY_DLQ_URL")
    } == {"TIMER_DLQ_URL": "TimerDLQ", "ALARM_DLQ_URL": "AlarmDLQ", "NOTIFY_DLQ_URL": "NotifyDLQ"}
    for logical_id in ("AlarmFunction", "NotifyFunction"):
        assert "TIMER_DLQ_URL" not in props(resources[logical_id])["Environment"]["Variables"]

    reading = {"sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:DeleteMessage"}
    on_dead_letters: dict[str, set[str]] = {}
    sends: dict[str, set[str]] = {}
    for owner, statement in role_statements(cfn):
        actions = set(as_list(statement["Action"]))
        targets = {getatt_target(r) for r in as_list(statement["Resource"])}
        if targets & set(DEAD_LETTER_QUEUES) and actions & {
            *reading,
            "sqs:ChangeMessageVisibility",
        }:
            assert statement["Sid"] == "DeadLetteredTimers", owner
            assert targets == set(DEAD_LETTER_QUEUES), owner
            on_dead_letters[owner] = actions
        if owner == "ApiFunctionRole" and "sqs:SendMessage" in actions:
            sends.setdefault(statement.get("Sid", ""), set()).update(map(str, targets))
    assert on_dead_letters == {"ApiFunctionRole": {*reading, "sqs:ChangeMessageVisibility"}}
    assert sends["ArmPreciseTimers"] == {TIMER_QUEUE, NOTIFY_QUEUE, WATCH_QUEUE}


# ---------------------------------------------------------------- metrics and the dashboard


def emitted_metric_names() -> set[str]:
    """The names of every metric the code writes (src/vigil/observability.py)."""
    lines: list[str] = []
    emitter = Metrics(lines.append)
    emitter.switch_fired(1.0)
    emitter.delivered()
    emitter.last_handout()
    emitter.version_conflict()
    emitter.error("heartbeat", "not_found")
    emitter.notification_attempt("delivered")
    emitter.cold_start("api")
    return {
        definition["Name"]
        for line in lines
        for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]
        for definition in directive["Metrics"]
    }


def this_stacks(properties: dict[str, Any]) -> bool:
    return properties["Dimensions"] == [{"Name": "Stack", "Value": {"Ref": "AWS::StackName"}}]


def test_an_alarm_on_late_fires_at_the_99th_percentile(cfn: dict[str, Any]) -> None:
    alarm = props(cfn["Resources"]["ExpiryLatenessAlarm"])
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Vigil", "ExpiryLateness")
    assert "ExpiryLateness" in emitted_metric_names()
    assert this_stacks(alarm)
    assert alarm["ExtendedStatistic"] == "p99"
    assert "Statistic" not in alarm
    # With a handful of fires in the period, each one counts: a single late fire alarms.
    assert alarm["EvaluateLowSampleCountPercentile"] == "evaluate"
    assert alarm["Threshold"] == {"Ref": "ExpiryLatenessThresholdSeconds"}
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Period"] * alarm["EvaluationPeriods"] == 300
    parameter = cfn["Parameters"]["ExpiryLatenessThresholdSeconds"]
    assert parameter["Type"] == "Number"
    assert parameter["Default"] == 5
    assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopic"}]


def test_one_alarm_covers_the_dead_letters_of_every_mailbox(cfn: dict[str, Any]) -> None:
    """Mailbox queues are made at run time, so the alarm watches the count the code keeps of
    last hand-outs, which every dead letter passes, rather than any one queue."""
    alarm = props(cfn["Resources"]["MailboxDeadLettersAlarm"])
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Vigil", "LastHandouts")
    assert "LastHandouts" in emitted_metric_names()
    assert this_stacks(alarm)
    assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 0)
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopic"}]


def dashboard_body(cfn: dict[str, Any], **parameters: str) -> dict[str, Any]:
    """The dashboard's JSON for a deploy with these values, with each ${Name} or
    ${Name.Attribute} in it replaced by that text and the lateness threshold by its default."""
    dashboard = props(cfn["Resources"]["Dashboard"])
    assert dashboard["DashboardName"] == {"Ref": "AWS::StackName"}
    text, variables = dashboard["DashboardBody"]["Fn::Sub"]
    assert isinstance(text, str)
    for name, value in chosen(resolver_for(cfn, **parameters), variables).items():
        text = text.replace(f"${{{name}}}", value["Fn::Sub"])
    text = text.replace("${ExpiryLatenessThresholdSeconds}", "5")
    body: dict[str, Any] = json.loads(re.sub(r"\$\{([^}]+)\}", r"\1", text))
    return body


def test_the_dashboard_shows_every_alarm_and_what_the_issue_asks_for(cfn: dict[str, Any]) -> None:
    widgets = dashboard_body(cfn)["widgets"]
    (alarm_widget,) = [w for w in widgets if w["type"] == "alarm"]
    alarms = resources_of(cfn, "AWS::CloudWatch::Alarm")
    assert sorted(alarm_widget["properties"]["alarms"]) == sorted(f"{a}.Arn" for a in alarms)
    shown: set[tuple[str, ...]] = set()
    queries: list[str] = []
    for widget in widgets:
        if widget["type"] != "metric":
            continue
        properties = widget["properties"]
        assert properties["region"] == "AWS::Region"
        for line in properties["metrics"]:
            options = line[-1] if isinstance(line[-1], dict) else {}
            if "expression" in options:
                queries.append(options["expression"])
                continue
            names = [item for item in line if isinstance(item, str)]
            stat = options.get("stat", properties.get("stat"))
            shown.add((*names, stat))
    expected = {
        # beats: the API's requests
        ("AWS/ApiGateway", "Count", "ApiId", "HttpApi", "Stage", "$default", "Sum"),
        # fires, and their lateness at p50 and p99
        ("Vigil", "SwitchFired", "Stack", "AWS::StackName", "Sum"),
        ("Vigil", "ExpiryLateness", "Stack", "AWS::StackName", "p50"),
        ("Vigil", "ExpiryLateness", "Stack", "AWS::StackName", "p99"),
        # errors
        ("Vigil", "Errors", "Stack", "AWS::StackName", "Sum"),
        ("AWS/Lambda", "Errors", "FunctionName", "ApiFunction", "Sum"),
        ("AWS/Lambda", "Errors", "FunctionName", "AlarmFunction", "Sum"),
        # cost drivers
        ("AWS/Lambda", "Invocations", "FunctionName", "ApiFunction", "Sum"),
        ("AWS/Lambda", "Invocations", "FunctionName", "AlarmFunction", "Sum"),
        ("AWS/Lambda", "Duration", "FunctionName", "ApiFunction", "Sum"),
        ("AWS/Lambda", "Duration", "FunctionName", "AlarmFunction", "Sum"),
        ("AWS/DynamoDB", "ConsumedReadCapacityUnits", "TableName", "VigilTable", "Sum"),
        ("AWS/DynamoDB", "ConsumedWriteCapacityUnits", "TableName", "VigilTable", "Sum"),
        ("AWS/SQS", "NumberOfMessagesSent", "QueueName", "TimerQueue.QueueName", "Sum"),
        ("AWS/Scheduler", "InvocationAttemptCount", "Sum"),
    }
    assert expected <= shown
    # Every metric of ours that it shows is one the code writes, keyed by this stack.
    ours = {names for names in shown if names[0] == "Vigil"}
    assert {names[1] for names in ours} <= emitted_metric_names()
    assert all(names[2:4] == ("Stack", "AWS::StackName") for names in ours)

    # Errors by code and by tool, whichever have occurred, in this stack only.
    assert sorted(queries) == sorted(
        f"SELECT SUM(Errors) FROM SCHEMA(Vigil, Stack, {key}) "
        f"WHERE Stack = 'AWS::StackName' GROUP BY {key} ORDER BY SUM() DESC{limit}"
        for key, limit in (("Code", ""), ("Tool", " LIMIT 10"))
    )


def test_the_dashboard_counts_the_function_urls_requests_behind_that_door(
    cfn: dict[str, Any],
) -> None:
    (requests,) = [
        widget
        for widget in dashboard_body(cfn, **DOORS["FunctionUrl"])["widgets"]
        if widget["properties"].get("title", "").startswith("API requests")
    ]
    assert [line[:4] for line in requests["properties"]["metrics"]] == [
        ["AWS/Lambda", metric, "FunctionName", "ApiFunction"]
        for metric in ("UrlRequestCount", "Url4xxCount", "Url5xxCount")
    ]


def test_no_configuration_for_a_library_that_is_not_used(sam: dict[str, Any]) -> None:
    variables = sam["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["VIGIL_LOG_LEVEL"] == {"Ref": "LogLevel"}
    assert not [name for name in variables if name.startswith("POWERTOOLS_")]
    assert "aws-lambda-powertools" not in (REPO / "requirements" / "lambda.lock").read_text()


def test_warm_throughput_is_set_only_when_asked_and_never_below_dynamodbs_default(
    cfn: dict[str, Any],
) -> None:
    (table,) = resources_of(cfn, "AWS::DynamoDB::Table").values()
    warm = props(table)["WarmThroughput"]
    assert resolver_for(cfn).resolve(warm) is NO_VALUE  # left out: DynamoDB's own defaults
    both = resolver_for(cfn, TableWarmWriteUnits="40000", TableWarmReadUnits="20000")
    assert both.resolve(warm) == {"WriteUnitsPerSecond": "40000", "ReadUnitsPerSecond": "20000"}
    writes = resolver_for(cfn, TableWarmWriteUnits="30000").resolve(warm)
    assert writes == {"WriteUnitsPerSecond": "30000", "ReadUnitsPerSecond": 12000}
