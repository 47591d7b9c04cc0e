"""The kata's pytest settings (kata/harness/settings.py): Hypothesis without shrinking where a failure's shrinking
only costs time, and with it everywhere else."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kata.harness.settings import HYPOTHESIS_SETTINGS, hypothesis_for_the_call

pytest_plugins = ["pytester"]


def always_failing():
    """A property check that fails on every input, as a check does on a stub, counting its calls."""
    calls = []

    @given(st.lists(st.floats(0, 10, allow_nan=False), min_size=8, max_size=8, unique=True))
    def check(values):
        calls.append(values)
        raise NotImplementedError("Need to implement")

    return check, calls


def calls_until_it_fails(learner: bool, must_fail: bool) -> int:
    check, calls = always_failing()
    with hypothesis_for_the_call(check, learner=learner, must_fail=must_fail), pytest.raises(NotImplementedError):
        check()
    return len(calls)


def test_hypothesis_still_keeps_a_tests_settings_where_the_kata_reads_them():
    check, _calls = always_failing()
    assert getattr(check, HYPOTHESIS_SETTINGS, None) is not None, (
        f"@given no longer keeps a test's settings in {HYPOTHESIS_SETTINGS}: learners' runs and the stubs' checks "
        "are shrunk again (slower, not wrong); find where this Hypothesis keeps them and update HYPOTHESIS_SETTINGS")


def test_a_learners_run_and_the_stubs_fail_without_shrinking_and_the_project_shrinks():
    shrunk = calls_until_it_fails(learner=False, must_fail=False)
    for learner, must_fail in ((True, False), (False, True)):
        unshrunk = calls_until_it_fails(learner=learner, must_fail=must_fail)
        assert unshrunk <= 3 < shrunk, (
            f"learner={learner}, must_fail={must_fail}: a check failing on every input ran {unshrunk} times "
            f"(shrunk: {shrunk}); its first failure should end it")


def test_the_tests_own_settings_come_back_after_the_call():
    check, _calls = always_failing()
    before = getattr(check, HYPOTHESIS_SETTINGS)
    with hypothesis_for_the_call(check, learner=True, must_fail=False):
        assert getattr(check, HYPOTHESIS_SETTINGS) is not before
    assert getattr(check, HYPOTHESIS_SETTINGS) is before, "the call's settings outlived the call"


class Threads:
    """An inner run's plugin: torch's CPU threads while each check runs."""

    def __init__(self):
        self.seen: set[int] = set()

    def pytest_runtest_call(self, item):
        import torch

        self.seen.add(torch.get_num_threads())


def test_the_checks_run_on_one_thread_and_a_notebooks_threads_come_back(pytester):
    """kata.records.THREADS while the checks run (their work is tiny: a second thread only spins); the caller's
    threads after the run, as a notebook's kernel that trains next needs them."""
    import torch

    from kata import records
    from kata.project import locate

    before, threads = torch.get_num_threads(), Threads()
    torch.set_num_threads(2)
    try:
        pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", str(locate().solutions),
                                     str(locate().checks_of("devices")), plugins=[threads])
        assert threads.seen == {records.THREADS}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
