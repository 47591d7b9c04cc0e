"""What grading one submission produced: each check's outcome, what went wrong, what was flagged.

Every check of the reference list gets an outcome (:func:`finish_results`):
what did not run fails, saying why. :func:`status_of` puts a submission's
state in plain words for grades.csv: ``ok``, or ``flagged: ...`` first when
the vetting or the tripwire found something, then what went wrong.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kata import curriculum
from kata.grading.events import failed
from kata.harness.target import Target, TargetError

__all__ = ["Graded", "finish_results", "missing_message", "status_of"]


@dataclass
class Graded:
    """What one submission's run produced (the reference's too)."""

    name: str
    path: Path
    results: dict[str, dict] = field(default_factory=dict)   # nodeid -> {outcome, kind, message, duration}
    collected: list[str] | None = None
    found: list[str] = field(default_factory=list)            # the modules taken
    problems: list[str] = field(default_factory=list)         # what went wrong taking or running it
    flags: list[str] = field(default_factory=list)            # "exercises/x.py line 3: import os (why)"
    sandbox: dict | None = None
    log: str = ""
    seconds: float = 0.0
    output_bytes: int = 0
    timed_out: bool = False                                   # the wall-clock limit ended it
    run_dir: Path | None = None                               # set when no test process was needed

    @property
    def flagged(self) -> bool:
        return bool(self.flags)


def missing_message(run_dir: Path, module: str | None) -> str:
    """What the kata plugin says when a check touches a module that isn't there."""
    try:
        Target(run_dir / "exercises").load(module or "")
    except TargetError as err:
        return str(err).replace(f"{run_dir}{os.sep}", "")
    return f"exercises/{module}.py does not exist"


def finish_results(graded: Graded, checks: list[str], timeout: float) -> None:
    """Every check of the reference list gets an outcome: what did not run fails, saying why."""
    not_run = [c for c in checks if c not in graded.results]
    for nodeid in not_run:
        if not graded.found and graded.run_dir is not None:
            exercise = curriculum.exercise_of(nodeid)
            graded.results[nodeid] = failed("module", missing_message(graded.run_dir, exercise and exercise.name))
            continue
        if graded.timed_out:
            why = f"not run: the submission's time limit ({timeout:g} s) ran out before this check"
        elif graded.collected is None:
            why = "not run: the checks could not start (see the status)"
        else:
            why = "not run: the test process ended before this check"
        graded.results[nodeid] = {"outcome": "not run", "kind": "not run", "message": why, "duration": 0.0}
    if graded.timed_out:
        graded.problems.insert(0, f"timed out after {timeout:g} s: {len(not_run)} "
                                  f"check{'s' if len(not_run) != 1 else ''} did not run")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def status_of(graded: Graded) -> str:
    """'ok', or what went wrong, in plain words; 'flagged: ...' first when something was flagged."""
    notes = list(graded.problems)
    names = curriculum.names()
    if not graded.found and not any("zip" in p for p in notes):
        notes.append("no exercise module found (an empty submission?)")
    elif graded.found:
        missing = [f"{m}.py" for m in names if m not in graded.found]
        if missing:
            notes.append("missing: " + ", ".join(missing))
    broken = []
    for r in graded.results.values():
        m = re.match(r"exercises/(\w+)\.py (failed to import|did not finish importing|ended the test process "
                     r"while it was being imported)", r.get("message", ""))
        if m and f"{m.group(1)}.py" not in broken:
            broken.append(f"{m.group(1)}.py")
    if broken:
        notes.append(", ".join(broken) + (" fails" if len(broken) == 1 else " fail") + " to import")
    kinds = Counter(r.get("kind") for r in graded.results.values())
    if kinds["timeout"]:
        notes.append(f"{_plural(kinds['timeout'], 'check')} timed out")
    if kinds["memory"]:
        notes.append(f"{_plural(kinds['memory'], 'check')} ran out of memory")
    if kinds["struck"]:
        notes.append(f"{_plural(kinds['struck'], 'check')} not run after repeated timeouts or crashes in "
                     f"their exercise")
    if graded.output_bytes > 1 << 20:
        notes.append(f"printed {_size(graded.output_bytes)} of output (the log keeps its start and end)")
    if graded.flags:
        more = f" (and {len(graded.flags) - 3} more: see the log)" if len(graded.flags) > 3 else ""
        return "flagged: " + "; ".join(graded.flags[:3]) + more + ("; " + "; ".join(notes) if notes else "")
    return "; ".join(notes) if notes else "ok"
