"""The audit's outside half: the run's seeds and data, the reference's records, and each submission's verdicts.

This runs in the grader's own process (kata/grading/batch.py), which never
imports a submission's code: it draws a small synthetic CelebA for the run
(bound read-only into the records' sandboxes), makes every record of kata/audit
on the reference solutions with the run's shared seed, reads what their source
declares, and compares each submission's records with them (kata.audit.judge):
one verdict per facet, None when they agree. Each hand-in draws the records a
work fact reads from a seed of its own (:func:`new_seed`); the reference's
records for that seed are made here too (:meth:`Reference.records_for`), so
nothing one hand-in records is valid for another. The reference's check run,
which fixes each check's weight and marks, is saved with the fingerprint of
what it depends on and reused while that holds.
"""

from __future__ import annotations

import hashlib
import json
import platform
import secrets
import tempfile
import threading
from importlib import metadata
from pathlib import Path

from kata import audit, curriculum, records
from kata.project import Project

__all__ = ["Reference", "fingerprint", "new_seed", "saved_run"]

CELEBA = dict(n_train=30, n_valid=14, n_test=10)


def new_seed() -> int:
    """A seed no submission can know before its run."""
    return secrets.randbits(48)


class Reference:
    """The run's audit data and the reference's records: the run's own, and each hand-in seed's."""

    def __init__(self, project: Project, seed: int, work: Path):
        from kata.data.synth import generate

        self.seed = seed
        self.data = work / "audit-data"
        generate(self.data, **CELEBA, seed=seed % (2**31), workers=1, progress=False)
        records.small_celeba(self.data / records.DATA)   # the records' (kata/records), the same in every run
        self.records: dict[str, dict] = {}
        self._project = project
        self._tmp = Path(tempfile.mkdtemp(prefix="records-", dir=work))
        self._context: audit.Context | None = None
        self._target = None
        self._seeds: dict[int, dict[str, dict]] = {}
        self._lock = threading.Lock()

    def make(self) -> None:
        """The reference's records with the run's seed (the simulated accelerator, where this torch supports it, is
        theirs), and what their source declares."""
        from kata import sim
        from kata.harness import collector
        from kata.harness.target import Target

        # torch's import and the records make little garbage, and each collection would walk all of torch;
        # this process goes on grading, so nothing is frozen
        with collector.preloading(freeze=False):
            ok, _ = sim.support()
            self._context = audit.Context(self.seed, self._tmp, self.data, sim.install() if ok else None,
                                          reference=True, shared=self.seed)
            self._target = Target(self._project.solutions)
            for exercise in curriculum.names():
                self.records[exercise] = audit.records_here(self._project.solutions, exercise, self._context,
                                                            self._target.load(exercise))
            self._seeds[self.seed] = self.records

    def records_for(self, seed: int) -> dict[str, dict]:
        """The reference's records as a hand-in drawn from ``seed`` is asked them: the records a work fact reads
        made anew with that seed, the rest the run's (made once, in this process, one seed at a time)."""
        with self._lock:
            if seed not in self._seeds:
                tmp = Path(tempfile.mkdtemp(prefix=f"seed-{seed:x}-", dir=self._tmp))
                context = audit.Context(**{**vars(self._context), "seed": seed, "tmp": tmp})
                found = {}
                for exercise in curriculum.names():
                    own = audit.drawn_per_hand_in(exercise)
                    skip = [n for n in audit.records(exercise) if n not in own]
                    found[exercise] = {**self.records[exercise],
                                       **dict(audit.run_records(exercise, self._target.load(exercise), context, skip))}
                self._seeds[seed] = found
            return self._seeds[seed]

    def forget(self, seed: int) -> None:
        """Let go of a hand-in seed's records (its verdicts are made)."""
        with self._lock:
            if seed != self.seed:
                self._seeds.pop(seed, None)

    def failures(self) -> list[str]:
        """Records the reference could not make here (their facets are then unavailable)."""
        return [f"{ex}.{name}: {r['error']}" for ex, found in self.records.items() for name, r in found.items()
                if "error" in r]

    def verdicts(self, records: dict[str, dict], seed: int | None = None) -> dict[str, str | None]:
        """Each facet of each exercise: None where the submission's records (drawn from ``seed``, the run's when
        None) agree with the reference's."""
        reference = self.records_for(self.seed if seed is None else seed)
        found = {}
        for exercise in curriculum.names():
            found.update(audit.judge(exercise, records.get(exercise, {}), reference.get(exercise, {})))
        return found


def _digest(project: Project) -> str:
    import kata

    package = Path(kata.__file__).resolve().parent
    files = [project.root / "pyproject.toml", project.root / "conftest.py", *sorted(project.checks.glob("*.py")),
             *sorted(project.solutions.glob("*.py")), *sorted(package.rglob("*.py")), *sorted(package.rglob("*.toml"))]
    h = hashlib.sha256()
    for f in files:
        if f.is_file():
            h.update(str(f.relative_to(f.parents[1])).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def fingerprint(project: Project, **settings) -> dict:
    """What the reference's check run depends on (the kata's files, the versions, the grader's ``settings``): a
    saved run (``reference.json``) is reused only while all of it matches."""
    return {"assets": _digest(project), "python": platform.python_version(), "machine": platform.machine(),
            **{d: _version(d) for d in ("torch", "torchvision", "pytest", "hypothesis", "pytest-reportlog")},
            **settings, "gpus": len(list(Path("/dev").glob("nvidia[0-9]*")))}


def saved_run(path: Path, expected: dict) -> dict | None:
    """The reference's check run saved at ``path``, if its fingerprint is ``expected``."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(saved, dict) and saved.get("fingerprint") == expected and isinstance(saved.get("results"), dict)
    return saved if ok else None
