"""Points: each check's weight, from the reference's run, and each submission's score (docs/teaching.md, "The
trust model", 2). Exercise X's points are shared equally among X's checks that the reference passes here; a check
it skips or fails carries none. The points whose checks read an answer resting on the graded process
(kata.records.PROCESS) are listed as such. Review notes never change points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kata import curriculum, records
from kata.grading import texts
from kata.grading.runner import Graded, exercise_name
from kata.grading.sandbox import Limits
from kata.i18n import _, say

__all__ = ["Scheme", "Score", "percent", "score", "status_of"]


def percent(total: float, maximum: float) -> float:
    return round(100 * total / maximum, 1) if maximum else 0.0


@dataclass
class Scheme:
    """Each check's weight and what it rests on, from the reference's run."""

    checks: list[str]
    weight: dict[str, float]
    unweighted: dict[str, str]            # nodeid -> why it carries no points
    read: dict[str, dict[str, list[str]]]   # nodeid -> the records it read ("exercise.record" -> what they rest on)
    max: dict[str, float]
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_reference(cls, results: dict[str, dict]) -> Scheme:
        checks = [c for c in results if exercise_name(c) is not None]
        scheme = cls(checks, {}, {}, {}, {})
        for ex in curriculum.exercises():
            mine = [c for c in checks if exercise_name(c) == ex.name]
            counted = [c for c in mine if results[c].get("outcome") == "passed"]
            for c in mine:
                r = results[c]
                scheme.read[c] = r.get("records") or {}
                scheme.weight[c] = ex.points / len(counted) if c in counted else 0.0
                if r.get("outcome") == "skipped":
                    scheme.unweighted[c] = say("skipped here ({why})", why=r.get("message") or _("no reason given"))
                elif c not in counted:
                    scheme.unweighted[c] = _("the reference solutions do not pass it here")
                    message = (r.get("message") or "").strip().split("\n")[0][:200]
                    scheme.warnings.append(say("the reference solutions fail {check} here: it carries no points. "
                                               "{message}", check=c, message=message))
            scheme.max[ex.name] = float(ex.points) if counted else 0.0
            if not counted:
                scheme.warnings.append(say("no check of exercise '{name}' runs here: its {points:g} points are "
                                           "not graded", name=ex.name, points=ex.points))
        return scheme

    @property
    def total(self) -> float:
        return math.fsum(self.max.values())

    def on_the_process(self, nodeid: str) -> list[str]:
        """The records check ``nodeid`` read whose answers rest, at least in part, on the graded process."""
        return [name for name, rests in self.read.get(nodeid, {}).items() if set(rests) & set(records.PROCESS)]

    def resting_on_the_process(self) -> float:
        """The points whose checks rest, at least in part, on the graded process."""
        return math.fsum(w for c, w in self.weight.items() if w > 0 and self.on_the_process(c))


@dataclass
class Score:
    name: str
    exercises: dict[str, float]
    passed: dict[str, int]
    counted: dict[str, int]
    total: float
    status: str


def score(graded: Graded, scheme: Scheme, timeout: float = Limits.timeout) -> Score:
    """The hand-in's score, once every check of the reference's list has an outcome (what did not run fails, saying
    why: ``timeout`` is its time limit); a row that says why when its bytes made scoring fail."""
    try:
        for nodeid in [c for c in scheme.checks if c not in graded.results]:
            exercise = exercise_name(nodeid)
            if exercise not in graded.found:
                why = say("exercises/{exercise}.py was not handed in (or not taken: see the status)", exercise=exercise)
            elif graded.timed_out:
                why = say("not run: the submission's time limit ({timeout:g} s) ran out before this check",
                          timeout=timeout)
            else:
                why = _("not run: the test process ended before this check")
            graded.results[nodeid] = {"outcome": "not run", "message": why, "cause": "not run"}
        exercises, passed, counted = {}, {}, {}
        for name in curriculum.names():
            mine = [c for c in scheme.checks if exercise_name(c) == name and scheme.weight[c] > 0]
            earned = [c for c in mine if graded.results.get(c, {}).get("outcome") == "passed"]
            exercises[name] = math.fsum(scheme.weight[c] for c in earned)
            passed[name], counted[name] = len(earned), len(mine)
        return Score(graded.name, exercises, passed, counted, math.fsum(exercises.values()), status_of(graded))
    except Exception as exc:  # noqa: BLE001 - one hand-in's data never ends the class's run
        why = say("the grader could not score it: {kind}: {error}", kind=type(exc).__name__, error=str(exc)[:200])
        graded.problems.append(why)
        names = curriculum.names()
        return Score(graded.name, dict.fromkeys(names, 0.0), dict.fromkeys(names, 0), dict.fromkeys(names, 0), 0.0, why)


def status_of(graded: Graded) -> str:
    """'ok', or what happened, in plain words: what went wrong, then 'review: ...'."""
    notes = list(graded.problems)
    missing = [f"{m}.py" for m in curriculum.names() if m not in graded.found]
    if not graded.found:
        notes.append(_("no exercise module found (an empty submission?)"))
    elif missing:
        notes.append(say("missing: {files}", files=", ".join(missing)))
    broken = [f"{m}.py" for m in graded.found if "import" in graded.records.get(m, {})]   # its records' import
    if broken:
        notes.append(say(texts.IMPORT[len(broken) != 1], modules=", ".join(broken)))
    if graded.timed_out:
        left = sum(r.get("outcome") == "not run" for r in graded.results.values())
        notes.append(say(texts.TIMED_OUT[left != 1], n=left))
    if graded.disk_full:
        notes.append(_("filled its disk"))
    if graded.output_bytes > 1 << 20:
        notes.append(say("printed {mb:,.1f} MB of output (the log keeps its start and end)",
                         mb=graded.output_bytes / 2**20))
    if graded.notes:
        notes.append(say(texts.REVIEW[len(graded.notes) > 1], note=graded.notes[0], more=len(graded.notes) - 1))
    return "; ".join(notes) or "ok"
