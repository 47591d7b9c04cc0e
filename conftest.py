"""Settings shared by every run of this project's tests.

This file is loaded for `pytest`, `pytest exercises`, `pytest solutions` and
`pytest PATH` alike (the kata's plugin, kata/harness/plugin.py, makes sure of it
even when PATH lies outside the project). The checks themselves are in tests/.
"""

import os

from hypothesis import HealthCheck, settings

# Figures are drawn off-screen: no window may open, and nothing may block.
os.environ["MPLBACKEND"] = "Agg"

# Property-based checks are seeded ("derandomized"): the same examples every run,
# so a learner's result never depends on luck. HYPOTHESIS_PROFILE=explore
# searches afresh each run, for the project's own hunting.
settings.register_profile(
    "kata",
    derandomize=True,
    deadline=None,
    max_examples=20,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kata"))

# Images and datasets made by the tests go to pytest's temporary folders;
# the project's own folder stays clean.
collect_ignore = ["exercises", "solutions", "data", "runs"]
