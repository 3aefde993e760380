"""What a client that follows a seed may send, every tool and field of the four seeds walked.

The scenario makes every tool succeed in the home namespace; just before each call of a seed's
tool succeeds, from the same state, this module makes the same call again (then puts the world
back) with:

- the seed's own example call (its placeholders filled from the call that worked): at least one
  must succeed for every seed tool;
- every field the call carried, given each seed-valid value of a battery (empty, newlines, tabs,
  control and invisible characters, scripts, emoji, the longest the bounds allow, every enum
  value, the seed's own examples): a free-text field must take each one and the call succeed;
  a caller-chosen name takes all but the control and invisible characters, as the bounds
  documented in docs/DESIGN.md ("Bounds on input") say.

Each generated value is first checked against the seed's schema (tests/harness/seeds.py), so
the battery never tests a value the seed itself refuses.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.harness.probe import DOORS, Outcome
from tests.harness.scenario import Success, seed
from tests.harness.schema import branches, input_schema, properties, valid
from tests.harness.seeds import EXAMPLES, SCHEMAS, SEED_TOOLS
from tests.harness.walk import walked
from tests.harness.worlds import Actor, HarnessWorld
from vigil import catalog

DESIGN = Path(__file__).parents[2] / "docs" / "DESIGN.md"

# Free text a person reads: any Unicode text is stored as written (display escapes it), with
# the longest each takes, in characters or, where the bound is in bytes, bytes of UTF-8.
TEXT_CHARACTERS = {"agent_id": 64, "search": 200, "title": 200, "choices": 200}
TEXT_BYTES = {"currentStep": 8 * 1024, "body": 32 * 1024}
# A name a caller chooses, compared for identity: printable characters, at most this many.
NAMES = {"sessionId": 128, "idempotencyKey": 128, "idempotency_key": 128, "scope": 200}
# Numbers at the bounds the seeds set.
NUMBERS: dict[str, list[Any]] = {
    "progressPercent": [0, 100, 50, 33.25, 0.5],
    "expect_within_seconds": [2, 300, 2592000],
    "lease_duration_seconds": [5, 60, 300],
}
ENUMS: dict[tuple[str, str], list[Any]] = {
    ("session_heartbeat", "status"): ["active", "waiting", "blocked"],
    ("list_directory", "kind"): ["person", "agent", "service"],
}
# A file's bytes: none, a few, and the most a call carries (64 KiB).
BASE64 = ["", "AA==", "aGk=", base64.b64encode(bytes(64 * 1024)).decode()]
MEDIA_TYPES = [
    "application/pdf",
    "Text/HTML",
    "text/plain; charset=utf-8",
    'multipart/form-data; boundary="a b"',
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
]
# The dead-man seed lists "any of" three actions: each alone, all, none, and one twice.
ON_EXPIRY = [
    [],
    ["mark_failed"],
    ["release_leases"],
    ["queue_alert"],
    ["release_leases", "queue_alert"],
    ["queue_alert", "mark_failed", "release_leases"],
    ["mark_failed", "mark_failed"],
]

_PLAIN = [
    "x",
    "with spaces / slashes + base64==",
    " padded ",
    "ünïcödé — 日本語 — עברית",
    "emoji 🚀 🇺🇳",
]
_CONTROL = [
    "",
    "joined emoji 👩‍💻",
    "two\nlines",
    "\ttabbed\t",
    "crlf\r\nline",
    "bell\x07 nul\x00 esc\x1b[31m del\x7f",
    "\u202eevil\u200b \ufeff \u2028",
]


def _longest(characters: int | None = None, utf8_bytes: int | None = None) -> list[str]:
    if utf8_bytes is not None:
        return ["é" * (utf8_bytes // 2), "🚀" * (utf8_bytes // 4), "a" * utf8_bytes]
    assert characters is not None
    return ["é" * characters, "🚀" * characters, "a" * characters]


def _seed_examples(tool: str, name: str) -> list[Any]:
    example = EXAMPLES[tool]
    if name in example.arguments and name not in example.placeholders:
        return [example.arguments[name]]
    return []


def battery(tool: str, name: str) -> tuple[list[Any], bool]:
    """The values to give field ``name`` of ``tool``, and whether the call must succeed with
    each (rather than only not be refused as invalid)."""
    examples = _seed_examples(tool, name)
    if name in TEXT_CHARACTERS or name in TEXT_BYTES:
        longest = _longest(TEXT_CHARACTERS.get(name), TEXT_BYTES.get(name))
        values = [*_PLAIN, *_CONTROL, *longest, *examples]
        if name == "choices":
            return [[v] for v in values if v], True
        return values, True
    if name == "file_name":
        # A file needs a name: one left with no printable character once made safe is refused.
        return [v for v in [*_PLAIN, *_CONTROL, *_longest(1024)] if v.strip()], True
    if name == "base64":
        return BASE64, True
    if name == "media_type":
        return MEDIA_TYPES, True
    if name in NAMES:
        return [*_PLAIN, *_longest(NAMES[name]), *examples], True
    if name in NUMBERS:
        return [*NUMBERS[name], *examples], True
    if (tool, name) in ENUMS:
        return [*ENUMS[tool, name], *examples], True
    if name == "on_expiry":
        return ON_EXPIRY, True
    if name == "instructionCursor":
        # Cursors are handed out; an empty one, which none is, stands for none.
        return [""], True
    return [], False


def _seed_valid(tool: str, name: str, value: Any) -> bool:
    schema = SCHEMAS[tool]["properties"][name]
    bytes_bound = schema.get("maxBytes")
    if bytes_bound is not None and len(value.encode()) > bytes_bound:
        return False
    return valid({k: v for k, v in schema.items() if k != "maxBytes"}, value)


def _filled(tool: str, success: Success) -> dict[str, Any] | None:
    """The seed's example call with its placeholders filled from a call that worked; None if
    that call lacks one of them."""
    example = EXAMPLES[tool]
    arguments = dict(example.arguments)
    for name in example.placeholders:
        if name not in success.arguments:
            return None
        arguments[name] = success.arguments[name]
    return arguments


_keys = itertools.count()


def _fresh_key(tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A new retry key, so a variant is never a replay of the call it derives from."""
    field_name = catalog.tool(tool_name).idempotency_field
    if field_name not in arguments:
        return arguments
    return {**arguments, field_name: f"seed-walk-{next(_keys)}"}


def _variant(success: Success, name: str, value: Any) -> dict[str, Any]:
    arguments = {**_fresh_key(success.tool, success.arguments), name: value}
    if name == "body":
        # Mentions are spans of the body: a new body would put them out of it.
        arguments.pop("mentions", None)
    return arguments


@dataclass
class Walk:
    examples_passed: set[str] = field(default_factory=set)
    examples_failed: dict[str, list[str]] = field(default_factory=dict)
    fields_walked: set[tuple[str, str]] = field(default_factory=set)
    failures: dict[str, list[str]] = field(default_factory=dict)


def _describe(arguments: dict[str, Any], outcome: Outcome) -> str:
    shown = json.dumps(arguments, ensure_ascii=True)[:300]
    return f"{shown} -> {outcome.describe()}"


@pytest.fixture(scope="module")
def walk() -> Walk:
    world = HarnessWorld()
    found = Walk()
    doors = itertools.cycle(DOORS)

    def actor_of(label: str) -> Actor:
        return next(a for a in world.cast.actors if a.label == label)

    def attempt(success: Success, before: dict[str, Any], arguments: dict[str, Any]) -> Outcome:
        after = world.snapshot()
        world.restore(before)
        secrets = [(a, a.secret) for a in world.cast.actors]
        outcome = world.call(next(doors), success.tool, arguments, actor_of(success.actor))
        world.restore(after)
        for actor, secret in secrets:
            actor.secret = secret
        return outcome

    def rehearse(success: Success, before: dict[str, Any]) -> None:
        tool = success.tool
        if tool not in SCHEMAS:
            return
        if tool not in found.examples_passed:
            example = _filled(tool, success)
            if example is not None:
                outcome = attempt(success, before, _fresh_key(tool, example))
                if outcome.ok:
                    found.examples_passed.add(tool)
                else:
                    found.examples_failed.setdefault(tool, []).append(_describe(example, outcome))
        for name in SCHEMAS[tool]["properties"]:
            values, must_succeed = battery(tool, name)
            if not values or (tool, name) in found.fields_walked:
                continue
            # The seed requires a notify_address with queue_alert.
            if name == "on_expiry" and "notify_address" not in success.arguments:
                continue
            # A field the call left out is walked only where the call takes its plainest
            # value: some fields exclude others (a title goes with a new conversation).
            if (
                name not in success.arguments
                and not attempt(success, before, _variant(success, name, values[0])).ok
            ):
                continue
            found.fields_walked.add((tool, name))
            for value in values:
                assert _seed_valid(tool, name, value), (tool, name, value)
                arguments = _variant(success, name, value)
                outcome = attempt(success, before, arguments)
                refused = outcome.code == "invalid_argument"
                if refused or (must_succeed and not outcome.ok):
                    found.failures.setdefault(tool, []).append(
                        f"{name}: {_describe(arguments, outcome)}"
                    )

    seed(world, walked(), rehearse)
    return found


@pytest.mark.parametrize("tool_name", SEED_TOOLS)
def test_the_seed_example_call_succeeds(walk: Walk, tool_name: str) -> None:
    assert tool_name in walk.examples_passed, "\n".join(
        walk.examples_failed.get(tool_name, ["no call of it succeeded to fill the example"])[:5]
    )


@pytest.mark.parametrize("tool_name", SEED_TOOLS)
def test_every_seed_valid_value_is_accepted(walk: Walk, tool_name: str) -> None:
    failures = walk.failures.get(tool_name, [])
    assert not failures, f"{len(failures)} seed-valid values refused:\n" + "\n".join(failures[:20])


# The scenario's chats have no one else to ask (it names no target), so start_chat's choices,
# ask's own type, are walked through ask.
NOT_REACHED = {("start_chat", "choices")}


def test_every_field_with_a_battery_was_walked(walk: Walk) -> None:
    expected = {
        (tool, name)
        for tool in SEED_TOOLS
        for name in SCHEMAS[tool]["properties"]
        if battery(tool, name)[0]
    } - NOT_REACHED
    assert expected - walk.fields_walked == set()


def _bounds_section() -> str:
    text = DESIGN.read_text()
    match = re.search(r"^## Bounds on input\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "docs/DESIGN.md has no section 'Bounds on input'"
    return match.group(1)


_BOUND_KEYWORDS = (
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "maxProperties",
)


def _beyond(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    return any(k in ours and ours[k] != theirs.get(k) for k in _BOUND_KEYWORDS)


def _bounded_beyond_the_seed(tool_name: str) -> list[str]:
    """The properties of a seed tool's published input schema that set a length, a pattern, a
    format, a count or a range the seed does not, on themselves or on their items."""
    seed_properties = SCHEMAS[tool_name]["properties"]
    kept: list[str] = []
    for name, ours in properties(input_schema(catalog.tool(tool_name))).items():
        theirs = seed_properties.get(name)
        if theirs is None:
            continue
        if any(
            _beyond(branch, theirs) or _beyond(branch.get("items", {}), theirs.get("items", {}))
            for branch in branches(ours)
        ):
            kept.append(name)
    return kept


@pytest.mark.parametrize("tool_name", SEED_TOOLS)
def test_every_bound_beyond_the_seed_is_documented(tool_name: str) -> None:
    section = _bounds_section()
    missing = [name for name in _bounded_beyond_the_seed(tool_name) if f"`{name}`" not in section]
    assert not missing, f"bounds kept on {missing} are not in DESIGN.md 'Bounds on input'"
