"""Lambda entry point for the HTTP API (MCP, REST, OpenAPI).

Importing it is the function's init phase, which SnapStart snapshots: it builds the router and
the AWS clients, so that requests find them built.

What init makes lives as long as the sandbox, so the garbage collector does not look at it:
not while init runs, where its passes over a growing heap took a tenth of an on-demand cold
start, nor afterwards (``gc.freeze``). The few hundred objects init drops in cycles stay."""

import gc

gc.disable()

from vigil.entrypoints.api import handler, init  # noqa: E402

init()
gc.freeze()
gc.enable()

__all__ = ["handler"]
