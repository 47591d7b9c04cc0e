"""Fixtures the checks share: a small synthetic CelebA.

Each exercise's module is a session fixture named after the exercise (`data`,
`model`, ...), made by the kata's plugin from kata/curriculum.toml: a lazy handle
on the target's module (see kata/harness/target.py). It is imported on first
use, and a missing file, an import error or a missing name fails only the
checks that use it, with one clear line.
"""

import pytest

from kata.checks import elsewhere

# A small synthetic CelebA, drawn once per test session: enough for two
# batches of 8 in each split. (Drawing it takes well under a second.)
SMALL_CELEBA = dict(n_train=40, n_valid=12, n_test=12)


@pytest.fixture(scope="session")
def celeba_root(tmp_path_factory):
    """The folder that holds `celeba/` (what `load_splits(root)` takes)."""
    from kata.data.synth import generate

    root = tmp_path_factory.mktemp("celeba_root")
    generate(root, **SMALL_CELEBA, seed=1234, workers=1, progress=False)
    return root


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The checkpoint checks' laptop (a machine without a GPU: kata/checks/elsewhere.py) is forked from a
    process forked now, before the kata's plugin installs the simulated accelerator in this one; only in
    a run of the kata's plugin (a grading server collects the checks without it) that has those checks."""
    if config.pluginmanager.get_plugin("kata-accelerator") is None:
        return
    if any("laptop" in getattr(item, "fixturenames", ()) for item in items):
        stop = elsewhere.serve_laptops()
        if stop is not None:
            config.add_cleanup(stop)
