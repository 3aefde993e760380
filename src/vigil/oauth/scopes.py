"""What an OAuth grant lets its client do: each scope is a set of toolsets, and who may hold
it. A token calls a tool only if its principal's role admits it, as any credential's must,
and one of its scopes covers it; a connection that chooses no toolsets is shown its scopes'."""

from __future__ import annotations

from dataclasses import dataclass

from vigil.catalog import TOOLSETS
from vigil.kit.principals import Kind, Role


@dataclass(frozen=True)
class Scope:
    name: str
    title: str  # what the consent page says it allows
    toolsets: tuple[str, ...]
    kinds: frozenset[Kind]  # the principals that may hold it, by kind...
    roles: frozenset[Role]  # ...or by role

    @property
    def holders(self) -> str:
        """Who may hold it, as the consent page says it."""
        named = [f"{kind}s" for kind in sorted(self.kinds)] + [f"{r}s" for r in sorted(self.roles)]
        return "for " + " and ".join(named)

    def fits(self, kind: Kind, role: Role) -> bool:
        return kind in self.kinds or role in self.roles


AGENT = Scope(
    "vigil:agent",
    "Work as this agent: heartbeats, leases, sessions, mailboxes, messages and requests.",
    (
        "identity",
        "liveness",
        "sessions",
        "fleet",
        "mailboxes",
        "conversations",
        "requests",
        "files",
    ),
    frozenset({"agent", "service"}),
    frozenset(),
)
PEOPLE = Scope(
    "vigil:people",
    "Act as you: read and decide your requests, message, and watch and steer agents.",
    ("identity", "conversations", "requests", "files", "oversight"),
    frozenset({"person"}),
    frozenset(),
)
ADMIN = Scope(
    "vigil:admin",
    "Administer the namespace: principals and secrets, channels, pauses, audit and usage.",
    ("administration", "oversight"),
    frozenset(),
    frozenset({"operator"}),
)
SCOPES: dict[str, Scope] = {scope.name: scope for scope in (AGENT, PEOPLE, ADMIN)}
SUPPORTED = tuple(SCOPES)

_TOOLS_OF: dict[str, frozenset[str]] = {
    scope.name: frozenset(
        tool for toolset in TOOLSETS if toolset.name in scope.toolsets for tool in toolset.tools
    )
    for scope in SCOPES.values()
}


def parse(text: str | None) -> tuple[str, ...]:
    """The scopes a space-separated list names, in the order of SCOPES, each once; a name not
    in it is left out (a client may ask for more than this server knows)."""
    asked = set((text or "").split())
    return tuple(name for name in SCOPES if name in asked)


def fitting(asked: tuple[str, ...], kind: Kind, role: Role) -> tuple[str, ...]:
    """Of ``asked`` (every scope, when nothing is), the scopes a principal may hold."""
    return tuple(name for name in asked or SUPPORTED if SCOPES[name].fits(kind, role))


def covers(scopes: frozenset[str], tool: str) -> bool:
    return any(tool in _TOOLS_OF[name] for name in scopes if name in _TOOLS_OF)


def step_up(held: frozenset[str], tool: str) -> str:
    """What a token that cannot call ``tool`` must be granted instead: the scopes it holds and
    the first that covers ``tool`` (RFC 6750's scope, space-separated)."""
    needed = next((name for name, tools in _TOOLS_OF.items() if tool in tools), None)
    return " ".join(name for name in SUPPORTED if name in held or name == needed)


def toolsets_of(scopes: frozenset[str]) -> str:
    """The toolsets ``scopes`` cover, as a selection (comma-separated)."""
    return ",".join(
        dict.fromkeys(t for name in SUPPORTED if name in scopes for t in SCOPES[name].toolsets)
    )
