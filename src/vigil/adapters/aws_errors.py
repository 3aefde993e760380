"""What an exception from boto3 means to us: an AWS error code, a transport failure, or not
AWS's at all."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError


def error_code(error: BaseException) -> str | None:
    """The AWS error code of a service error; "" for a failure on the way (a timeout, a reset
    connection: they carry no response); None for an exception that is not from AWS."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    if isinstance(error, BotoCoreError):
        return ""
    return None
