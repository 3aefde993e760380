"""Helpers shared by tests."""

from __future__ import annotations

from typing import Any

from vigil.app import App
from vigil.bootstrap import bootstrap_operator
from vigil.clock import ManualClock


class Tenant:
    """A namespace with its operator, for tests that call tools."""

    def __init__(self, app: App, clock: ManualClock, namespace: str) -> None:
        self.app = app
        self.namespace = namespace
        self.operator, self.operator_secret = bootstrap_operator(app.store, clock, namespace, "Ops")

    def call(self, tool: str, secret: str | None = None, **arguments: Any) -> dict[str, Any]:
        return self.app.call(tool, arguments, secret or self.operator_secret)

    def register(
        self, kind: str = "agent", role: str = "worker", name: str = "w"
    ) -> tuple[str, str]:
        result = self.call("register", kind=kind, role=role, name=name)
        return result["principal"]["id"], result["secret"]
