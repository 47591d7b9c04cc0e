"""Fixtures for the checks: the modules under test, and a small CelebA.

Each contract module is a session-wide fixture named after it (`data`, `model`,
...). It is a lazy handle on the target's module (see kata/target.py): the
module is imported on first use, and a missing file, an import error or a
missing name fails only the checks that use it, with one clear line.
"""

import pytest


@pytest.fixture(scope="session")
def devices(kata_target):
    return kata_target.module("devices")


@pytest.fixture(scope="session")
def data(kata_target):
    return kata_target.module("data")


@pytest.fixture(scope="session")
def model(kata_target):
    return kata_target.module("model")


@pytest.fixture(scope="session")
def training(kata_target):
    return kata_target.module("training")


@pytest.fixture(scope="session")
def plotting(kata_target):
    return kata_target.module("plotting")


@pytest.fixture(scope="session")
def sync(kata_target):
    return kata_target.module("sync")


# A small synthetic CelebA, drawn once per test session: enough for two
# batches of 8 in each split. (Drawing it takes well under a second.)
SMALL_CELEBA = dict(n_train=40, n_valid=12, n_test=12)


@pytest.fixture(scope="session")
def celeba_root(tmp_path_factory):
    """The folder that holds `celeba/` (what `load_splits(root)` takes)."""
    from kata import synth

    root = tmp_path_factory.mktemp("celeba_root")
    synth.generate(root, **SMALL_CELEBA, seed=1234, workers=1, progress=False)
    return root
