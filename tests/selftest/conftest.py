"""Shared by the self-tests: the audit's inputs and the reference's records, and what an inner run's
checks passed with the facets they name.

`test_audit.py` uses them, and so does `test_known_wrong.py` under `--slow`: there each known
mistake's run takes all of its exercise's checks, so that one run shows both that the mistake is
caught and that honest code never loses a point to the audit (each check it passes keeps its points).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kata import audit, curriculum, sim
from kata.audit import Context, judge, run_records
from kata.harness.target import Target
from kata.project import locate


class FacetMarks:
    """An inner run's plugin: each check's mark (facets resolved), and whether it passed."""

    def __init__(self):
        self.marks: dict[str, dict | None] = {}
        self.passed: dict[str, bool] = {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            exercise = curriculum.exercise_of(str(item.path))
            mark = item.get_closest_marker("audit")
            if exercise is not None:
                self.marks[item.nodeid] = mark and audit.marked(exercise.name, mark, getattr(item, "callspec", None))

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.failed or report.skipped:
            self.passed[report.nodeid] = report.passed and self.passed.get(report.nodeid, True)


@pytest.fixture(scope="session")
def facet_marks() -> type[FacetMarks]:
    """:class:`FacetMarks`: one, made fresh, for each inner run's ``plugins=[...]``."""
    return FacetMarks


@pytest.fixture(scope="session")
def audit_context(tmp_path_factory) -> Context:
    from kata.data.synth import generate

    root = tmp_path_factory.mktemp("audit-celeba")
    generate(root, n_train=30, n_valid=14, n_test=10, seed=11, workers=1, progress=False)
    ok, _ = sim.support()
    return Context(seed=20261201, tmp=tmp_path_factory.mktemp("records"), celeba=root,
                   accelerator=sim.install() if ok else None)


@pytest.fixture(scope="session")
def audit_reference(audit_context) -> dict[str, dict]:
    ref = Context(**{**vars(audit_context), "reference": True})
    target = Target(locate().solutions)
    return {ex: dict(run_records(ex, target.load(ex), ref)) for ex in curriculum.names()}


@pytest.fixture(scope="session")
def points_lost_to_the_audit(audit_context, audit_reference):
    """lost(folder, exercise, marks) -> the checks that passed on ``folder`` but a facet they name
    disagrees with the reference ("check: facet: why"): points honest code would lose."""

    def lost(folder: Path, exercise: str, marks: FacetMarks) -> list[str]:
        records = dict(run_records(exercise, Target(folder).load(exercise), audit_context))
        verdicts = judge(exercise, records, audit_reference[exercise])
        return [f"{nodeid.split('::')[-1]}: {f}: {verdicts[f]}" for nodeid, passed in marks.passed.items()
                if passed and marks.marks.get(nodeid) for f in marks.marks[nodeid]["facets"]
                if verdicts.get(f) is not None]

    return lost
