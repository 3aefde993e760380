"""The shape of the code, checked: imports run one way, down the layers, with no cycle; each
capability's rules import no tools, transports or adapters; the alarm function loads no tool,
the API function only those it is called for; the catalog knows every tool's module; and the
public interface follows one naming rule."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.support import Tenant
from vigil import catalog
from vigil.errors import VigilError

SRC = Path(__file__).resolve().parents[2] / "src"
CAPABILITIES = (
    "audit",
    "conversations",
    "identity",
    "leases",
    "mailboxes",
    "notifications",
    "progress",
    "requests",
    "runs",
    "sessions",
    "switches",
)
# Modules that are not the rules: tools, transports, and anything that talks to a backend.
NOT_RULES = re.compile(
    r"^vigil\.(app|catalog|wiring|stores|transports|entrypoints|local)(\.|$)"
    r"|^vigil\.\w+\.((\w+_)?tools|dynamo|memory|sqs|aws)$"
    r"|^vigil\.kit\.(dynamo|memory|aws|tooling)$"
    r"|^(boto3|botocore|moto)(\.|$)"
)


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@cache
def imports_of(module: str) -> frozenset[str]:
    """What ``module`` imports when it runs, function-local imports included: everything but
    the imports that only type checking sees."""
    path = SRC / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = SRC / module.replace(".", "/") / "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    found.add(f"{node.module}.{alias.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return frozenset(found)


def _is_module(name: str) -> bool:
    base = SRC / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def reachable(module: str) -> set[str]:
    """Every vigil module (and every outside top-level package) ``module`` loads."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in imports_of(current):
            if name.startswith("vigil.") and _is_module(name):
                todo.append(name)
            else:
                seen.add(name)
    return seen


# -- direction ----------------------------------------------------------------------------
# Bottom first. A module may import its own package, a lower layer, or a sibling of its layer
# (so long as no cycle forms); never a higher layer. What a lower capability must cause in a
# higher one goes through a port the lower one declares and the higher one implements
# (docs/DESIGN.md, "The layers").
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kit", "clock", "errors", "config", "observability"),
    ("identity", "audit", "quotas", "alarms"),
    ("leases", "mailboxes", "progress", "runs", "sessions", "attachments", "grants"),
    ("conversations",),
    ("requests",),
    ("switches",),
    ("notifications",),
    (
        "app",
        "context",
        "catalog",
        "store",
        "stores",
        "bootstrap",
        "transports",
        "console",
        "oauth",
        "people",
        "infra",
    ),
    ("entrypoints", "wiring", "local", "cli", "beater", "__main__"),
)
LAYER_OF = {part: index for index, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str:
    """The package (or top-level module) of ``vigil`` that ``module`` belongs to; the bare
    ``vigil`` package, which holds only its version, counts as the kit."""
    return module.split(".")[1] if "." in module else "kit"


@cache
def every_import(module: str) -> frozenset[str]:
    """Every vigil module ``module`` names in an import: at its top, inside a function, or
    only for the type checker, for a type is a dependency too."""
    path = SRC / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = SRC / module.replace(".", "/") / "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("vigil"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vigil"):
            assert node.level == 0, f"{module} imports relatively"
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if _is_module(f"{node.module}.{alias.name}")
            )
    found.discard(module)
    return frozenset(found)


def every_module() -> list[str]:
    return sorted(module_name(path) for path in SRC.glob("vigil/**/*.py"))


def test_every_part_of_vigil_has_a_layer() -> None:
    assert sorted({part_of(m) for m in every_module()} - set(LAYER_OF)) == []


def test_no_import_runs_up_the_layers() -> None:
    upward = [
        f"{module} imports {name}"
        for module in every_module()
        for name in sorted(every_import(module))
        if LAYER_OF[part_of(name)] > LAYER_OF[part_of(module)]
    ]
    assert upward == []


def test_the_kit_imports_no_capability() -> None:
    beyond = [
        f"{module} imports {name}"
        for module in every_module()
        if part_of(module) == "kit"
        for name in sorted(every_import(module))
        if LAYER_OF[part_of(name)] > 0
    ]
    assert beyond == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``edges`` that hold more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_two_packages_import_each_other_even_through_others() -> None:
    edges: dict[str, set[str]] = {}
    for module in every_module():
        for name in every_import(module):
            if part_of(name) != part_of(module):
                edges.setdefault(part_of(module), set()).add(part_of(name))
    assert _cycles(edges) == []


def test_no_module_imports_itself_through_others() -> None:
    edges = {module: set(every_import(module)) for module in every_module()}
    assert _cycles(edges) == []


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_each_capability_keeps_its_rules_tools_and_stores_in_one_folder(capability: str) -> None:
    folder = SRC / "vigil" / capability
    for part in ("records", "tools", "store", "dynamo", "memory"):
        assert (folder / f"{part}.py").exists(), f"{capability} has no {part}.py"


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_the_rules_import_no_tools_transports_or_adapters(capability: str) -> None:
    loaded = reachable(f"vigil.{capability}.records")
    offending = sorted(name for name in loaded if NOT_RULES.match(name))
    assert offending == []


def test_the_alarm_function_loads_no_tool_or_transport() -> None:
    loaded = reachable("vigil.entrypoints.alarm")
    assert "vigil.switches.engine" in loaded  # the walk does see what the handler runs
    offending = sorted(
        name
        for name in loaded
        if re.match(
            r"^vigil\.(\w+\.(\w+_)?tools|catalog|app|transports(\..*)?|kit\.tooling)$", name
        )
        or name == "mcp"
    )
    assert offending == []


def test_the_catalog_names_every_tool_module_and_what_it_declares() -> None:
    declared = {}
    # A capability's tools.py, and the modules of its other tool families (watch_tools.py...).
    for path in sorted(SRC.glob("vigil/*/*tools.py")):
        module = module_name(path)
        declared |= {tool.name: module for tool in importlib.import_module(module).TOOLS}
    assert declared == catalog.DECLARED_IN
    assert [tool.name for tool in catalog.tools()] == list(catalog.DECLARED_IN)


def test_the_api_function_imports_a_tool_module_only_when_one_of_its_tools_is_called() -> None:
    loaded = reachable("vigil.entrypoints.api")
    assert {"vigil.app", "vigil.catalog", "vigil.transports.mcp"} <= loaded
    assert sorted(name for name in loaded if re.match(r"^vigil\.\w+\.(\w+_)?tools$", name)) == []


# -- naming -------------------------------------------------------------------------------
SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
CAMEL = re.compile(r"^[a-z][a-z0-9]*([A-Z][a-z0-9]*)*$")
# The seed fixes session_heartbeat's inputs and its result's names, in camelCase; what the result
# adds follows the seed's spelling, and so does the rest of the sessions family.
CAMEL_CASE = {
    "session_heartbeat",
    "end_session",
    "post_instruction",
    "list_instructions",
    "list_sessions",
}
SEEDED = {
    "session_heartbeat": {
        "sessionId",
        "status",
        "progressPercent",
        "currentStep",
        "stepIndex",
        "stepCount",
        "acknowledgedInstructionIds",
        "instructionCursor",
        "idempotencyKey",
        "lastBeatAt",
        "instructions",
        "nextInstructionCursor",
        "acknowledged",
        "unknownInstructionIds",
        "id",
        "body",
        "postedBy",
        "postedAt",
        "deliveryCount",
    }
}


def property_names(schema: Any) -> set[str]:
    """Every property name an object schema (nested ones and $defs included) declares."""
    names: set[str] = set()
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            names.update(properties)
        for value in schema.values():
            names |= property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= property_names(value)
    return names


@pytest.mark.parametrize("tool", catalog.tools(), ids=lambda tool: tool.name)
def test_every_field_is_snake_case_unless_a_seed_fixes_it(tool: Any) -> None:
    names = property_names(tool.input_schema()) | property_names(tool.output_schema())
    if tool.name in SEEDED:
        assert names <= SEEDED[tool.name]
    style = CAMEL if tool.name in CAMEL_CASE else SNAKE
    assert sorted(n for n in names if not style.match(n)) == []


def test_a_validation_problem_names_the_argument_as_written(tenant: Tenant) -> None:
    _, secret = tenant.register()
    with pytest.raises(VigilError) as refused:
        tenant.call(
            "session_heartbeat",
            secret,
            sessionId="s-1",
            idempotencyKey="k-1",
            currentStep="\ud800",
            acknowledgedInstructionIds=["ins_aaaaaaaaaaaaaaaa", ""],
        )
    fields = [problem["field"] for problem in refused.value.details["problems"]]
    assert fields == ["currentStep", "acknowledgedInstructionIds.1"]


@pytest.mark.parametrize("script", sorted((SRC.parent / "scripts").glob("*.py")), ids=str)
def test_every_name_a_script_imports_from_vigil_exists(script: Path) -> None:
    """The scripts run by hand (measurements, benchmarks), not by the suite: what they import,
    at their top or inside a function, is checked here, so a rename reaches them too."""
    missing = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vigil"):
            module = importlib.import_module(node.module)
            missing += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if not hasattr(module, alias.name) and not _is_module(f"{node.module}.{alias.name}")
            ]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vigil"):
                    importlib.import_module(alias.name)
    assert missing == []
