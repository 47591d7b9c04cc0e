"""Shared by the self-tests: one `kata grade` of a class (test_grade.py), with the hostile hand-ins beside it; the
pristine stubs in a folder; the checks run in this process, once a session each, and the checkpoint's laptops
for them."""

from __future__ import annotations

import pytest

from kata.records import elsewhere

# Laptops one session's server forks at most: the self-tests run the checks in this process (pytester) many times
# over, each run asking it for one or two.
SESSION_LAPTOPS = 10_000


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The checkpoint checks' laptops (kata/records/elsewhere.py) for every run of the checks in this process.

    Such a run installs the simulated accelerator here, and a laptop server can only be forked before that
    (elsewhere.serve_laptops): the first run's, or the one tests/conftest.py forks when this session collects the
    checkpoint checks, would serve every later run, and it forks `Forks.LIMIT` laptops, one run's, then answers
    each request with an error: every later run's laptop checks were skipped ("the fresh process ended with exit
    status 2"), hiding their verdicts (once every run fell back to a fresh interpreter, 5 s each, 25 at most). So
    this session forks its server now, before either, one that serves the session's runs.
    """
    if any("pytester" in getattr(item, "fixturenames", ()) for item in items):
        limit = elsewhere.Forks.LIMIT
        elsewhere.Forks.LIMIT = SESSION_LAPTOPS   # in the server forked now; the class keeps one run's
        try:
            stop = elsewhere.serve_laptops()
        finally:
            elsewhere.Forks.LIMIT = limit
        if stop is not None:
            config.add_cleanup(stop)
    return (yield)


@pytest.fixture(scope="session")
def pristine_stubs(tmp_path_factory):
    """A folder holding every exercise's stub as handed out (kata.pristine), never exercises/ as it is: in a
    learner's copy it holds their work. Skips, saying why, where none is found."""
    from kata import pristine

    folder = tmp_path_factory.mktemp("pristine") / "stubs"
    missing = pristine.write_stubs(folder)
    if missing:
        pytest.skip(f"no pristine stub of {', '.join(missing)} (no .kata/pristine/ snapshot, no git history)")
    return folder


@pytest.fixture(scope="session")
def in_process(request):
    """The checks run in this process, each exercise's on what a folder holds once a session (in_process.Runs): under
    --slow, the known mistakes' runs of test_known_wrong.py are those test_records.py compares with `kata grade`'s."""
    from in_process import Runs

    return Runs(every=request.config.getoption("kata_slow"))


@pytest.fixture(scope="session")
def class_run(request, tmp_path_factory):
    """One `kata grade` of test_grade.py's class and, under --slow, of test_grade_attacks.py's hostile hand-ins
    beside it: (out folder, grades.csv rows by name, summary.json, the attacks' Host or None). One run, not two:
    the grader's servers and the reference's records are made once (about 16 s on 2 cores)."""
    import time

    from test_grade import class_hand_ins, kata, read
    from test_grade_samples import write

    root = tmp_path_factory.mktemp("class")
    out, paths, host, limit = root / "out", class_hand_ins(root), None, 20
    if request.config.getoption("kata_slow"):
        from test_grade_attacks import TEST_TIMEOUT, Host, attack_hand_ins

        host, limit = Host(root), TEST_TIMEOUT
        paths += [str(write(root / "attacks" / name, found)) for name, found in attack_hand_ins(host, out).items()]
    try:
        assert kata("grade", *paths, "--out", out, "--jobs", "2", "--test-timeout", str(limit), "--timeout", "240",
                    "--quiet") == 0
        if host is not None:
            time.sleep(6)   # what a detached writer would have done by now
        yield (out, *read(out), host)
    finally:
        if host is not None:
            host.close()
