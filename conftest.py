"""Settings shared by every run of this project's tests.

This file is loaded for `pytest`, `pytest exercises`, `pytest solutions` and
`pytest PATH` alike (the kata's plugin, kata/harness/plugin.py, makes sure of it
even when PATH lies outside the project). The checks themselves are in tests/.
"""

import os

import pytest
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

def pytest_configure(config):
    config.addinivalue_line("markers", "corpus: runs code of tests/corpus/ under `kata run` (KATA_RUN_DEVICE=cuda: on "
                                       "this machine's GPU, as `kata doctor --full` runs it there)")


# Images and datasets made by the tests go to pytest's temporary folders;
# the project's own folder stays clean.
collect_ignore = ["exercises", "solutions", "data", "runs"]

# The project's own run on workers (pytest-xdist, `pytest -n 2 --dist loadgroup` as .ci/run runs it): the self-tests
# that share a session's work run on one worker, each group whole: the class's one `kata grade` (the fixture
# class_run) and the checks' runs in the session (in_process), tests/selftest/conftest.py.
SHARED = {"test_grade.py": "class_run", "test_grade_attacks.py": "class_run",
          "test_known_wrong.py": "in_process", "test_records.py": "in_process"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup, grouped by the files of SHARED (xdist's own reads `xdist_group` marks into node ids,
    which pytest 9 no longer lets it change: its groups silently split, and each worker ran the class twice)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Shared(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED.get(nodeid.split("::", 1)[0].rsplit("/", 1)[-1], nodeid)

    return Shared(config, log)
