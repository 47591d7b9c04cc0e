"""Points: each check's weight and facets, from the reference's run, and each submission's score.

The reference solutions are checked first, in the same sandbox and with the
same options (kata/grading/batch.py). That run lists the checks and fixes
each one's weight: exercise X's points (kata/curriculum.toml) are shared
equally among X's checks that the reference passes here; a check it skips (a
slow check without ``--slow``) or fails carries none, with a warning for a
failure. It also says what each check rests on (its ``audit`` mark): the
facets of the audit (kata/audit) its verdict implies, and what only the
running process observed.

A submission earns a check's weight when the check passed in its sandbox
**and** each of the check's facets agrees with the reference (the audit's
records, compared outside the sandbox). A check that passed but whose facet
disagrees earns nothing: the row's status says ``forged:``, with the exercise
and what disagreed. Review notes never change points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kata import curriculum
from kata.grading.runner import Graded, exercise_name

__all__ = ["Scheme", "Score", "check_name", "finish", "percent", "score", "status_of"]


def check_name(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def percent(total: float, maximum: float) -> float:
    return round(100 * total / maximum, 1) if maximum else 0.0


def _first_line(text: str) -> str:
    text = (text or "").strip()
    return text.splitlines()[0][:200] if text else ""


@dataclass
class Scheme:
    """Each check's weight and what it rests on, from the reference's run."""

    checks: list[str]
    weight: dict[str, float]
    unweighted: dict[str, str]            # nodeid -> why it carries no points
    facets: dict[str, list[str]]          # nodeid -> the audit's facets its verdict implies
    observed: dict[str, str]              # nodeid -> what only the running process saw ('' if nothing)
    max: dict[str, float]
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_reference(cls, reference: dict, unavailable: list[str]) -> Scheme:
        checks = [c for c in reference["checks"] if exercise_name(c) is not None]
        results = reference["results"]
        scheme = cls(checks, {}, {}, {}, {}, {})
        for ex in curriculum.exercises():
            mine = [c for c in checks if exercise_name(c) == ex.name]
            counted = [c for c in mine if results.get(c, {}).get("outcome") == "passed"]
            for c in mine:
                r = results.get(c, {})
                marks = r.get("audit") or {}
                scheme.facets[c] = [f for f in marks.get("facets", []) if f not in unavailable]
                scheme.observed[c] = marks.get("observed", "")
                scheme.weight[c] = ex.points / len(counted) if c in counted else 0.0
                if c in counted:
                    if not marks:
                        scheme.warnings.append(f"{c} has no audit mark: its points rest on the sandbox's report")
                elif r.get("outcome") == "skipped":
                    scheme.unweighted[c] = f"skipped here ({r.get('message') or 'no reason given'})"
                else:
                    scheme.unweighted[c] = "the reference solutions do not pass it here"
                    scheme.warnings.append(f"the reference solutions fail {c} here: it carries no points. "
                                           f"{_first_line(r.get('message', ''))}")
            scheme.max[ex.name] = float(ex.points) if counted else 0.0
            if not counted:
                scheme.warnings.append(f"no check of exercise '{ex.name}' runs here: its {ex.points:g} points "
                                       "are not graded")
        return scheme

    @property
    def total(self) -> float:
        return math.fsum(self.max.values())

    def resting_on_the_process(self) -> float:
        """The points whose checks also rest on what only the sandboxed process observed."""
        return math.fsum(w for c, w in self.weight.items() if self.observed.get(c))


@dataclass
class Score:
    name: str
    exercises: dict[str, float]
    passed: dict[str, int]
    counted: dict[str, int]
    total: float
    status: str
    forged: dict[str, list[str]]          # nodeid -> the facets that disagreed (what, in words)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def score(graded: Graded, scheme: Scheme, verdicts: dict[str, str | None]) -> Score:
    exercises, passed, counted, forged = {}, {}, {}, {}
    for name in curriculum.names():
        mine = [c for c in scheme.checks if exercise_name(c) == name and scheme.weight[c] > 0]
        earned = []
        for c in mine:
            if graded.results.get(c, {}).get("outcome") != "passed":
                continue
            disagreed = [f"{f}: {verdicts.get(f) or 'no verdict'}" for f in scheme.facets[c]
                         if f not in verdicts or verdicts[f] is not None]
            if disagreed:
                forged[c] = disagreed
            else:
                earned.append(c)
        exercises[name] = math.fsum(scheme.weight[c] for c in earned)
        passed[name], counted[name] = len(earned), len(mine)
    return Score(graded.name, exercises, passed, counted, math.fsum(exercises.values()),
                 status_of(graded, forged), forged)


def status_of(graded: Graded, forged: dict[str, list[str]]) -> str:
    """'ok', or what happened, in plain words: 'forged: ...' first, then what went wrong, then 'review: ...'."""
    parts = []
    by_exercise: dict[str, list[str]] = {}
    for nodeid, facets in forged.items():
        by_exercise.setdefault(exercise_name(nodeid), []).extend(facets)
    for exercise, facets in by_exercise.items():
        unique = list(dict.fromkeys(facets))
        parts.append(f"forged: {exercise}: {unique[0]}" + (f" (and {len(unique) - 1} more)" if len(unique) > 1 else ""))
    notes = list(graded.problems)
    names = curriculum.names()
    if not graded.found:
        notes.append("no exercise module found (an empty submission?)")
    else:
        missing = [f"{m}.py" for m in names if m not in graded.found]
        if missing:
            notes.append("missing: " + ", ".join(missing))
    broken = sorted({first.split()[0] for r in graded.results.values()
                     for first in (r.get("message") or "").strip().splitlines()[:1] if " failed to import" in first})
    if broken:
        notes.append(", ".join(broken) + " fail" + ("s" if len(broken) == 1 else "") + " to import")
    if graded.timed_out:
        left = sum(r.get("outcome") == "not run" for r in graded.results.values())
        notes.append(f"timed out: {_plural(left, 'check')} did not run")
    ended = sum(r.get("cause") == "ended" for r in graded.results.values())
    if ended:
        notes.append(f"the test process ended early {_plural(ended, 'time')} (see the failed checks)")
    if graded.disk_full:
        notes.append("filled its disk")
    if graded.output_bytes > 1 << 20:
        notes.append(f"printed {graded.output_bytes / 2**20:,.1f} MB of output (the log keeps its start and end)")
    parts += notes
    if graded.notes:
        parts.append("review: " + graded.notes[0] + (f" (and {len(graded.notes) - 1} more: see the log)"
                                                      if len(graded.notes) > 1 else ""))
    return "; ".join(parts) if parts else "ok"


def finish(graded: Graded, checks: list[str], timeout: float) -> None:
    """Every check of the reference's list gets an outcome: what did not run fails, saying why."""
    for nodeid in checks:
        if nodeid in graded.results:
            continue
        exercise = exercise_name(nodeid)
        if not graded.found or exercise not in graded.found:
            why = f"exercises/{exercise}.py was not handed in (or not taken: see the status)"
        elif graded.timed_out:
            why = f"not run: the submission's time limit ({timeout:g} s) ran out before this check"
        else:
            why = "not run: the test process ended before this check"
        graded.results[nodeid] = {"outcome": "not run", "message": why, "cause": "not run", "audit": None}
