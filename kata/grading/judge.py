"""The audit's outside half: the run's seed and data, the reference's records, and each submission's verdicts.

This runs in the grader's own process, which never imports a submission's
code: it draws a small synthetic CelebA for the run (bound read-only into the
records' sandboxes), makes every record of kata/audit on the reference
solutions with the run's seed, and compares each submission's records with
them (kata.audit.judge): one verdict per facet, None when they agree.
"""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path

from kata import audit, curriculum
from kata.project import Project

__all__ = ["Reference", "new_seed"]

CELEBA = dict(n_train=30, n_valid=14, n_test=10)


def new_seed() -> int:
    """A seed no submission can know before its run."""
    return secrets.randbits(48)


class Reference:
    """The run's audit data and the reference's records."""

    def __init__(self, project: Project, seed: int, work: Path):
        from kata.data.synth import generate

        self.seed = seed
        self.data = work / "audit-data"
        generate(self.data, **CELEBA, seed=seed % (2**31), workers=1, progress=False)
        self.records: dict[str, dict] = {}
        self._project = project
        self._tmp = Path(tempfile.mkdtemp(prefix="records-", dir=work))

    def make(self) -> None:
        """The reference's records (the simulated accelerator, where this torch supports it, is theirs)."""
        from kata import sim
        from kata.harness.target import Target

        ok, _ = sim.support()
        context = audit.Context(self.seed, self._tmp, self.data, sim.install() if ok else None, reference=True)
        target = Target(self._project.solutions)
        for exercise in curriculum.names():
            self.records[exercise] = dict(audit.run_records(exercise, target.load(exercise), context))

    def failures(self) -> list[str]:
        """Records the reference could not make here (their facets are then unavailable)."""
        return [f"{ex}.{name}: {r['error']}" for ex, found in self.records.items() for name, r in found.items()
                if "error" in r]

    def verdicts(self, records: dict[str, dict]) -> dict[str, str | None]:
        """Each facet of each exercise: None where the submission's records agree with the reference's."""
        found = {}
        for exercise in curriculum.names():
            found.update(audit.judge(exercise, records.get(exercise, {}), self.records.get(exercise, {})))
        return found
