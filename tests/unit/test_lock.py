"""The Lambda functions' locks: what the tests run is what the build ships.

requirements/lambda.lock pins every distribution of requirements/lambda.txt, with the hash of
each file; the build installs it with --require-hashes (tests/template/test_template.py builds
an artifact and reads what it holds), and ``make`` installs it into the tests' environment first.
requirements/lambda-source.lock does the same for requirements/lambda-source.txt, the pure-Python
distributions PyPI has as source alone: the build makes their wheels from the hashed sdists, with
the build backend requirements/lambda-build.lock pins (never shipped), and ships them too.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "requirements"
LOCK = REQUIREMENTS / "lambda.lock"
SOURCE_LOCK = REQUIREMENTS / "lambda-source.lock"
BUILD_LOCK = REQUIREMENTS / "lambda-build.lock"
# What the functions ship: PyPI's wheels, and the wheels the build makes from PyPI's sdists.
SHIPPED = (LOCK, SOURCE_LOCK)
EVERY_LOCK = (*SHIPPED, BUILD_LOCK)


def locked(lock: Path = LOCK) -> dict[str, str]:
    """Each distribution a lock pins: its canonical name and version."""
    pins = re.findall(r"^([A-Za-z0-9._-]+)==([^\s\\]+)", lock.read_text(), flags=re.MULTILINE)
    return {canonicalize_name(name): version for name, version in pins}


def shipped() -> dict[str, str]:
    """Every distribution the functions ship, from either lock."""
    return {name: version for lock in SHIPPED for name, version in locked(lock).items()}


def entries(lock: Path) -> list[str]:
    """A lock's entries, one a distribution, after its heading (up to the first blank line)."""
    body = lock.read_text().split("\n\n", 1)[1]
    # pip-compile heads the build tools (setuptools, pip) with a comment of its own.
    body = re.sub(r"^# .*\n", "", body, flags=re.MULTILINE)
    return re.split(r"\n(?=[A-Za-z0-9])", body.strip("\n"))


def requirements(lock: Path) -> list[Requirement]:
    """What a lock is made from: requirements/<name>.txt for requirements/<name>.lock."""
    lines = lock.with_suffix(".txt").read_text().splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("lock", EVERY_LOCK, ids=lambda lock: lock.name)
def test_every_locked_distribution_is_pinned_and_hashed(lock: Path) -> None:
    found = entries(lock)
    assert found
    for entry in found:
        head = entry.splitlines()[0]
        assert re.match(r"^[A-Za-z0-9._-]+==\S+ \\$", head), head
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), head
    assert len(found) == len(locked(lock))


@pytest.mark.parametrize("lock", EVERY_LOCK, ids=lambda lock: lock.name)
def test_the_lock_satisfies_what_it_is_made_from(lock: Path) -> None:
    pins = locked(lock)
    for requirement in requirements(lock):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not locked in {lock.name}"
        assert requirement.specifier.contains(pins[name]), (name, pins[name])


def test_what_is_built_from_source_is_what_lambda_source_names_and_nothing_else() -> None:
    """The build installs those wheels without their dependencies: a dependency would be
    missing from the artifact, so the source lock holds its requirements alone."""
    named = {canonicalize_name(requirement.name) for requirement in requirements(SOURCE_LOCK)}
    assert named
    assert set(locked(SOURCE_LOCK)) == named
    for entry in entries(SOURCE_LOCK):
        assert re.findall(r"# via (.*)", entry) == ["-r requirements/lambda-source.txt"], entry


def test_no_distribution_is_locked_twice() -> None:
    seen: dict[str, str] = {}
    for lock in EVERY_LOCK:
        for name in locked(lock):
            assert name not in seen, f"{name} is in {seen.get(name)} and {lock.name}"
            seen[name] = lock.name


def test_what_ships_is_within_the_projects_own_ranges() -> None:
    """pyproject.toml's dependencies are what the tests' environment installs: each one the
    functions ship is locked at a version within its range."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = shipped()
    checked = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if name in pins:
            assert requirement.specifier.contains(pins[name]), (name, pins[name])
            checked.append(name)
    assert "oncalendar" in checked


def test_the_tests_run_the_locked_versions() -> None:
    for name, version in shipped().items():
        assert metadata.version(name) == version, f"{name}: {metadata.version(name)} != {version}"
