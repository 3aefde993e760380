"""The API page at /docs: Swagger UI over the OpenAPI document.

Swagger UI's script and stylesheet come from a pinned package in the Lambda lock
(swagger-ui-bundle-v2) and are served from this origin, never from a CDN; the page's own
initializer is a static file beside this module, so the page carries no inline script. The
router imports this module on the first request under /docs: no other route reads Swagger
UI's files or pays for importing them.

Every address on the page is relative to /docs (``docs/assets/...``, ``openapi.json``), so it
works wherever the service is reached: API Gateway's stage-less URL, a custom domain, the edge
distribution, the local runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources

from vigil.errors import not_found
from vigil.kit.http import (
    ASSET_CACHE_CONTROL,
    Asset,
    HttpRequest,
    HttpResponse,
    asset,
    failure,
    method_not_allowed,
)

PREFIX = "/docs"
ASSETS = f"{PREFIX}/assets"

# Swagger UI's files that the page uses: the bundle carries its default (API) preset, so the
# standalone preset, the source maps and the other builds are not served.
SWAGGER_UI_FILES = (
    ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    ("swagger-ui.css", "text/css; charset=utf-8"),
)
INITIALIZER = ("swagger-init.js", "text/javascript; charset=utf-8")

# Scripts and styles from this origin only, never inline; Swagger UI's icons are data: images
# in its stylesheet; it fetches the document (and "Try it out" calls) from this origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    # The page names its assets by digest: a new deployment's page must be fetched again.
    "cache-control": "no-cache",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}
_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Vigil API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{css}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{bundle}"></script>
<script src="{init}"></script>
</body>
</html>
"""


def _assets() -> dict[str, Asset]:
    from swagger_ui_bundle import swagger_ui_path

    found = [asset(swagger_ui_path, name, kind, ASSETS) for name, kind in SWAGGER_UI_FILES]
    found.append(asset(resources.files("vigil.transports") / "assets", *INITIALIZER, ASSETS))
    return {asset.name: asset for asset in found}


def _relative(path: str) -> str:
    """An asset's address from the page at /docs: relative, so any base path is kept."""
    return path.removeprefix("/")


class ApiDocs:
    def __init__(self) -> None:
        self.assets: Mapping[str, Asset] = _assets()
        self._by_path = {asset.path: asset for asset in self.assets.values()}
        self._page = _PAGE.format(
            css=_relative(self.assets["swagger-ui.css"].path),
            bundle=_relative(self.assets["swagger-ui-bundle.js"].path),
            init=_relative(self.assets[INITIALIZER[0]].path),
        ).encode()

    def handle(self, request: HttpRequest) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return method_not_allowed(request, "GET", "HEAD")
        if request.path == PREFIX:
            return HttpResponse(200, self._page, dict(PAGE_HEADERS))
        if request.path == f"{PREFIX}/":
            # The page's relative addresses resolve from /docs, not /docs/.
            return HttpResponse(308, b"", {"location": f"../{PREFIX.lstrip('/')}"})
        found = self._by_path.get(request.path)
        if found is None:
            return failure(not_found(f"route {request.path}"))
        return HttpResponse(
            200,
            found.body,
            {
                "content-type": found.content_type,
                "cache-control": ASSET_CACHE_CONTROL,
                "x-content-type-options": "nosniff",
                "cross-origin-resource-policy": "same-origin",
            },
        )
