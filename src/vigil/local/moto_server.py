"""moto as a loopback server that serves only what the runtime signed, answers no browser, and
whose state is saved as it changes."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.formparser import parse_form_data
from werkzeug.serving import make_server

from vigil.attachments.records import MAX_FILE_BYTES
from vigil.local import moto_sqs
from vigil.local.moto_state import Snapshotter, WsgiApp, guarded
from vigil.local.signatures import (
    AccessKey,
    Refused,
    admit_form,
    signer_known,
    verify,
    verify_post_policy,
)
from vigil.local.timetable import Timetable, recording


class NoBrowsers:
    """WSGI middleware: the AWS stand-in holds every namespace's data, so no web page may
    reach it. moto answers browsers with permissive CORS headers; here a
    request that carries an Origin (every cross-site fetch, every preflight) is refused, and
    no CORS header goes out. The SDKs send no Origin."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if "HTTP_ORIGIN" in environ:
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"the local AWS stand-in does not answer browsers\n"]

        def without_cors(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept, *rest)

        return self.app(environ, without_cors)


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    headers = {
        name[5:].replace("_", "-").lower(): value
        for name, value in environ.items()
        if name.startswith("HTTP_")
    }
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers[name.replace("_", "-").lower()] = environ[name]
    return headers


# The largest request the runtime's own calls make of moto is an attachment's bytes (5 MiB,
# by the runtime's key or in a presigned form) and its form's fields: a body beyond this is
# refused before it is read, so an unsigned request cannot fill the runtime's memory.
MAX_BODY_BYTES = MAX_FILE_BYTES + 1024 * 1024


class TooLarge(Refused):
    """The body is over MAX_BODY_BYTES; nothing of it was kept."""


def _body(environ: dict[str, Any]) -> bytes:
    """The request's body, at most MAX_BODY_BYTES of it (TooLarge beyond, read no further)."""
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):
        body = bytes(stream.read(MAX_BODY_BYTES + 1))
    else:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length > MAX_BODY_BYTES:
            raise TooLarge(f"the body is over {MAX_BODY_BYTES} bytes")
        body = bytes(stream.read(length))
    if len(body) > MAX_BODY_BYTES:
        raise TooLarge(f"the body is over {MAX_BODY_BYTES} bytes")
    return body


# What a presigned GET may set of its answer besides its signature: the runtime's URLs make
# the bytes a download (vigil.attachments.blobs).
RESPONSE_OVERRIDES = frozenset({"response-content-disposition", "response-content-type"})


class Signers:
    """Who may call the AWS stand-in, and what each may do.

    moto accepts any credentials, so this stands in front of it: a request must be signed
    (SigV4) by the runtime's key, which may do anything, or by the presign key, which may only
    do what the presigned URLs and forms the runtime hands out do: read one object of the
    attachments bucket with a presigned GET, or put one there with a presigned POST form whose
    policy it meets. The presign key's secret stays in the runtime, as the runtime's does; its
    key id, which is in every presigned URL, opens nothing else.
    """

    def __init__(self, runtime_key: AccessKey, now: Callable[[], float] = time.time) -> None:
        self.runtime_key_id = runtime_key.id
        self.keys = {runtime_key.id: runtime_key.secret}
        self.presign_buckets: dict[str, str] = {}
        self.now = now

    def allow_presigned(self, key: AccessKey, bucket: str) -> None:
        self.keys[key.id] = key.secret
        self.presign_buckets[key.id] = bucket

    def before_reading(self, environ: dict[str, Any]) -> None:
        """Refused, before the body is read, unless the request names a key of this runtime
        (a POST form, which names it in its body, is bounded by MAX_BODY_BYTES instead)."""
        headers = _headers(environ)
        if _is_form(environ.get("REQUEST_METHOD", "GET"), headers):
            return
        signer_known(environ.get("QUERY_STRING", ""), headers, self.keys)

    def authorize(self, environ: dict[str, Any], body: bytes) -> None:
        """Raises Refused unless the request is one its signer may make."""
        method = environ.get("REQUEST_METHOD", "GET")
        path = urlsplit(environ.get("RAW_URI") or environ.get("PATH_INFO", "/")).path
        query = environ.get("QUERY_STRING", "")
        headers = _headers(environ)
        if _is_form(method, headers):
            self._authorize_form(environ, path, query, body)
            return
        signed = verify(
            method=method,
            path=path,
            query=query,
            headers=headers,
            body=body,
            keys=self.keys,
            now=self.now(),
        )
        if signed.key_id == self.runtime_key_id:
            return
        _, bucket, key = [*path.split("/", 2), "", ""][:3]
        presigned_get = (
            signed.presigned
            and signed.service == "s3"
            and method in ("GET", "HEAD")
            and bucket == self.presign_buckets[signed.key_id]
            and key
            and all(
                name.startswith("X-Amz-") or name in RESPONSE_OVERRIDES
                for name in _query_names(query)
            )
        )
        if not presigned_get:
            raise Refused("the presign key only reads an object of its bucket, presigned")

    def _authorize_form(self, environ: dict[str, Any], path: str, query: str, body: bytes) -> None:
        bucket = path.strip("/")
        if query or not bucket or "/" in bucket:
            raise Refused("a form is posted to its bucket, with no query")
        _, form, files = parse_form_data({**environ, "wsgi.input": io.BytesIO(body)})
        # moto reads a form its own way (the first of a repeated name, names in their case):
        # a name given twice in any case, which the check below would read otherwise than
        # moto stores, is refused, and so is any file part but the one file.
        names = [name for name, _ in form.items(multi=True)]
        names += [name for name, _ in files.items(multi=True)]
        if len({name.lower() for name in names}) != len(names):
            raise Refused("the form names a field twice (names are compared in any case)")
        if [name for name, _ in files.items(multi=True)] != ["file"]:
            raise Refused("the form has one file part, named file, and no other")
        upload = files["file"]
        fields = {name: form[name] for name in form}
        policy = verify_post_policy(fields, self.keys, self.now())
        if policy.key_id != self.runtime_key_id and (
            self.presign_buckets.get(policy.key_id) != bucket
        ):
            raise Refused("the form's key does not reach this bucket")
        admit_form(policy, fields, bucket, len(upload.read()))


def _is_form(method: str, headers: dict[str, str]) -> bool:
    """A browser's POST form (a presigned upload): unsigned in its headers, signed in its body."""
    return (
        method == "POST"
        and "authorization" not in headers
        and headers.get("content-type", "").startswith("multipart/form-data")
    )


def _query_names(query: str) -> list[str]:
    return [part.partition("=")[0] for part in query.split("&") if part]


def _access_denied(
    environ: dict[str, Any], message: str, code: str = "AccessDenied"
) -> tuple[str, bytes]:
    """A refusal in the protocol of the service asked: JSON for JSON services, else XML."""
    if "HTTP_X_AMZ_TARGET" in environ:
        body = {"__type": f"{code}Exception", "message": message}
        return "application/x-amz-json-1.0", json.dumps(body).encode()
    xml = f"<Error><Code>{code}</Code><Message>{_escape(message)}</Message></Error>"
    return "application/xml", xml.encode()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SignedOnly:
    """WSGI middleware: a request reaches moto only if ``signers`` authorize it."""

    def __init__(self, app: WsgiApp, signers: Signers) -> None:
        self.app = app
        self.signers = signers

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        try:
            self.signers.before_reading(environ)
            body = _body(environ)
            self.signers.authorize(environ, body)
        except TooLarge as error:
            content_type, answer = _access_denied(environ, str(error), "EntityTooLarge")
            start_response("413 Request Entity Too Large", [("Content-Type", content_type)])
            return [answer]
        except Refused as error:
            content_type, answer = _access_denied(environ, str(error))
            start_response("403 Forbidden", [("Content-Type", content_type)])
            return [answer]
        environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)


class LocalMotoServer(ThreadedMotoServer):
    """moto behind the runtime's middleware; ``timetable`` follows the schedules it holds."""

    def __init__(
        self,
        *args: Any,
        signers: Signers,
        snapshots: Snapshotter | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.signers = signers
        self.snapshots = snapshots
        self.timetable = Timetable()

    def _server_entry(self) -> None:
        moto_sqs.patch()
        app = recording(DomainDispatcherApplication(create_backend_app), self.timetable)
        if self.snapshots is not None:
            app = guarded(app, self.snapshots)
        app = NoBrowsers(SignedOnly(app, self.signers))
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()
