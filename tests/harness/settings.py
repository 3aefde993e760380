"""How much the harness generates: a short run by default, more with VIGIL_FUZZ_EXAMPLES."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from vigil import catalog

TOOL_NAMES = [tool.name for tool in catalog.tools()]

# Examples per tool for the generated-argument tests; raise it for a long run.
FUZZ_EXAMPLES = int(os.environ.get("VIGIL_FUZZ_EXAMPLES", "6"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    # The short run replays the same examples every time; a long run explores.
    derandomize="VIGIL_FUZZ_EXAMPLES" not in os.environ,
    print_blob=True,
    # Deriving defects may ask Hypothesis for a simplest value (find) inside an example.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.nested_given,
    ],
)
