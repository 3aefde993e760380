"""Where attachment bytes are kept: the port, and its S3 adapter.

Every effect here is idempotent and keyed by the attachment's id, so a retry can drive it again
from stored state: putting bytes at a key, copying a draft to its file key, or deleting a key,
twice leaves what once would. A put writes a key once and never replaces what is there: the
service names keys so that what is there is what it would write.
"""

from __future__ import annotations

import base64
import contextlib
from abc import ABC, abstractmethod
from typing import Any

from vigil.kit.aws import aws_failure, error_code


class Blobs(ABC):
    @abstractmethod
    def put(self, key: str, data: bytes, media_type: str, sha256: str) -> None:
        """Stores ``data`` at ``key`` unless bytes are there already. ``sha256`` (hex) is the
        bytes' hash, which the store checks them against."""

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The bytes at ``key``; None if there are none."""

    @abstractmethod
    def copy(self, source: str, target: str) -> None:
        """Copies the bytes at ``source`` to ``target``; a missing source is a LookupError."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Removes the bytes at ``key``, if any."""

    @abstractmethod
    def upload_form(self, key: str, max_bytes: int, expires_seconds: int) -> dict[str, Any]:
        """A presigned POST (``url`` and ``fields``) that uploads at most ``max_bytes`` to
        ``key`` until it expires."""

    @abstractmethod
    def download_url(self, key: str, expires_seconds: int) -> str:
        """A presigned GET of ``key`` that works until it expires, answered as bytes to save
        (``Content-Disposition: attachment``), never as a page."""


class S3Blobs(Blobs):
    """The attachments bucket. Presigned URLs and forms are signed by ``presigner`` when given
    (a client whose key may do only what they do), else by ``client``."""

    def __init__(self, client: Any, bucket: str, presigner: Any = None) -> None:
        self.client = client
        self.bucket = bucket
        self.presigner = presigner or client

    def _call(self, operation: Any, **kwargs: Any) -> Any:
        try:
            return operation(Bucket=self.bucket, **kwargs)
        except Exception as error:
            code = error_code(error)
            if code is None:
                raise
            if code in {"NoSuchKey", "404", "NotFound"}:
                raise LookupError(kwargs.get("Key")) from None
            if code == "PreconditionFailed":
                raise FileExistsError(kwargs.get("Key")) from None
            raise aws_failure(code, "the file store") from None

    def put(self, key: str, data: bytes, media_type: str, sha256: str) -> None:
        # If-None-Match: S3 refuses to replace an object (PreconditionFailed), on AWS and moto
        # alike; a put driven again after a crash finds its bytes there and is done.
        with contextlib.suppress(FileExistsError):
            self._call(
                self.client.put_object,
                Key=key,
                Body=data,
                ContentType=media_type,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=base64.b64encode(bytes.fromhex(sha256)).decode(),
                IfNoneMatch="*",
            )

    def get(self, key: str) -> bytes | None:
        try:
            response = self._call(self.client.get_object, Key=key)
        except LookupError:
            return None
        return bytes(response["Body"].read())

    def copy(self, source: str, target: str) -> None:
        self._call(
            self.client.copy_object,
            Key=target,
            CopySource={"Bucket": self.bucket, "Key": source},
        )

    def delete(self, key: str) -> None:
        self._call(self.client.delete_object, Key=key)

    def upload_form(self, key: str, max_bytes: int, expires_seconds: int) -> dict[str, Any]:
        form: dict[str, Any] = self.presigner.generate_presigned_post(
            Bucket=self.bucket,
            Key=key,
            Conditions=[["content-length-range", 1, max_bytes]],
            ExpiresIn=expires_seconds,
        )
        return form

    def download_url(self, key: str, expires_seconds: int) -> str:
        # A presigned POST may declare any Content-Type, so the GET overrides it: bytes that a
        # browser saves, never a page of the bucket's origin that it renders or runs.
        params = {
            "Bucket": self.bucket,
            "Key": key,
            "ResponseContentDisposition": "attachment",
            "ResponseContentType": "application/octet-stream",
        }
        url: str = self.presigner.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=expires_seconds
        )
        return url
