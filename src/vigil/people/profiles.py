"""Where the people's commands call, and with which secret.

In order: ``--profile NAME``, from the profiles file; else ``VIGIL_ENDPOINT`` and
``VIGIL_SECRET``; else the local runtime's ``.vigil/local.json`` (its REST base and its
operator's secret, which is never sent anywhere else).

The profiles file is ``$VIGIL_CONFIG``, else ``$XDG_CONFIG_HOME/vigil/profiles.toml``, else
``~/.config/vigil/profiles.toml``: one table per profile under ``profiles``, each with an
``endpoint`` and a ``secret``. It holds secrets, so it is written 0600 from the start, and a file
that its group or others may read or write is refused rather than read.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path

from vigil.people.client import Endpoint, Exit, Failure, is_http_url, rest_base

PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
HEADER = (
    "# Vigil CLI profiles, written by `vigil profile add`: keep this file mode 0600, it holds "
    "secrets.\n"
)


class NoProfile(Failure):
    def __init__(self, message: str) -> None:
        super().__init__(Exit.UNREACHABLE, message)


def config_path(env: Mapping[str, str]) -> Path:
    if env.get("VIGIL_CONFIG"):
        return Path(env["VIGIL_CONFIG"])
    config_home = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "vigil" / "profiles.toml"


def load_profiles(path: Path) -> dict[str, Endpoint]:
    """The profiles in ``path`` (none if there is no file), each as an endpoint."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as failed:
        raise NoProfile(f"cannot read {path}: {failed.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise NoProfile(
            f"{path} is open to its group or others (mode {stat.S_IMODE(mode):04o}) and holds "
            f"secrets: it is not read; make it private with `chmod 600 {path}`"
        )
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as failed:
        # A TOML error names a line and column, never the text: no secret gets out here.
        raise NoProfile(f"cannot read {path}: {failed}") from None
    tables = document.get("profiles", {})
    if not isinstance(tables, dict):
        raise NoProfile(f"{path}: profiles is not a table")
    profiles = {}
    for name, table in tables.items():
        endpoint = table.get("endpoint") if isinstance(table, dict) else None
        secret = table.get("secret") if isinstance(table, dict) else None
        if not (isinstance(endpoint, str) and isinstance(secret, str)):
            raise NoProfile(f"{path}: profile {name!r} needs an endpoint and a secret, as text")
        profiles[name] = Endpoint(base=rest_base(endpoint), secret=secret, source=f"profile {name}")
    return profiles


def save_profile(path: Path, name: str, endpoint: str, secret: str) -> None:
    """Adds (or replaces) profile ``name``, keeping the others; the file is replaced whole,
    created 0600 before anything is written to it."""
    profiles = load_profiles(path)
    profiles[name] = Endpoint(base=rest_base(endpoint), secret=secret, source=f"profile {name}")
    lines = [HEADER]
    for each, profile in sorted(profiles.items()):
        lines += [
            f"\n[profiles.{each}]\n",
            f"endpoint = {_toml_string(profile.base)}\n",
            f"secret = {_toml_string(profile.secret)}\n",
        ]
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        os.fchmod(stream.fileno(), 0o600)
        stream.write("".join(lines))
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def check_new_profile(name: str, endpoint: str) -> None:
    """Refuses a profile name that is not a plain TOML key, or an endpoint that is not http(s)."""
    if not PROFILE_NAME.match(name):
        raise Failure(Exit.USAGE, "a profile name is 1-64 letters, digits, - or _")
    if not is_http_url(endpoint):
        raise Failure(Exit.USAGE, f"the endpoint must be an http:// or https:// URL: {endpoint}")


def resolve(
    profile: str | None, env: Mapping[str, str], local_state: Mapping[str, str]
) -> Endpoint:
    """The endpoint and secret a command uses (see the module's docstring for the order)."""
    if profile is not None:
        path = config_path(env)
        found = load_profiles(path).get(profile)
        if found is None:
            raise NoProfile(f"no profile {profile!r} in {path}: add it with `vigil profile add`")
        return _checked(found)
    local_base = rest_base(local_state["rest_url"]) if local_state.get("rest_url") else None
    local_secret = local_state.get("operator_secret")
    env_endpoint, env_secret = env.get("VIGIL_ENDPOINT"), env.get("VIGIL_SECRET")
    if env_endpoint or env_secret:
        base = rest_base(env_endpoint) if env_endpoint else local_base
        # The local operator's secret goes only to the local runtime.
        secret = env_secret or (local_secret if base == local_base else None)
        if not base:
            raise NoProfile("VIGIL_SECRET is set but not VIGIL_ENDPOINT, and no local runtime")
        if not secret:
            raise NoProfile("VIGIL_ENDPOINT is set but not VIGIL_SECRET")
        return _checked(Endpoint(base=base, secret=secret, source="the environment"))
    if local_base and local_secret:
        return _checked(Endpoint(base=local_base, secret=local_secret, source="local runtime"))
    raise NoProfile(
        "nowhere to call: pass --profile NAME (vigil profile add), set VIGIL_ENDPOINT and "
        "VIGIL_SECRET, or start `vigil local` in this directory"
    )


def _checked(endpoint: Endpoint) -> Endpoint:
    if not is_http_url(endpoint.base):
        raise NoProfile(
            f"{endpoint.source}: the endpoint is not an http:// or https:// URL: {endpoint.base}"
        )
    return endpoint
