"""Standing approvals from the people's ``vigil`` commands, end to end: a person grants one with
``vigil approve --standing-hours``, told on the terminal what it grants before anything is sent;
a later ask of the same shape is approved at once by it, until it is used up or revoked with
``vigil standing revoke``; ``vigil standing`` lists the live ones by name; and a malformed one
is a usage error that changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_people_cli import Cli, _approve_on_terminal, rest

pytestmark = pytest.mark.e2e

PAY = {"op": "pay", "to": "acme", "amount": 500}
DEPLOY = {"op": "deploy", "env": "staging", "path": "/srv/app/1"}


@pytest.fixture
def cli(state: dict[str, Any], tmp_path: Path) -> Iterator[Cli]:
    cli = Cli(state, tmp_path)
    yield cli
    for secret in cli.secrets:
        for printed in cli.printed:
            assert secret not in printed, "a secret was printed"


def ask(cli: Cli, agent: str, person_id: str, action: dict[str, Any]) -> dict[str, Any]:
    asked = rest(
        cli.base,
        agent,
        "ask",
        target={"kind": "person", "id": person_id},
        body="May I?",
        kind="approval",
        action=action,
    )
    assert "error" not in asked, asked
    return asked


def test_a_standing_approval_granted_on_a_terminal_approves_the_same_shape_until_used_up(
    cli: Cli,
) -> None:
    person_id, person = cli.register("person", "cli-standing-payer")
    agent_id, agent = cli.register("agent", "cli-standing-agent")
    _, other = cli.register("agent", "cli-standing-other")
    first = ask(cli, agent, person_id, PAY)

    code, shown = _approve_on_terminal(
        cli,
        person,
        "y",
        first["id"],
        "--standing-hours",
        "8",
        "--standing-uses",
        "2",
        "--free",
        "amount=0..1000",
    )
    assert code == 0, shown
    # What it grants beyond this request, in words, before it asks.
    said = (
        f"And allow the same for 8 hours, at most 2 uses, for cli-standing-agent ({agent_id}) "
        "only: this action, with amount a number from 0 to 1000."
    )
    assert said in " ".join(shown.split())
    assert shown.index("And allow the same") < shown.index("[y/N]")
    granted = rest(cli.base, agent, "get_request", id=first["id"])["history"][-1]
    assert granted["by"] == person_id
    standing_id = granted["standing"]
    assert standing_id.startswith("sta_")
    assert f"Standing approval {standing_id}: the same approved for 8 hours" in shown

    # The same shape, the free member within its bound: approved at once, as by the person.
    again = ask(cli, agent, person_id, {**PAY, "amount": 900})
    assert again["state"] == "approved"
    vote = rest(cli.base, agent, "get_request", id=again["id"])["history"][-1]
    assert (vote["by"], vote["via"], vote["standing"]) == (person_id, "standing", standing_id)
    # Outside its bound, another fixed member, another agent: asked as ever.
    assert ask(cli, agent, person_id, {**PAY, "amount": 1001})["state"] == "open"
    assert ask(cli, agent, person_id, {**PAY, "to": "mallory"})["state"] == "open"
    assert ask(cli, other, person_id, PAY)["state"] == "open"

    listed = cli.run("standing", env=cli.as_(person))
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if standing_id in line)
    assert "cli-standing-agent" in row  # by name
    assert "cli-standing-payer" in row
    assert "amount a number from 0 to 1000" in row
    assert "1 of 2" in row
    (mine,) = cli.json("standing", env=cli.as_(person))["standing"]
    assert (mine["id"], mine["used"], mine["uses"]) == (standing_id, 1, 2)

    # Its second use is its last: a third ask waits for the person again.
    assert ask(cli, agent, person_id, {**PAY, "amount": 0})["state"] == "approved"
    assert ask(cli, agent, person_id, {**PAY, "amount": 1})["state"] == "open"
    assert cli.json("standing", env=cli.as_(person))["standing"] == []


def test_a_revoked_standing_approval_approves_no_ask(cli: Cli) -> None:
    person_id, person = cli.register("person", "cli-standing-deployer")
    _, bystander = cli.register("person", "cli-standing-bystander")
    _, agent = cli.register("agent", "cli-standing-builder")
    _, other = cli.register("agent", "cli-standing-builder-2")
    first = ask(cli, agent, person_id, DEPLOY)
    approved = cli.run(
        "approve",
        first["id"],
        "--yes",
        "--standing-hours",
        "1",
        "--free",
        "env=staging,dev",
        "--free",
        "path=/srv/app/*",
        "--any-asker",
        env=cli.as_(person),
    )
    assert approved.returncode == 0, approved.stderr
    assert f"{first['id']} approved." in approved.stdout
    (standing,) = cli.json("standing", env=cli.as_(person))["standing"]
    assert standing["asker"] is None
    assert standing["free"] == {
        "env": {"one_of": ["staging", "dev"]},
        "path": {"prefix": "/srv/app/"},
    }

    # Any agent, each free member within its bound.
    changed = {**DEPLOY, "env": "dev", "path": "/srv/app/2"}
    assert ask(cli, other, person_id, changed)["state"] == "approved"
    assert ask(cli, other, person_id, {**DEPLOY, "env": "prod"})["state"] == "open"
    assert ask(cli, other, person_id, {**DEPLOY, "path": "/etc/passwd"})["state"] == "open"

    # Another person cannot revoke it, nor list everyone's; an operator sees it among them.
    foreign = cli.run("standing", "revoke", standing["id"], env=cli.as_(bystander))
    assert (foreign.returncode, foreign.stderr.split(":")[:2]) == (1, ["error", " not_found"])
    everyone = cli.run("standing", "--everyone", env=cli.as_(bystander))
    assert everyone.returncode == 4
    operator = cli.run("standing", "--everyone", env=cli.as_(cli.secrets[0]))
    assert standing["id"] in operator.stdout
    assert ask(cli, other, person_id, changed)["state"] == "approved"  # still standing

    revoked = cli.run("standing", "revoke", standing["id"], env=cli.as_(person))
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.startswith(f"{standing['id']} revoked")
    assert ask(cli, other, person_id, changed)["state"] == "open"
    assert ask(cli, agent, person_id, DEPLOY)["state"] == "open"
    listed = cli.run("standing", env=cli.as_(person))
    assert listed.stdout.strip() == "No standing approvals."


MALFORMED = [
    ["--free", "amount=0..1000"],  # without --standing-hours
    ["--standing-uses", "3"],
    ["--any-asker"],
    ["--standing-hours", "0"],
    ["--standing-hours", "721"],
    ["--standing-hours", "8", "--standing-uses", "0"],
    ["--standing-hours", "8", "--free", "amount"],
    ["--standing-hours", "8", "--free", "amount=a..b"],
    ["--standing-hours", "8", "--free", "amount=.."],
    ["--standing-hours", "8", "--free", "amount=1000..0"],
    ["--standing-hours", "8", "--free", "to=*"],
    ["--standing-hours", "8", "--free", "to=acme,"],
    ["--standing-hours", "8", "--free", "to=[1],acme"],
    ["--standing-hours", "8", "--free", "amount=0..1", "--free", "amount=0..9"],
    # Well formed, but not what this approval could grant: nothing is asked, nothing sent.
    ["--standing-hours", "8", "--free", "nope=0..1000"],
    ["--standing-hours", "8", "--free", "amount=0..100"],  # 500 was asked
]


def test_a_malformed_standing_approval_is_a_usage_error_that_changes_nothing(cli: Cli) -> None:
    person_id, person = cli.register("person", "cli-standing-typo")
    _, agent = cli.register("agent", "cli-standing-typo-agent")
    asked = ask(cli, agent, person_id, PAY)
    for options in MALFORMED:
        refused = cli.run("approve", asked["id"], "--yes", *options, env=cli.as_(person))
        assert refused.returncode == 2, (options, refused.stderr)
        problem = refused.stderr.strip().splitlines()[-1]
        assert problem.startswith(("error: ", "usage: ", "vigil approve: error: ")), problem
        assert "free" in problem or "standing" in problem, (options, problem)
    after = rest(cli.base, agent, "get_request", id=asked["id"])
    assert (after["state"], after["version"]) == ("open", asked["version"])
    assert cli.json("standing", env=cli.as_(person))["standing"] == []
    # The same approval, well formed, is granted: what was refused was the options alone.
    granted = cli.run(
        "approve",
        asked["id"],
        "--yes",
        "--standing-hours",
        "8",
        "--free",
        "amount=0..1000",
        env=cli.as_(person),
    )
    assert granted.returncode == 0, granted.stderr
    assert len(cli.json("standing", env=cli.as_(person))["standing"]) == 1


def test_the_clis_standing_limits_are_the_services() -> None:
    from vigil.people.commands import STANDING_MAX_HOURS, STANDING_MAX_USES
    from vigil.requests.standing import MAX_HOURS, MAX_USES

    assert (STANDING_MAX_HOURS, STANDING_MAX_USES) == (MAX_HOURS, MAX_USES)
