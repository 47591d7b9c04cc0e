"""Points: each check's weight, from the reference run, and each submission's score.

The reference solutions are checked first, in the same sandbox and with the
same options (kata/grading/reference.py). That run is the list of checks, known
independently of any student's run, and it fixes each check's weight:
exercise X's points (kata/curriculum.toml) are shared equally among X's checks
that the reference passes here. A check the reference skips here (a slow check
without ``--slow``, a CUDA check on a machine without one) carries no points
for anyone; one the reference fails carries none either, with a warning (the
environment is broken). A student earns a check's weight when the check
passes on their code; failed, skipped in their run, or not run earns nothing.
A flagged submission scores 0 unless the teacher passes ``--flagged keep``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kata import curriculum
from kata.grading.results import Graded, status_of

__all__ = ["FLAGGED_POLICIES", "Scheme", "Score", "check_name", "exercise_name", "percent", "score"]

FLAGGED_POLICIES = ("zero", "keep")


def exercise_name(nodeid: str) -> str | None:
    exercise = curriculum.exercise_of(nodeid)
    return exercise.name if exercise else None


def check_name(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def percent(total: float, maximum: float) -> float:
    return round(100 * total / maximum, 1) if maximum else 0.0


def _first_line(text: str) -> str:
    text = (text or "").strip()
    return text.splitlines()[0][:200] if text else ""


@dataclass
class Scheme:
    """Each check's weight, from the reference run."""

    checks: list[str]                        # every check, in order
    weight: dict[str, float]                 # nodeid -> points (0 for an unweighted check)
    unweighted: dict[str, str]               # nodeid -> why it carries no points
    max: dict[str, float]                    # exercise -> points available here
    warnings: list[str]

    @classmethod
    def from_reference(cls, reference: dict) -> Scheme:
        checks = [c for c in reference["checks"] if exercise_name(c) is not None]
        results = reference["results"]
        weight, unweighted, maximum, warnings = {}, {}, {}, []
        for ex in curriculum.exercises():
            mine = [c for c in checks if exercise_name(c) == ex.name]
            counted = [c for c in mine if results.get(c, {}).get("outcome") == "passed"]
            for c in mine:
                r = results.get(c, {})
                if c in counted:
                    continue
                if r.get("outcome") == "skipped":
                    unweighted[c] = f"skipped here ({r.get('message') or 'no reason given'})"
                else:
                    unweighted[c] = "the reference solutions do not pass it here"
                    warnings.append(f"the reference solutions fail {c} here ({r.get('kind') or r.get('outcome')}): "
                                    f"it carries no points. {_first_line(r.get('message', ''))}")
            for c in mine:
                weight[c] = ex.points / len(counted) if c in counted else 0.0
            maximum[ex.name] = float(ex.points) if counted else 0.0
            if not mine:
                warnings.append(f"exercise '{ex.name}' has no checks here (tests/test_{ex.name}.py): "
                                f"its {ex.points:g} points are not graded")
            elif not counted:
                warnings.append(f"no check of exercise '{ex.name}' runs here: its {ex.points:g} points are not graded")
        return cls(checks, weight, unweighted, maximum, warnings)

    @property
    def total(self) -> float:
        return math.fsum(self.max.values())


@dataclass
class Score:
    name: str
    exercises: dict[str, float]
    passed: dict[str, int]
    counted: dict[str, int]
    total: float
    status: str
    flagged: bool = False
    earned: dict[str, float] | None = None   # per exercise, what its checks earned (--flagged keep gives it)

    @property
    def earned_total(self) -> float:
        return math.fsum((self.earned or self.exercises).values())


def score(graded: Graded, scheme: Scheme, flagged: str = "zero") -> Score:
    exercises, passed, counted = {}, {}, {}
    for name in curriculum.names():
        mine = [c for c in scheme.checks if exercise_name(c) == name and scheme.weight[c] > 0]
        ok = [c for c in mine if graded.results.get(c, {}).get("outcome") == "passed"]
        exercises[name] = math.fsum(scheme.weight[c] for c in ok)
        passed[name], counted[name] = len(ok), len(mine)
    earned = dict(exercises)
    if graded.flagged and flagged == "zero":
        exercises = dict.fromkeys(exercises, 0.0)
    return Score(graded.name, exercises, passed, counted, math.fsum(exercises.values()), status_of(graded),
                 graded.flagged, earned)
