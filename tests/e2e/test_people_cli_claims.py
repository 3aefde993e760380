"""Claims and routing from the people's ``vigil`` commands, end to end: a person takes a request
in hand with ``vigil claim`` and puts it back with ``vigil release``; another person's claim
meanwhile is refused, naming the holder, with exit code 1; ``vigil requests`` shows who has
each request in hand. An operator replaces the routing rules with ``vigil routing set FILE``
(at the version it reads first) and ``vigil routing`` says them in words, by name: a request
asked then is assigned by its rule. A file that is not a list of rules is a usage error that
changes nothing; a rule the service refuses changes nothing either."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_people_cli import Cli, _approve_on_terminal, rest

pytestmark = pytest.mark.e2e

PAY = {"op": "pay", "to": "acme", "amount": 500}


@pytest.fixture
def cli(state: dict[str, Any], tmp_path: Path) -> Iterator[Cli]:
    cli = Cli(state, tmp_path)
    yield cli
    for secret in cli.secrets:
        for printed in cli.printed:
            assert secret not in printed, "a secret was printed"


def team(cli: Cli, tag: str) -> dict[str, str]:
    """Two people and the agent that asks them both, each named after ``tag``."""
    found: dict[str, str] = {}
    for key, kind in (("pat", "person"), ("sue", "person"), ("bot", "agent")):
        found[key], found[f"{key}_secret"] = cli.register(kind, f"cli-{tag}-{key}")
    return found


def ask(cli: Cli, people: dict[str, str], **action: Any) -> dict[str, Any]:
    asked = rest(
        cli.base,
        people["bot_secret"],
        "start_chat",
        targets=[{"kind": "person", "id": people["pat"]}, {"kind": "person", "id": people["sue"]}],
        body="Bills to pay",
    )
    assert "error" not in asked, asked
    request = rest(
        cli.base,
        people["bot_secret"],
        "ask",
        conversation_id=asked["conversation_id"],
        body="May I pay?",
        kind="approval",
        action={**PAY, **action},
    )
    assert "error" not in request, request
    return request


def get(cli: Cli, people: dict[str, str], request_id: str) -> dict[str, Any]:
    return rest(cli.base, people["bot_secret"], "get_request", id=request_id)


def row(listed: str, request_id: str) -> str:
    return next(line for line in listed.splitlines() if request_id in line)


def test_a_person_claims_and_releases_and_another_is_refused_by_name(cli: Cli) -> None:
    people = team(cli, "claim")
    request = ask(cli, people)
    pat, sue = cli.as_(people["pat_secret"]), cli.as_(people["sue_secret"])

    claimed = cli.run("claim", request["id"], "--minutes", "20", env=pat)
    assert claimed.returncode == 0, claimed.stderr
    assert claimed.stdout.startswith(f"{request['id']} is in your hands until ")
    assert "(in 19m" in claimed.stdout or "(in 20m" in claimed.stdout
    held = get(cli, people, request["id"])["claim"]
    assert held["by"] == people["pat"]

    # Sue sees whose hands it is in, by name; it is not on her waiting list.
    listed = cli.run("requests", "--everyone", env=sue)
    assert listed.returncode == 0, listed.stderr
    assert "in hand" in listed.stdout
    assert "cli-claim-pat until " in row(listed.stdout, request["id"])
    assert request["id"] not in cli.run("requests", "--waiting", env=sue).stdout
    assert "you until " in row(cli.run("requests", env=pat).stdout, request["id"])

    refused = cli.run("claim", request["id"], env=sue)
    assert refused.returncode == 1
    said = refused.stderr.strip()
    assert said.startswith(
        f"error: version_conflict: {request['id']} is in the hands of cli-claim-pat "
        f"({people['pat']}) until "
    ), said
    assert "your claim was not made" in said
    assert get(cli, people, request["id"])["claim"]["by"] == people["pat"]
    # Sue releasing what she does not hold changes nothing, and says so.
    not_hers = cli.run("release", request["id"], env=sue)
    assert not_hers.returncode == 0, not_hers.stderr
    assert "cli-claim-pat" in not_hers.stdout
    assert "nothing changed" in not_hers.stdout
    assert get(cli, people, request["id"])["claim"]["by"] == people["pat"]

    released = cli.run("release", request["id"], env=pat)
    assert released.returncode == 0, released.stderr
    assert released.stdout.strip() == f"{request['id']} released: no one has it in hand."
    assert "claim" not in get(cli, people, request["id"])
    assert request["id"] in cli.run("requests", "--waiting", env=sue).stdout

    # Now Sue's to claim; the request as approve shows it says whose, and its claims in words.
    assert cli.json("claim", request["id"], env=sue)["claim"]["by"] == people["sue"]
    code, shown = _approve_on_terminal(cli, people["pat_secret"], "n", request["id"])
    assert code == 1, shown
    said = " ".join(shown.split())
    assert f"In the hands of cli-claim-sue ({people['sue']}) until " in said
    assert f"Its claims: cli-claim-pat ({people['pat']}) claimed it until " in said
    assert f"; cli-claim-pat ({people['pat']}) released it; cli-claim-sue (" in said
    assert get(cli, people, request["id"])["state"] == "open"


def test_claim_minutes_out_of_bounds_are_a_usage_error(cli: Cli) -> None:
    people = team(cli, "bounds")
    request = ask(cli, people)
    for minutes in ("0", "1441", "ten"):
        refused = cli.run(
            "claim", request["id"], "--minutes", minutes, env=cli.as_(people["pat_secret"])
        )
        assert refused.returncode == 2, refused.stderr
        assert "--minutes" in refused.stderr
    assert "claim" not in get(cli, people, request["id"])


def test_routing_set_from_a_file_assigns_new_requests_and_is_said_by_name(
    cli: Cli, tmp_path: Path
) -> None:
    people = team(cli, "route")
    operator = cli.as_(cli.secrets[0])
    rules = [
        {
            "asker": people["bot"],
            "op": "pay",
            "to": [people["sue"], people["pat"]],
            "minutes": 45,
        }
    ]
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    before = cli.json("routing", env=operator)["version"]

    done = cli.run("routing", "set", str(path), env=operator)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert f"Routing rules, version {before + 1}" in said
    assert (
        f'1. requests from cli-route-bot ({people["bot"]}) whose action\'s op is "pay": the '
        f"first of cli-route-sue ({people['sue']}), cli-route-pat ({people['pat']}) who may "
        "decide it, for 45 minutes"
    ) in said
    assert cli.run("routing", env=operator).stdout == done.stdout
    assert cli.json("routing", env=operator)["version"] == before + 1

    # Asked now, it is Sue's by rule 1: the listing says so; another op is no one's.
    request = ask(cli, people)
    assert (request["claim"]["by"], request["claim"]["rule"]) == (people["sue"], 1)
    listed = cli.run("requests", "--everyone", env=cli.as_(people["pat_secret"]))
    assert "cli-route-sue until " in row(listed.stdout, request["id"])
    assert (
        request["id"]
        not in cli.run("requests", "--waiting", env=cli.as_(people["pat_secret"])).stdout
    )
    assert "claim" not in ask(cli, people, op="refund")

    # From standard input too: [] ends routing.
    cleared = cli.run("routing", "set", "-", env=operator, stdin="[]")
    assert cleared.returncode == 0, cleared.stderr
    assert "No routing rules" in cleared.stdout
    assert "claim" not in ask(cli, people)


BAD_FILES = [
    ('[{"to": [', 2, "not JSON (line 1, column 10"),
    ('{"to": []}', 2, "the rules are a JSON list"),
    ('[{"to": ["per_aaaaaaaaaaaaaaaa"]}]', 1, "error: invalid_argument: a rule routes to active"),
    ('[{"to": ["PAT"], "minutes": 0}]', 1, "rules.0.minutes"),
]


@pytest.mark.parametrize(("text", "code", "said"), BAD_FILES)
def test_a_bad_rules_file_is_a_clear_error_that_changes_nothing(
    cli: Cli, tmp_path: Path, text: str, code: int, said: str
) -> None:
    people = team(cli, f"bad-{BAD_FILES.index((text, code, said))}")
    operator = cli.as_(cli.secrets[0])
    before = cli.json("routing", env=operator)
    path = tmp_path / "rules.json"
    path.write_text(text.replace("PAT", people["pat"]))
    refused = cli.run("routing", "set", str(path), env=operator)
    assert refused.returncode == code, refused.stderr
    assert said in refused.stderr
    assert refused.stdout == ""
    assert cli.json("routing", env=operator) == before
    missing = cli.run("routing", "set", str(tmp_path / "none.json"), env=operator)
    assert (missing.returncode, "none.json: cannot be read" in missing.stderr) == (2, True)
    assert cli.json("routing", env=operator) == before


def test_only_operators_read_or_set_routing(cli: Cli, tmp_path: Path) -> None:
    people = team(cli, "nope")
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([{"to": [people["pat"]]}]))
    before = cli.json("routing", env=cli.as_(cli.secrets[0]))
    for secret in (people["pat_secret"], people["bot_secret"]):
        assert cli.run("routing", env=cli.as_(secret)).returncode == 4
        assert cli.run("routing", "set", str(path), env=cli.as_(secret)).returncode == 4
    assert cli.json("routing", env=cli.as_(cli.secrets[0])) == before


def test_the_clis_claim_limits_are_the_services() -> None:
    from vigil.people.commands import CLAIM_MAX_MINUTES, CLAIM_MINUTES
    from vigil.requests.inputs import ClaimRequestInput

    minutes = ClaimRequestInput.model_fields["minutes"]
    assert minutes.default == CLAIM_MINUTES
    assert ClaimRequestInput(id="req_aaaaaaaaaaaaaaaa", minutes=CLAIM_MAX_MINUTES)
    with pytest.raises(ValueError, match="less than or equal"):
        ClaimRequestInput(id="req_aaaaaaaaaaaaaaaa", minutes=CLAIM_MAX_MINUTES + 1)
