"""The words people read on the console, one way everywhere: a switch whose deadline passed
"fired" (as the overview counts it), and says when its actions marked it failed; the account
bar says what the visitor is, an operator or a person, not a worker's role."""

from __future__ import annotations

import pytest

from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def test_a_fired_switch_reads_fired_as_the_overview_counts_it(world: World) -> None:
    _, pat_secret = world.tenant.register(kind="person", name="Pat")
    _, agent = world.tenant.register(name="builder")
    world.call("heartbeat", agent, scope="job-failed", expect_within_seconds=3)
    world.call("heartbeat", agent, scope="job-expired", expect_within_seconds=3, on_expiry=[])
    world.advance(4)
    pat = signed_in(world, pat_secret)
    listing = page(pat, "/console/switches")
    assert '<span class="badge state-failed">fired</span> marked failed' in listing
    assert '<span class="badge state-expired">fired</span>' in listing
    assert ">failed<" not in listing
    assert ">expired<" not in listing
    assert '<option value="failed">fired, marked failed</option>' in listing
    overview = page(pat, "/console")
    assert 'id="count-fired">2</span> fired in 24 h' in overview
    one = page(pat, "/console/switch", scope="job-failed")
    assert '<span class="badge state-failed">fired</span> marked failed' in one


def test_the_account_bar_says_what_the_visitor_is(world: World) -> None:
    _, pat_secret = world.tenant.register(kind="person", name="Dana Lead")
    assert "Dana Lead · person · acme" in page(signed_in(world, pat_secret), "/console")
    operator = page(signed_in(world, world.tenant.operator_secret), "/console")
    assert "Ops · operator · acme" in operator
    assert "· worker ·" not in operator
