"""Points: each check's weight and facets, from the reference's run, and each submission's score.

The reference solutions are checked first, in the same sandbox and with the
same options (kata/grading/batch.py). That run lists the checks and fixes
each one's weight: exercise X's points (kata/curriculum.toml) are shared
equally among X's checks that the reference passes here; a check it skips (a
slow check without ``--slow``) or fails carries none, with a warning for a
failure. It also says what each check rests on (its ``audit`` mark): the
facets of the audit (kata/audit) its verdict implies, and what only the
running process observed.

A check that reads records (an exercise with records/NAME.py) ran on the
hand-in's answers, without its code: it earns its weight when it passed. Any
other check earns it when it passed in the hand-in's sandbox **and** each of
the check's facets agrees with the reference (the audit's records, compared
outside the sandbox). A check that passed but whose facet
disagrees earns nothing. Where that facet rests on the work (the function's
answer on inputs drawn for this hand-in) or on the source, honest code can't
pass the check and disagree: the row's status says ``forged:``, with the
exercise and what disagreed. Where it rests on the graded process (a constant,
a shape, a property, a behaviour: kata.audit.PROCESS), it says ``not
confirmed:``, which accuses nobody. The points whose checks rest on the
process (such a facet or record, or what only the process observed) are listed as such.
Review notes never change points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

from kata import audit, curriculum
from kata.audit import texts
from kata.grading.runner import Graded, exercise_name
from kata.i18n import _, say

__all__ = ["Scheme", "Score", "check_name", "finish", "percent", "score", "status_of"]


@cache
def _every_facet() -> dict[str, audit.Facet]:
    return {name: f for ex in curriculum.names() for name, f in audit.facets(ex).items()}


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
    read: dict[str, dict[str, list[str]]]   # nodeid -> the records it read ("exercise.record" -> what they rest on)
    max: dict[str, float]
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_reference(cls, reference: dict, unavailable: list[str]) -> Scheme:
        checks = [c for c in reference["checks"] if exercise_name(c) is not None]
        results = reference["results"]
        scheme = cls(checks, {}, {}, {}, {}, {}, {})
        for ex in curriculum.exercises():
            mine = [c for c in checks if exercise_name(c) == ex.name]
            counted = [c for c in mine if results.get(c, {}).get("outcome") == "passed"]
            for c in mine:
                r = results.get(c, {})
                marks = r.get("audit") or {}
                scheme.facets[c] = [f for f in marks.get("facets", []) if f not in unavailable]
                scheme.observed[c] = marks.get("observed", "")
                scheme.read[c] = r.get("records") or {}
                scheme.weight[c] = ex.points / len(counted) if c in counted else 0.0
                if c in counted:
                    if not marks and not scheme.read[c]:
                        scheme.warnings.append(say("{check} has no audit mark: its points rest on the sandbox's report",
                                                   check=c))
                elif r.get("outcome") == "skipped":
                    scheme.unweighted[c] = say("skipped here ({why})", why=r.get("message") or _("no reason given"))
                else:
                    scheme.unweighted[c] = _("the reference solutions do not pass it here")
                    scheme.warnings.append(say("the reference solutions fail {check} here: it carries no points. "
                                               "{message}", check=c, message=_first_line(r.get("message", ""))))
            scheme.max[ex.name] = float(ex.points) if counted else 0.0
            if not counted:
                scheme.warnings.append(say("no check of exercise '{name}' runs here: its {points:g} points are "
                                           "not graded", name=ex.name, points=ex.points))
        return scheme

    @property
    def total(self) -> float:
        return math.fsum(self.max.values())

    def on_the_process(self, nodeid: str) -> list[str]:
        """What of check ``nodeid`` rests on the graded process: its process facts (by name) and what only the
        running process observed (in words, translated where shown)."""
        every = _every_facet()
        found = [name for name in self.facets.get(nodeid, []) if name in every and every[name].rests in audit.PROCESS]
        found += [name for name, rests in self.read.get(nodeid, {}).items() if set(rests) & set(audit.PROCESS)]
        return found + ([self.observed[nodeid]] if self.observed.get(nodeid) else [])

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
    forged: dict[str, list[str]]          # nodeid -> the work or source facets that disagreed (what, in words)
    unconfirmed: dict[str, list[str]] = field(default_factory=dict)   # nodeid -> its process facets that did


def score(graded: Graded, scheme: Scheme, verdicts: dict[str, str | None]) -> Score:
    exercises, passed, counted, forged, unconfirmed = {}, {}, {}, {}, {}
    rests = {name: f.rests for name, f in _every_facet().items()}
    for name in curriculum.names():
        mine = [c for c in scheme.checks if exercise_name(c) == name and scheme.weight[c] > 0]
        earned = []
        for c in mine:
            if graded.results.get(c, {}).get("outcome") != "passed":
                continue
            disagreed = [f for f in scheme.facets[c] if f not in verdicts or verdicts[f] is not None
                         and not verdicts[f].startswith("unavailable")]   # the reference's record failed: not judged
            said = {f: f + ": " + (verdicts.get(f) or _("no verdict")) for f in disagreed}
            # honest code can't pass a check and disagree on a work or source fact: that alone is called forged
            contradicted = [said[f] for f in disagreed if rests.get(f) not in audit.PROCESS]
            if contradicted:
                forged[c] = contradicted
            elif disagreed:
                unconfirmed[c] = list(said.values())
            else:
                earned.append(c)
        exercises[name] = math.fsum(scheme.weight[c] for c in earned)
        passed[name], counted[name] = len(earned), len(mine)
    return Score(graded.name, exercises, passed, counted, math.fsum(exercises.values()),
                 status_of(graded, forged, unconfirmed), forged, unconfirmed)


def _by_exercise(found: dict[str, list[str]], said: tuple[str, str]) -> list[str]:
    by_exercise: dict[str, list[str]] = {}
    for nodeid, facets in found.items():
        by_exercise.setdefault(exercise_name(nodeid), []).extend(facets)
    return [say(said[len(unique) > 1], exercise=exercise, facet=unique[0], more=len(unique) - 1)
            for exercise, facets in by_exercise.items() for unique in [list(dict.fromkeys(facets))]]


def status_of(graded: Graded, forged: dict[str, list[str]], unconfirmed: dict[str, list[str]] | None = None) -> str:
    """'ok', or what happened, in plain words: 'forged: ...' first, then 'not confirmed: ...', then what went
    wrong, then 'review: ...'."""
    parts = _by_exercise(forged, texts.FORGED) + _by_exercise(unconfirmed or {}, texts.UNCONFIRMED)
    notes = list(graded.problems)
    names = curriculum.names()
    if not graded.found:
        notes.append(_("no exercise module found (an empty submission?)"))
    else:
        missing = [f"{m}.py" for m in names if m not in graded.found]
        if missing:
            notes.append(say("missing: {files}", files=", ".join(missing)))
    broken = sorted({m for r in graded.results.values() if (m := texts.failed_import(r.get("message") or ""))})
    if broken:
        notes.append(say(texts.IMPORT[len(broken) != 1], modules=", ".join(broken)))
    if graded.timed_out:
        left = sum(r.get("outcome") == "not run" for r in graded.results.values())
        notes.append(say(texts.TIMED_OUT[left != 1], n=left))
    ended = sum(r.get("cause") == "ended" for r in graded.results.values())
    if ended:
        notes.append(say(texts.ENDED[ended != 1], n=ended))
    if graded.disk_full:
        notes.append(_("filled its disk"))
    if graded.output_bytes > 1 << 20:
        notes.append(say("printed {mb:,.1f} MB of output (the log keeps its start and end)",
                         mb=graded.output_bytes / 2**20))
    parts += notes
    if graded.notes:
        parts.append(say(texts.REVIEW[len(graded.notes) > 1], note=graded.notes[0], more=len(graded.notes) - 1))
    return "; ".join(parts) if parts else "ok"


def finish(graded: Graded, checks: list[str], timeout: float) -> None:
    """Every check of the reference's list gets an outcome: what did not run fails, saying why."""
    for nodeid in checks:
        if nodeid in graded.results:
            continue
        exercise = exercise_name(nodeid)
        if not graded.found or exercise not in graded.found:
            why = say("exercises/{exercise}.py was not handed in (or not taken: see the status)", exercise=exercise)
        elif graded.timed_out:
            why = say("not run: the submission's time limit ({timeout:g} s) ran out before this check", timeout=timeout)
        else:
            why = _("not run: the test process ended before this check")
        graded.results[nodeid] = {"outcome": "not run", "message": why, "cause": "not run", "audit": None}
