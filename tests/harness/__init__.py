"""The quality harness: every tool of the catalog, now and later, attacked from its schema.

Nothing here names a tool, but the walk of the seeds (below). Each test is parametrized over
``vigil.catalog.tools()`` (the Inspector test over ``tools/list``) and builds its arguments from
the published input schema, so a tool added to the catalog is covered the day it lands, with no
test code of its own.

What it covers
--------------
- **Bad input** (``test_bad_input.py``, ``test_http_bodies.py``). A generic scenario
  (``scenario.py``) first makes every tool succeed in an in-memory world (tests/liveness_support),
  offering each property values that earlier results carried. From arguments that worked,
  ``mutations.py`` derives every single defect the schema allows: a wrong JSON type per
  property, each required property missing, an unknown property (top level and nested), numbers
  past each bound, strings past maxLength and of 1 MiB, malformed identifiers (wrong prefix,
  trailing newline, NUL...), bad enum values and formats, arrays past maxItems, arguments that
  are not an object, and cursors of garbage base64. Each goes through ``App.call``, MCP
  ``tools/call`` and REST ``POST /v1/<tool>`` as an operator and as a worker agent, and must
  come back as exactly the refusal App.call's order implies (non-object → invalid_argument; an
  agent_key that is not the header's secret → unauthenticated; any other schema defect →
  invalid_argument, before the role check; a semantic defect → the role check first), with no
  5xx, no traceback or AWS text, no echoed value, a bounded size, and the store, the armed
  alarms and the mailbox queues exactly as they were. Hypothesis (with hypothesis-jsonschema)
  also generates valid arguments, which must never yield ``unavailable`` or a 5xx and whose
  results must fit the output model, and one defect of each. At the HTTP layer: malformed JSON,
  bytes that are not UTF-8, JSON that is not an object, 5 MiB bodies.
- **Boundaries** (``test_boundaries.py``). Every call that succeeded at home is replayed with no
  credential and with malformed, forged, revoked and rotated-away secrets (one refusal, byte for
  byte, changing nothing); by the operator and a worker of another namespace, whose outcome must
  equal the outcome in a twin world where the home namespace made nothing (existence never
  leaks; errors are identical to those for missing resources), leave the home namespace
  untouched, and be refused when an argument names an identifier issued at home; by a peer
  worker, who is refused operator-only tools and changes nothing private to another principal;
  and with an agent_key that disagrees with the Authorization header.
- **What the seeds allow** (``test_seed_values.py``, the seeds transcribed in ``seeds.py``).
  Every field of every seed tool, given seed-valid values (empty, line breaks, control and
  invisible characters, scripts, emoji, the longest allowed, each enum value, the seed's
  examples) in a call that just worked, must be taken; each seed's example call must succeed;
  every bound a schema sets beyond its seed must be in docs/DESIGN.md, "Bounds on input".
- **A real client** (``test_inspector_read_only.py``, marked e2e). Against the local runtime,
  the scenario runs over REST on the real adapters (on moto), then the MCP Inspector CLI lists
  the tools and calls each one whose annotations say readOnlyHint.

The bodies that broke the parser, the encoder or the size of a refusal (deep nesting, a lone
surrogate, 200,000 unknown properties) stay in ``test_http_bodies.py`` as regression tests.

Running it
----------
``make test`` runs it with the rest of the suite (about a minute). ``pytest tests/harness -m
"not e2e"`` skips the Inspector. The generated-argument tests take 6 examples per tool and replay
the same ones every run; for a long, exploring run (new examples each time, failures printed
with a reproduction blob)::

    VIGIL_FUZZ_EXAMPLES=500 .venv/bin/pytest tests/harness -k generated
"""
