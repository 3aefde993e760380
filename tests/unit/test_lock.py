"""The Lambda functions' lock: what the tests run is what the build ships.

requirements/lambda.lock pins every distribution of requirements/lambda.txt, with the hash of
each file; the build installs it with --require-hashes (tests/template/test_template.py builds
an artifact and reads what it holds), and ``make`` installs it into the tests' environment first.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements" / "lambda.lock"


def locked() -> dict[str, str]:
    """Each locked distribution's canonical name and version."""
    text = LOCK.read_text()
    pins = re.findall(r"^([A-Za-z0-9._-]+)==([^\s\\]+)", text, flags=re.MULTILINE)
    return {canonicalize_name(name): version for name, version in pins}


def test_every_locked_distribution_is_pinned_and_hashed() -> None:
    entries = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text().split("\n\n", 1)[1])
    assert entries
    for entry in entries:
        head = entry.splitlines()[0]
        assert re.match(r"^[A-Za-z0-9._-]+==\S+ \\$", head), head
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), head


def test_the_lock_satisfies_what_the_functions_require() -> None:
    pins = locked()
    for line in (REPO / "requirements" / "lambda.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not locked"
        assert requirement.specifier.contains(pins[name]), (name, pins[name])


def test_the_tests_run_the_locked_versions() -> None:
    for name, version in locked().items():
        assert metadata.version(name) == version, f"{name}: {metadata.version(name)} != {version}"
