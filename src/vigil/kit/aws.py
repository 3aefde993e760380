"""What an exception from boto3 means to us, and the one translation of AWS failures into
the errors a caller sees: never AWS's text, only whether a retry with backoff may help."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from vigil.errors import ErrorCode, VigilError

# Every AWS code, of any service Vigil calls, that means "slow down".
THROTTLING = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TransactionConflictException",
        "TransactionInProgressException",
        "RequestThrottled",
        "TooManyRequestsException",
        "OverLimit",
    }
)


def error_code(error: BaseException) -> str | None:
    """The AWS error code of a service error; "" for a failure on the way (a timeout, a reset
    connection: they carry no response); None for an exception that is not from AWS."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    if isinstance(error, BotoCoreError):
        return ""
    return None


def aws_failure(code: str, what: str) -> VigilError:
    """The caller's view of AWS failing with ``code`` while serving ``what`` (e.g. "the
    store"): throttled for the throttling codes, unavailable for everything else."""
    if code in THROTTLING:
        return VigilError(ErrorCode.THROTTLED, f"{what} is busy; retry with backoff")
    return VigilError(ErrorCode.UNAVAILABLE, f"{what} is temporarily unavailable; retry later")
