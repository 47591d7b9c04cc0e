"""The checks run in this process (pytester), as a learner's run runs them, and what each check did.

A self-test that reads a folder's verdicts takes the session fixture ``in_process`` (tests/selftest/conftest.py): a
:class:`Runs`, which runs an exercise's checks on what a folder holds once a session, however many self-tests read
them (test_records.py's, test_known_wrong.py's and the comparison with `kata grade`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kata import curriculum
from kata.project import locate
from kata.records.declared import files_of


def leaves(exc: BaseException) -> list[BaseException]:
    """The failures inside an exception (Hypothesis groups several)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def on_an_assertion(exc: BaseException) -> bool:
    """A check's own failure: an assert, or pytest.fail (also inside Hypothesis's group of failures)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(on_an_assertion(e) for e in exc.exceptions)
    return isinstance(exc, (AssertionError, pytest.fail.Exception))


@dataclass(frozen=True)
class Failure:
    """How one phase of a check failed, as text (an exception kept would keep its frames): on an assertion or not,
    the exception's line, each failure inside it."""

    asserted: bool
    line: str
    leaves: tuple[str, ...]


@dataclass(eq=False)   # a plugin: hashable
class Verdicts:
    """An inner run's plugin: each check's outcome (by node id), the records it read, and how each check (by name,
    all its parameters together) failed: a check that ran has an entry, empty where it passed or was skipped."""

    outcomes: dict[str, str] = field(default_factory=dict)
    rests: dict[str, set] = field(default_factory=dict)
    failures: dict[str, list[Failure]] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid] = "passed" if report.passed else report.outcome
        for key, value in report.user_properties:
            if key == "kata_record":
                self.rests.setdefault(report.nodeid, set()).add((value[0], *value[1]))

    def pytest_runtest_makereport(self, item, call):
        failed = self.failures.setdefault(item.originalname, [])
        if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
            exc = call.excinfo.value
            failed.append(Failure(on_an_assertion(exc), call.excinfo.exconly(), tuple(map(str, leaves(exc)))))


def verdicts(pytester, folder: Path, exercise: str, *more: str) -> Verdicts:
    """The checks of ``exercise`` run here on ``folder``'s module, with pytest's options ``more``."""
    seen = Verdicts()
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", str(folder),
                                 str(locate().checks_of(exercise)), *more, plugins=[seen])
    assert seen.outcomes, f"no check of {exercise} ran on {folder}"
    return seen


class Runs:
    """Each exercise's checks run here on what a folder holds, once a session (the fixture ``in_process``).

    A run is known by what its checks can read of the folder: the exercise's module and any helper module beside it,
    never another exercise's (each exercise's checks take its own fixture; kata.records.declared reads no other
    exercise's source). So a known mistake's module gets the same run alone in a folder or in a bundle of mistakes.
    Under --slow (``every``) each run runs every check of the exercise: test_records.py compares them all with `kata
    grade`'s verdicts; otherwise a caller that reads a few checks (``reads``) gets a run of those alone, not kept.
    """

    def __init__(self, every: bool):
        self.every = every
        self._runs: dict[tuple, Verdicts] = {}

    def verdicts(self, pytester, folder: Path, exercise: str, reads: list[str] | None = None) -> Verdicts:
        if reads is not None and not self.every:
            return verdicts(pytester, folder, exercise, "-k", " or ".join(sorted(set(reads))))
        others = {f"{name}.py" for name in curriculum.names()} - {f"{exercise}.py"}
        key = (exercise, tuple((n, text) for n, text in files_of(folder).items() if n not in others))
        if key not in self._runs:
            self._runs[key] = verdicts(pytester, folder, exercise)
        return self._runs[key]
