"""Fixtures the checks share: a small synthetic CelebA.

Each exercise's module is a session fixture named after the exercise (`data`,
`model`, ...), made by the kata's plugin from kata/curriculum.toml: a lazy handle
on the target's module (see kata/harness/target.py). It is imported on first
use, and a missing file, an import error or a missing name fails only the
checks that use it, with one clear line.
"""

import pytest

from kata.harness import asking
from kata.records import elsewhere


@pytest.fixture(scope="session")
def celeba_root(request):
    """The folder that holds `celeba/` (what `load_splits(root)` takes): the records' small synthetic CelebA
    (kata.records.CELEBA), the one they were asked on."""
    return asking.celeba_of(request.config)


@pytest.fixture(scope="session")
def forks():
    """Checks whose records fork processes of their own from a laptop (kata/records/elsewhere.py: a process that
    never trained, as PyTorch needs for autograd in a forked child): this run forks the laptops' server."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The checkpoint checks' laptop (a machine without a GPU: kata/records/elsewhere.py), and the processes the
    checks that take ``forks`` need, are forked from a process forked now, before the kata's plugin installs the
    simulated accelerator in this one; only in a run of the kata's plugin (a grading server collects the checks
    without it) that has those checks."""
    if config.pluginmanager.get_plugin("kata-accelerator") is None:
        return
    if any({"laptop", "forks"} & set(getattr(item, "fixturenames", ())) for item in items):
        stop = elsewhere.serve_laptops()
        if stop is not None:
            config.add_cleanup(stop)
