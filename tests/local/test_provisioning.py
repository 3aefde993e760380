"""Provisioning creates on moto exactly what template.yaml declares, and can run again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vigil.local.deployment import LocalDeployment
from vigil.local.provisioning import provision
from vigil.local.resolver import NO_VALUE, Resolver, TemplateError
from vigil.local.stack import AwsClients, LocalNames


def of_type(cfn: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in cfn["Resources"].items() if r["Type"] == kind}


def local_queues(clients: AwsClients, names: LocalNames) -> set[str]:
    urls = clients.sqs.list_queues(QueueNamePrefix=names.stack_name).get("QueueUrls", [])
    return {url.rsplit("/", 1)[1] for url in urls}


def test_creates_exactly_the_tables_queues_bucket_and_group_of_the_template(
    cfn: dict[str, Any], clients: AwsClients, names: LocalNames, deployment: LocalDeployment
) -> None:
    tables = of_type(cfn, "AWS::DynamoDB::Table")
    queues = of_type(cfn, "AWS::SQS::Queue")
    buckets = of_type(cfn, "AWS::S3::Bucket")
    groups = of_type(cfn, "AWS::Scheduler::ScheduleGroup")

    listed_tables = {
        t for t in clients.dynamodb.list_tables()["TableNames"] if t.startswith(names.stack_name)
    }
    assert listed_tables == {names.physical(logical_id) for logical_id in tables}
    assert local_queues(clients, names) == {names.physical(logical_id) for logical_id in queues}
    listed_buckets = {
        b["Name"]
        for b in clients.s3.list_buckets()["Buckets"]
        if b["Name"].startswith(names.stack_name)
    }
    assert listed_buckets == {names.physical(logical_id).lower() for logical_id in buckets}
    listed_groups = {
        g["Name"]
        for g in clients.scheduler.list_schedule_groups()["ScheduleGroups"]
        if g["Name"].startswith(names.stack_name)
    }
    assert listed_groups == {f"{names.stack_name}-alarms"}
    assert set(deployment.schedule_groups) == set(groups)


def test_the_table_has_the_template_key_schema_and_ttl(
    cfn: dict[str, Any], clients: AwsClients, deployment: LocalDeployment
) -> None:
    declared = cfn["Resources"]["VigilTable"]["Properties"]
    name = deployment.tables["VigilTable"].name
    table = clients.dynamodb.describe_table(TableName=name)["Table"]
    assert table["KeySchema"] == declared["KeySchema"]
    assert table["AttributeDefinitions"] == declared["AttributeDefinitions"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ttl = clients.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"}


def test_queues_carry_their_attributes_and_redrive_to_the_local_dlq(
    clients: AwsClients, deployment: LocalDeployment
) -> None:
    timer = deployment.queues["TimerQueue"]
    attributes = clients.sqs.get_queue_attributes(QueueUrl=timer.url, AttributeNames=["All"])[
        "Attributes"
    ]
    assert attributes["VisibilityTimeout"] == "180"
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": deployment.queues["TimerDLQ"].arn,
        "maxReceiveCount": 10,
    }
    dlq = clients.sqs.get_queue_attributes(
        QueueUrl=deployment.queues["TimerDLQ"].url, AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    assert dlq["MessageRetentionPeriod"] == "1209600"


def test_the_bucket_blocks_public_access_and_encrypts(
    clients: AwsClients, deployment: LocalDeployment
) -> None:
    bucket = deployment.buckets["AttachmentsBucket"]
    block = clients.s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values())
    rules = clients.s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    assert rules["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"


def test_functions_get_their_environment_resolved_against_local_resources(
    clients: AwsClients, names: LocalNames, deployment: LocalDeployment
) -> None:
    environment = deployment.environment()
    assert environment["TABLE_NAME"] == deployment.tables["VigilTable"].name
    assert environment["TIMER_QUEUE_URL"] == deployment.queues["TimerQueue"].url
    assert environment["ATTACHMENTS_BUCKET"] == deployment.buckets["AttachmentsBucket"]
    assert environment["SCHEDULE_GROUP"] == f"{names.stack_name}-alarms"
    assert environment["ALARM_DLQ_ARN"] == deployment.queues["AlarmDLQ"].arn
    # The API function's, which its console reads the dead-lettered timers from.
    for variable, queue in (
        ("TIMER_DLQ_URL", "TimerDLQ"),
        ("ALARM_DLQ_URL", "AlarmDLQ"),
        ("NOTIFY_DLQ_URL", "NotifyDLQ"),
    ):
        assert environment[variable] == deployment.queues[queue].url
    alarm = deployment.functions["AlarmFunction"]
    assert environment["ALARM_FUNCTION_ARN"] == alarm.arn
    assert alarm.arn == f"arn:aws:lambda:us-east-1:123456789012:function:{names.stack_name}-alarm"
    role_name = environment["SCHEDULER_ROLE_ARN"].rsplit("/", 1)[1]
    assert (
        clients.iam.get_role(RoleName=role_name)["Role"]["Arn"] == environment["SCHEDULER_ROLE_ARN"]
    )
    assert alarm.dead_letter_arn == deployment.queues["AlarmDLQ"].arn
    assert alarm.async_retry_attempts == 2
    assert alarm.timeout_seconds == 30


def test_the_event_source_mapping_and_what_is_not_played_are_collected(
    deployment: LocalDeployment,
) -> None:
    mappings = {m.queue: m for m in deployment.event_source_mappings}
    assert sorted(mappings) == ["NotifyQueue", "TimerQueue", "WatchQueue"]
    alarm, notify = mappings["TimerQueue"], mappings["NotifyQueue"]
    assert (alarm.function, alarm.batch_size) == ("AlarmFunction", 10)
    assert (notify.function, notify.batch_size) == ("NotifyFunction", 5)
    assert (mappings["WatchQueue"].function, mappings["WatchQueue"].batch_size) == (
        "NotifyFunction",
        10,
    )
    assert alarm.report_batch_item_failures
    assert notify.report_batch_item_failures
    # ScalingConfig: at most this many of the queue's batches at once.
    assert (notify.maximum_concurrency, mappings["WatchQueue"].maximum_concurrency) == (20, 5)
    assert "HttpApi (AWS::ApiGatewayV2::Api)" in deployment.ignored
    assert "TimerQueuePolicy (AWS::SQS::QueuePolicy)" in deployment.ignored


def test_provisioning_again_finds_what_exists_and_keeps_armed_schedules(
    cfn: dict[str, Any], clients: AwsClients, names: LocalNames, deployment: LocalDeployment
) -> None:
    group = deployment.schedule_groups["AlarmScheduleGroup"]
    clients.scheduler.create_schedule(
        Name="armed",
        GroupName=group,
        ScheduleExpression="at(2030-01-01T00:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": deployment.functions["AlarmFunction"].arn, "RoleArn": "arn:aws:iam::1:x"},
    )

    again = provision(cfn, clients, names)

    assert again.queues == deployment.queues
    assert again.tables == deployment.tables
    assert again.environment() == deployment.environment()
    assert local_queues(clients, names) == {q.name for q in deployment.queues.values()}
    schedules = clients.scheduler.list_schedules(GroupName=group)["Schedules"]
    assert sorted(s["Name"] for s in schedules) == sorted(
        ["armed", names.physical("SweepSchedule")]
    )


def test_the_sweep_schedule_is_made_from_the_template_and_follows_its_parameter(
    cfn: dict[str, Any], clients: AwsClients, names: LocalNames, deployment: LocalDeployment
) -> None:
    group = deployment.schedule_groups["AlarmScheduleGroup"]
    name = names.physical("SweepSchedule")
    made = clients.scheduler.get_schedule(GroupName=group, Name=name)
    assert made["ScheduleExpression"] == "rate(5 minutes)"
    assert made["Target"]["Arn"] == deployment.functions["AlarmFunction"].arn
    assert json.loads(made["Target"]["Input"]) == {"sweep": "switches"}

    slower = LocalNames(stack_name=names.stack_name, parameters={"SweepMinutes": "15"})
    provision(cfn, clients, slower)
    moved = clients.scheduler.get_schedule(GroupName=group, Name=name)
    assert moved["ScheduleExpression"] == "rate(15 minutes)"


def test_dead_letter_queues_are_created_first_and_conditions_are_honoured(
    clients: AwsClients, names: LocalNames
) -> None:
    cfn = {
        "Parameters": {"Stage": {"Type": "String", "Default": "dev"}},
        "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}},
        "Resources": {
            "Work": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "DelaySeconds": {"Fn::If": ["IsProd", 0, 5]},
                    "RedrivePolicy": {
                        "deadLetterTargetArn": {"Fn::GetAtt": ["Dead", "Arn"]},
                        "maxReceiveCount": 3,
                    },
                },
            },
            "Dead": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "ProdOnly": {"Type": "AWS::SQS::Queue", "Condition": "IsProd"},
            "Ordered": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "FifoQueue": True,
                    "QueueName": {"Fn::Sub": "${AWS::StackName}.fifo"},
                },
            },
        },
    }

    deployment = provision(cfn, clients, names)

    assert set(deployment.queues) == {"Work", "Dead", "Ordered"}
    assert deployment.queues["Ordered"].name == f"{names.stack_name}.fifo"
    attributes = clients.sqs.get_queue_attributes(
        QueueUrl=deployment.queues["Work"].url, AttributeNames=["All"]
    )["Attributes"]
    assert attributes["DelaySeconds"] == "5"
    assert json.loads(attributes["RedrivePolicy"])["deadLetterTargetArn"] == (
        deployment.queues["Dead"].arn
    )
    prod = provision(cfn, clients, LocalNames(names.stack_name, parameters={"Stage": "prod"}))
    assert set(prod.queues) == {"Work", "Dead", "Ordered", "ProdOnly"}


def test_intrinsics_resolve_as_cloudformation_does() -> None:
    cfn = {
        "Parameters": {
            "Size": {"Type": "String", "Default": "small"},
            "Zones": {"Type": "CommaDelimitedList", "Default": "a,b"},
        },
        "Conditions": {
            "Big": {"Fn::Equals": ["big", {"Ref": "Size"}]},
            "Small": {"Fn::Not": [{"Condition": "Big"}]},
            "Both": {"Fn::And": [{"Condition": "Small"}, {"Fn::Or": [{"Condition": "Big"}, True]}]},
        },
        "Resources": {"Thing": {"Type": "Custom::Thing"}},
    }
    resolver = Resolver(cfn, LocalNames("stack", parameters={"Size": "big"}))
    resolver.register("Queue", "https://queue", Arn="arn:queue")

    resolved = resolver.resolve(
        {
            "Sub": {"Fn::Sub": "${AWS::Region}/${Queue.Arn}/${!Literal}/${Size}"},
            "SubMap": {"Fn::Sub": ["${A}-${AWS::AccountId}", {"A": {"Ref": "Queue"}}]},
            "Join": {"Fn::Join": [":", {"Ref": "Zones"}]},
            "JoinList": {"Fn::Join": ["", [{"Ref": "AWS::Partition"}, "-", 1]]},
            "Select": {"Fn::Select": [1, {"Ref": "Zones"}]},
            "If": {"Fn::If": ["Both", "yes", "no"]},
            "Gone": {"Fn::If": ["Big", {"Ref": "AWS::NoValue"}, "kept"]},
            "List": ["x", {"Ref": "AWS::NoValue"}],
            "Other": {"Ref": "Thing"},
        }
    )

    assert resolved == {
        "Sub": "us-east-1/arn:queue/${Literal}/big",
        "SubMap": "https://queue-123456789012",
        "Join": "a:b",
        "JoinList": "aws-1",
        "Select": "b",
        "If": "no",
        "List": ["x"],
        "Other": "stack-Thing",
    }
    assert resolver.resolve({"Ref": "AWS::NoValue"}) is NO_VALUE
    with pytest.raises(TemplateError, match="not available locally"):
        resolver.resolve({"Fn::GetAtt": ["Thing", "Arn"]})
    with pytest.raises(TemplateError, match="unknown parameters"):
        Resolver(cfn, LocalNames(parameters={"Nope": "1"}))
