"""A security scan of what would really be deployed: checkov over the translated template.

checkov runs from its own virtualenv (``make tools`` installs ``.venv-checkov``): its pinned
dependencies clash with the project's. Every failing check must be listed in INTENDED with a
one-line reason; any other failure fails the test, and so does an INTENDED entry that no
longer fails (remove it). Where checkov cannot see a property we require (SSE-SQS, DynamoDB's
default encryption, dead-letter queues on queues and event sources), the template is checked
directly below.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from vigil.infra.template import translate

REPO = Path(__file__).resolve().parents[2]
CHECKOV = Path(os.environ.get("VIGIL_CHECKOV", str(REPO / ".venv-checkov" / "bin" / "checkov")))

# check id -> (why it is meant to fail, the resources it fails on)
INTENDED: dict[str, tuple[str, frozenset[str]]] = {
    "CKV_AWS_27": (
        "queues use SSE-SQS (SqsManagedSseEnabled); checkov recognises only a KMS key",
        frozenset({"TimerQueue", "TimerDLQ", "AlarmDLQ", "NotifyQueue", "NotifyDLQ", "WatchQueue"}),
    ),
    "CKV_AWS_119": (
        "the table is encrypted with the AWS-managed key aws/dynamodb; no customer managed key "
        "by design",
        frozenset({"VigilTable"}),
    ),
    "CKV_AWS_158": (
        "CloudWatch Logs encrypts log groups at rest; no customer managed KMS key by design",
        frozenset({"ApiLogGroup", "AlarmLogGroup", "NotifyLogGroup", "HttpApiAccessLogGroup"}),
    ),
    "CKV_AWS_173": (
        "the environment holds resource names and ARNs only, never a secret, so no KMS key",
        frozenset({"ApiFunction", "AlarmFunction", "NotifyFunction"}),
    ),
    "CKV_AWS_117": (
        "the functions reach AWS public endpoints and, for notifications, the Internet; a VPC "
        "would add NAT cost and cold start (private addresses are refused by the code)",
        frozenset({"ApiFunction", "AlarmFunction", "NotifyFunction"}),
    ),
    "CKV_AWS_115": (
        "concurrency is bounded by the HTTP API's route throttling (or the API function's "
        "reservation, ApiReservedConcurrency) and the notify queue's MaximumConcurrency; the "
        "alarm function is left the account's unreserved pool",
        frozenset({"AlarmFunction", "NotifyFunction"}),
    ),
    "CKV_AWS_95": (
        "the HTTP API's access log is a parameter (ApiAccessLog, on by default; API Gateway "
        "cannot sample it), under an Fn::If checkov does not read",
        frozenset({"HttpApiApiGatewayDefaultStage"}),
    ),
    "CKV_AWS_116": (
        "the API function is only invoked synchronously (API Gateway): a DLQ would never fire",
        frozenset({"ApiFunction"}),
    ),
    "CKV_AWS_18": (
        "no access-log bucket for attachments: object access is audited with CloudTrail",
        frozenset({"AttachmentsBucket"}),
    ),
    "CKV_AWS_21": (
        "attachments are immutable and staged uploads expire; versions would keep deleted data",
        frozenset({"AttachmentsBucket"}),
    ),
    "CKV_AWS_149": (
        "the service key is read by the API and notify functions alone; the AWS-managed key "
        "aws/secretsmanager encrypts it, with no customer managed KMS key by design",
        frozenset({"ServiceKey"}),
    ),
    "CKV_AWS_192": (
        "no Java behind the edge WebACL, so no Log4j rule group; it holds the per-address limit",
        frozenset({"EdgeWebAcl"}),
    ),
}

# What we require, as checkov checks that must run and pass on every resource they apply to.
REQUIRED_PASSING = {
    # no public bucket
    "CKV_AWS_53": "AWS::S3::Bucket",
    "CKV_AWS_54": "AWS::S3::Bucket",
    "CKV_AWS_55": "AWS::S3::Bucket",
    "CKV_AWS_56": "AWS::S3::Bucket",
    "CKV_AWS_20": "AWS::S3::Bucket",
    "CKV_AWS_57": "AWS::S3::Bucket",
    # bucket encryption
    "CKV_AWS_19": "AWS::S3::Bucket",
    # no wildcard action, no unconstrained write on "*"
    "CKV_AWS_63": "AWS::IAM::Role",
    "CKV_AWS_62": "AWS::IAM::Role",
    "CKV_AWS_111": "AWS::IAM::Role",
    "CKV_AWS_109": "AWS::IAM::Role",
    "CKV_AWS_108": "AWS::IAM::Role",
    "CKV_AWS_107": "AWS::IAM::Role",
    "CKV_AWS_110": "AWS::IAM::Role",
    # no secret in a function's environment
    "CKV_AWS_45": "AWS::Lambda::Function",
}


@pytest.fixture(scope="module")
def cfn() -> dict[str, Any]:
    return translate(REPO / "template.yaml")


@pytest.fixture(scope="module")
def scan(cfn: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not CHECKOV.is_file():
        pytest.fail(
            f"checkov not found at {CHECKOV}: run `make tools` to install it "
            "(or point VIGIL_CHECKOV at a `checkov` executable)"
        )
    translated = tmp_path_factory.mktemp("checkov") / "template.json"
    translated.write_text(json.dumps(cfn, indent=2), encoding="utf-8")
    # Offline: no policy download, no platform mapping, no upload.
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE"}
    result = subprocess.run(
        [
            str(CHECKOV),
            "--file",
            str(translated),
            "--framework",
            "cloudformation",
            "--output",
            "json",
            "--skip-download",
            "--compact",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    # 0: all passed, 1: some failed; anything else is checkov itself failing.
    assert result.returncode in (0, 1), f"checkov failed:\n{result.stderr[-2000:]}"
    report = json.loads(result.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["summary"]["parsing_errors"] == 0, report["summary"]
    results: dict[str, Any] = report["results"]
    return results


def _checks(scan: dict[str, Any], outcome: str) -> set[tuple[str, str]]:
    """(check id, logical id) pairs; checkov names resources Type.LogicalId."""
    return {(c["check_id"], c["resource"].rsplit(".", 1)[-1]) for c in scan[outcome]}


def test_only_intended_checks_fail(scan: dict[str, Any]) -> None:
    failed = _checks(scan, "failed_checks")
    intended = {(check, r) for check, (_, resources) in INTENDED.items() for r in resources}
    names = {
        (c["check_id"], c["resource"].rsplit(".", 1)[-1]): c["check_name"]
        for c in scan["failed_checks"]
    }
    unexpected = sorted(failed - intended)
    assert not unexpected, "checkov failures not listed in INTENDED:\n" + "\n".join(
        f"  {check} {resource}: {names[(check, resource)]}" for check, resource in unexpected
    )
    stale = sorted(intended - failed)
    assert not stale, f"INTENDED lists checks that pass now; remove them: {stale}"


def test_required_checks_run_and_pass(scan: dict[str, Any], cfn: dict[str, Any]) -> None:
    passed = _checks(scan, "passed_checks")
    for check, resource_type in REQUIRED_PASSING.items():
        resources = [
            logical_id
            for logical_id, resource in cfn["Resources"].items()
            if resource["Type"] == resource_type
        ]
        assert resources, resource_type
        for logical_id in resources:
            assert (check, logical_id) in passed, f"{check} did not pass on {logical_id}"


# -- what checkov cannot see ------------------------------------------------------------------
def _of_type(cfn: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties", {})
        for logical_id, resource in cfn["Resources"].items()
        if resource["Type"] == resource_type
    }


def _target(value: Any) -> str | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return str(target[0] if isinstance(target, list) else target.split(".", 1)[0])
    return None


def test_encryption_at_rest(cfn: dict[str, Any]) -> None:
    # checkov's DynamoDB and SQS checks want a customer managed key (INTENDED), so the
    # encryption we do use is asserted here.
    for logical_id, table in _of_type(cfn, "AWS::DynamoDB::Table").items():
        assert table.get("SSESpecification", {}).get("SSEEnabled") is True, logical_id
    for logical_id, queue in _of_type(cfn, "AWS::SQS::Queue").items():
        encrypted = queue.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue
        assert encrypted, logical_id
    for logical_id, bucket in _of_type(cfn, "AWS::S3::Bucket").items():
        assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"], logical_id


def test_dead_letters_for_every_queue_and_event_source(cfn: dict[str, Any]) -> None:
    queues = _of_type(cfn, "AWS::SQS::Queue")
    functions = _of_type(cfn, "AWS::Lambda::Function")
    dead_letter_queues = {
        _target(q["RedrivePolicy"]["deadLetterTargetArn"])
        for q in queues.values()
        if "RedrivePolicy" in q
    } | {
        _target(f["DeadLetterConfig"]["TargetArn"])
        for f in functions.values()
        if "DeadLetterConfig" in f
    }
    for logical_id, queue in queues.items():
        assert "RedrivePolicy" in queue or logical_id in dead_letter_queues, (
            f"{logical_id} has no dead-letter queue and is none"
        )
    mappings = _of_type(cfn, "AWS::Lambda::EventSourceMapping")
    assert mappings
    for logical_id, mapping in mappings.items():
        source = _target(mapping["EventSourceArn"])
        assert source in queues, logical_id
        assert "RedrivePolicy" in queues[source], f"{logical_id}: {source} has no DLQ"
    # The alarm function is invoked asynchronously by the Scheduler: failures go to its DLQ.
    alarm = functions["AlarmFunction"]
    assert _target(alarm["DeadLetterConfig"]["TargetArn"]) in queues
