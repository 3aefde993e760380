"""The `vigil` command: the first operator is made with AWS credentials, and only once."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.conftest import create_tables_from_template
from tests.support import app_on
from vigil import cli
from vigil.clock import ManualClock
from vigil.identity.records import secret_matches
from vigil.stores.dynamo import DynamoStore


def test_bootstrap_creates_one_operator_and_prints_its_secret_once(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = create_tables_from_template(client)["VigilTable"]
    argv = ["bootstrap", "--table", table, "--namespace", "acme", "--name", "Alice"]

    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    operator = DynamoStore(client, table).get_principal("acme", printed["operator_id"])
    assert operator is not None
    assert operator.role == "operator"
    assert secret_matches(printed["secret"], operator.secret_hash)
    assert printed["secret"] not in operator.model_dump_json()

    assert cli.main(argv) == 1  # the namespace exists: no silent second "first" operator
    assert "exists" in capsys.readouterr().err
    assert cli.main([*argv, "--existing-ok"]) == 0


def test_openapi_command_prints_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["openapi"]) == 0
    assert "/v1/register" in json.loads(capsys.readouterr().out)["paths"]


def test_rotate_operator_replaces_an_operators_secret_with_aws_credentials(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = create_tables_from_template(client)["VigilTable"]
    store = DynamoStore(client, table)
    assert cli.main(["bootstrap", "--table", table, "--namespace", "acme", "--name", "A"]) == 0
    first = json.loads(capsys.readouterr().out)
    argv = ["rotate-operator", "--table", table, "--namespace", "acme"]

    assert cli.main([*argv, "--operator-id", first["operator_id"]]) == 0
    printed = json.loads(capsys.readouterr().out)
    operator = store.get_principal("acme", first["operator_id"])
    assert operator is not None
    assert operator.version == 2
    assert secret_matches(printed["secret"], operator.secret_hash)
    assert not secret_matches(first["secret"], operator.secret_hash)

    # Workers are rotated through the tools; an unknown id is refused alike.
    app = app_on(store, ManualClock())
    worker = app.call("register", {"kind": "agent", "name": "w"}, printed["secret"], via="rest")
    for other in (worker["principal"]["id"], "per_aaaaaaaaaaaaaaaa"):
        assert cli.main([*argv, "--operator-id", other]) == 1
        assert "operator" in capsys.readouterr().err
    unchanged = store.get_principal("acme", worker["principal"]["id"])
    assert unchanged is not None
    assert unchanged.version == 1


def test_cleanup_deletes_only_the_deleted_stacks_tagged_queues(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from vigil.mailboxes.sqs import SqsMailboxQueues

    sqs = boto3.client("sqs", region_name="us-east-1")
    made = SqsMailboxQueues(sqs, "gone-mb", stack="gone").ensure("gone-mb-abc")
    # Another stack's queue, and one of the same name prefix that no Vigil stack tagged.
    other = SqsMailboxQueues(sqs, "kept-mb", stack="kept").ensure("kept-mb-abc")
    stranger = sqs.create_queue(QueueName="gone-mb-not-ours")["QueueUrl"]

    assert cli.main(["cleanup", "--stack", "gone", "--dry-run"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(listed["would_delete"]) == sorted([made.url, made.dlq_url])
    assert len(sqs.list_queues(QueueNamePrefix="gone-mb-")["QueueUrls"]) == 3

    assert cli.main(["cleanup", "--stack", "gone"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["deleted"]) == sorted(
        [made.url, made.dlq_url]
    )
    left = sqs.list_queues()["QueueUrls"]
    assert made.url not in left
    assert made.dlq_url not in left
    assert {other.url, other.dlq_url, stranger} <= set(left)


def test_cleanup_refuses_while_the_stack_exists(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from vigil.mailboxes.sqs import SqsMailboxQueues

    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="live",
        TemplateBody=json.dumps(
            {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {}}}}
        ),
    )
    sqs = boto3.client("sqs", region_name="us-east-1")
    made = SqsMailboxQueues(sqs, "live-mb", stack="live").ensure("live-mb-abc")
    assert cli.main(["cleanup", "--stack", "live"]) == 1
    assert "still exists" in capsys.readouterr().err
    assert made.url in sqs.list_queues()["QueueUrls"]
    assert cli.main(["cleanup", "--stack", "live", "--force"]) == 0
    assert made.url not in sqs.list_queues().get("QueueUrls", [])


def stack_of_queues(name: str) -> dict[str, str]:
    """A stack with the timer queues and dead-letter queues of template.yaml, by logical id."""
    from vigil.alarms.redrive import QUEUES

    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    cloudformation.create_stack(
        StackName=name,
        TemplateBody=json.dumps(
            {
                "Resources": {
                    queue: {"Type": "AWS::SQS::Queue", "Properties": {}} for queue in QUEUES
                }
            }
        ),
    )
    resources = cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
    return {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources}


def test_redrive_lists_the_dead_letters_and_sends_them_back_with_yes(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from vigil.alarms.timers import Timer

    queues = stack_of_queues("live")
    sqs = boto3.client("sqs", region_name="us-east-1")
    due = datetime(2026, 1, 1, tzinfo=UTC)
    switch = Timer(kind="switch", namespace="acme", key="s", due_at=due).model_dump_json()
    stale = Timer(kind="stale", namespace="acme", key="w", due_at=due).model_dump_json()
    sqs.send_message(QueueUrl=queues["TimerDLQ"], MessageBody=switch)
    sqs.send_message(QueueUrl=queues["NotifyDLQ"], MessageBody=stale)
    sqs.send_message(QueueUrl=queues["AlarmDLQ"], MessageBody='{"sweep": "switches"}')

    # Without --yes or --queue it only counts.
    assert cli.main(["redrive", "--stack", "live"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == {
        "stack": "live",
        "dead_letters": {"TimerDLQ": 1, "AlarmDLQ": 1, "NotifyDLQ": 1},
    }

    assert cli.main(["redrive", "--stack", "live", "--yes", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] is True
    assert [q["would_move"] for q in dry["queues"]] == [{"TimerQueue": 1}, {}, {"WatchQueue": 1}]
    assert dry["queues"][1]["kept"][0]["why"] == "not a timer"

    assert cli.main(["redrive", "--stack", "live", "--queue", "NotifyDLQ"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert [(q["queue"], q["moved"], q["left"]) for q in one["queues"]] == [
        ("NotifyDLQ", {"WatchQueue": 1}, 0)
    ]

    assert cli.main(["redrive", "--stack", "live", "--yes"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert {q["queue"]: (q["moved"], q["left"]) for q in done["queues"]} == {
        "TimerDLQ": ({"TimerQueue": 1}, 0),
        "AlarmDLQ": ({}, 1),  # the sweep's event is no timer: it stays
        "NotifyDLQ": ({}, 0),
    }
    received = sqs.receive_message(QueueUrl=queues["TimerQueue"])["Messages"]
    assert [m["Body"] for m in received] == [switch]
    received = sqs.receive_message(QueueUrl=queues["WatchQueue"])["Messages"]
    assert [m["Body"] for m in received] == [stale]


def test_redrive_names_the_queues_the_code_knows_and_refuses_an_unknown_stack(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from vigil.alarms.redrive import DEAD_LETTER_QUEUES

    with pytest.raises(SystemExit):
        cli.main(["redrive", "--queue", "TimerQueue"])
    assert "invalid choice" in capsys.readouterr().err
    for queue in DEAD_LETTER_QUEUES:
        assert cli.parser().parse_args(["redrive", "--queue", queue]).queue == [queue]
    assert cli.main(["redrive", "--stack", "nowhere"]) == 1
    assert "no stack nowhere" in capsys.readouterr().err
