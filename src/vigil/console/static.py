"""The console's stylesheet, script and icon, served under names that carry their content's
digest, so a browser keeps each copy for a year and a new deployment's pages name new ones."""

from __future__ import annotations

from importlib import resources

from vigil.console.responder import PREFIX
from vigil.kit.http import ASSET_CACHE_CONTROL, Asset, HttpRequest, HttpResponse, asset

ASSETS = f"{PREFIX}/assets"


def load_assets() -> dict[str, Asset]:
    """Each asset by its file's own name (console.css, console.js, icon.svg)."""
    folder = resources.files("vigil.console") / "assets"
    return {
        name: asset(folder, name, content_type, ASSETS)
        for name, content_type in (
            ("console.css", "text/css; charset=utf-8"),
            ("console.js", "text/javascript; charset=utf-8"),
            ("icon.svg", "image/svg+xml"),
        )
    }


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
            "cache-control": ASSET_CACHE_CONTROL,
            "x-content-type-options": "nosniff",
        },
    )
