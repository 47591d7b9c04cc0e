"""Shared by the self-tests: the audit's inputs and the reference's records, each check's facets, and
the points honest code would lose to the audit.

Honest code never loses a point to the audit: each check that passes on it must have every facet it
names (`@pytest.mark.audit(...)`) agreeing with the reference. Only a check that names a facet the
code disagrees on can break that, so only those checks need to run (:meth:`FacetMarks.at_stake`).
`test_known_wrong.py` adds them to each known mistake's own run (so every mutant shows both that it
is caught and that the checks it passes keep their points), and `test_audit.py` runs them for each
correct variant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kata import audit, curriculum, sim
from kata.audit import Context, judge, records_here
from kata.harness.target import Target
from kata.project import locate


class FacetMarks:
    """An inner run's plugin: each check's mark (facets resolved), its function, and whether it passed."""

    def __init__(self):
        self.marks: dict[str, dict | None] = {}
        self.functions: dict[str, tuple[str, str]] = {}     # nodeid -> (exercise, the check's function)
        self.passed: dict[str, bool] = {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            exercise = curriculum.exercise_of(str(item.path))
            mark = item.get_closest_marker("audit")
            if exercise is not None:
                self.marks[item.nodeid] = mark and audit.marked(exercise.name, mark, getattr(item, "callspec", None))
                self.functions[item.nodeid] = (exercise.name, item.originalname)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.failed or report.skipped:
            self.passed[report.nodeid] = report.passed and self.passed.get(report.nodeid, True)

    def at_stake(self, exercise: str, disagreeing: dict[str, str]) -> set[str]:
        """The functions of ``exercise``'s checks that name a facet in ``disagreeing``: the only checks whose
        points the audit can take."""
        return {function for nodeid, (ex, function) in self.functions.items()
                if ex == exercise and set((self.marks.get(nodeid) or {}).get("facets", ())) & disagreeing.keys()}

    def lost(self, disagreeing: dict[str, str]) -> list[str]:
        """The checks that passed although a facet they name disagrees: "check: facet: why"."""
        return [f"{nodeid.split('::')[-1]}: {f}: {disagreeing[f]}" for nodeid, passed in self.passed.items()
                if passed and self.marks.get(nodeid) for f in self.marks[nodeid]["facets"] if f in disagreeing]


@pytest.fixture(scope="session")
def facet_marks() -> type[FacetMarks]:
    """:class:`FacetMarks`: one, made fresh, for each inner run's ``plugins=[...]``."""
    return FacetMarks


_EVERY_CHECK: list[FacetMarks] = []


@pytest.fixture
def every_check(pytester) -> FacetMarks:
    """Every check of the exercises, collected once (its facets and functions; nothing run)."""
    if not _EVERY_CHECK:
        marks = FacetMarks()
        project = locate()
        pytester.inline_run("--collect-only", "--target", str(project.solutions),
                            *[str(project.checks_of(n)) for n in curriculum.names()], "-p", "no:cacheprovider", "-q",
                            plugins=[marks])
        _EVERY_CHECK.append(marks)
    return _EVERY_CHECK[0]


@pytest.fixture
def points_lost(pytester):
    """lost(folder, exercise, disagreeing, marks) -> the points the audit takes (:meth:`FacetMarks.lost`) in the
    run ``marks`` saw, of some checks only, confirmed on a run of all the exercise's checks in their order, as a
    submission's run takes them: a mistake that keeps state across calls (a model cached at module level) can pass
    a check on its own that it fails after the others."""

    def lost(folder: Path, exercise: str, disagreeing: dict[str, str], marks: FacetMarks) -> list[str]:
        if not marks.lost(disagreeing):
            return []
        every = FacetMarks()
        pytester.inline_run("--target", str(folder), str(locate().checks_of(exercise)), "-p", "no:cacheprovider",
                            "-q", plugins=[every])
        return every.lost(disagreeing)

    return lost


@pytest.fixture(scope="session")
def audit_context(tmp_path_factory) -> Context:
    from kata.data.synth import generate

    root = tmp_path_factory.mktemp("audit-celeba")
    generate(root, n_train=30, n_valid=14, n_test=10, seed=11, workers=1, progress=False)
    ok, _ = sim.support()
    return Context(seed=20261201, tmp=tmp_path_factory.mktemp("records"), celeba=root,
                   accelerator=sim.install() if ok else None, shared=20261130)


@pytest.fixture(scope="session")
def audit_reference(audit_context) -> dict[str, dict]:
    ref = Context(**{**vars(audit_context), "reference": True})
    target = Target(locate().solutions)
    return {ex: records_here(locate().solutions, ex, ref, target.load(ex)) for ex in curriculum.names()}


@pytest.fixture(scope="session")
def disagreeing_facets(audit_context, audit_reference):
    """disagreeing(folder, exercise) -> {facet: why} for each facet of the exercise on which the code in
    ``folder`` disagrees with the reference."""

    def disagreeing(folder: Path, exercise: str) -> dict[str, str]:
        records = records_here(folder, exercise, audit_context)
        return {f: v for f, v in judge(exercise, records, audit_reference[exercise]).items() if v is not None}

    return disagreeing


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
