"""The console's stylesheet, script and icon, served under names that carry their content's
digest, so a browser keeps each copy for a year and a new deployment's pages name new ones."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from vigil.console.responder import PREFIX
from vigil.transports.http import HttpRequest, HttpResponse

ASSETS = f"{PREFIX}/assets"


@dataclass(frozen=True)
class Asset:
    path: str  # versioned by its content's digest
    body: bytes
    content_type: str


def load_assets() -> dict[str, Asset]:
    """Each asset by its file's own name (console.css, console.js, icon.svg)."""
    found = {}
    folder = resources.files("vigil.console") / "assets"
    for name, content_type in (
        ("console.css", "text/css; charset=utf-8"),
        ("console.js", "text/javascript; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ):
        body = (folder / name).read_bytes()
        stem, ext = name.rsplit(".", 1)
        digest = hashlib.sha256(body).hexdigest()[:12]
        found[name] = Asset(f"{ASSETS}/{stem}.{digest}.{ext}", body, content_type)
    return found


def serve(asset: Asset | None, request: HttpRequest) -> HttpResponse:
    """The answer to a request for ``asset`` (None: no asset has that path)."""
    if asset is None:
        return HttpResponse(
            404,
            b"not found",
            {"content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff"},
        )
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(405, b"", {"allow": "GET, HEAD"})
    return HttpResponse(
        200,
        asset.body,
        {
            "content-type": asset.content_type,
            # The name changes with the content, so a copy never needs checking again.
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff",
        },
    )
