"""Grading one submission: its records asked in its sandbox, then the checks on their answers in the grader's own
process (the ``verdicts`` server, which never holds any of the hand-in's code). A records' child that dies or hangs
fails what it was asking, and a fresh one asks the rest (docs/teaching.md, "The trust model", 1). Nothing here
decides points (kata/grading/scoring.py).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kata import curriculum, records
from kata.grading import hostile, texts
from kata.grading.intake import Submission, take
from kata.grading.sandbox import Limits
from kata.grading.slots import Answer, Slot
from kata.grading.vetting import review
from kata.harness import outcomes as outcomes_model
from kata.i18n import _, say
from kata.project import locate
from kata.records.wire import untyped

__all__ = ["Graded", "Job", "MAX_ROUNDS", "exercise_name", "grade_submission", "new_seed", "outcomes"]

MAX_ROUNDS = 8       # records' children per submission at most
MAX_STRIKES = 2      # children one exercise may end before the rest of its records are not asked
START = 180.0        # seconds the checks' child may take before its first report line (collection, imports)


def new_seed() -> int:
    """A seed no submission can know before its run."""
    return secrets.randbits(48)


def exercise_name(nodeid: str) -> str | None:
    exercise = curriculum.exercise_of(nodeid)
    return exercise.name if exercise else None


@dataclass
class Graded:
    """What grading one submission found (the reference's run too)."""

    name: str
    path: Path
    found: list[str] = field(default_factory=list)          # the exercise modules taken
    problems: list[str] = field(default_factory=list)       # what was refused, cut short or went wrong
    notes: list[str] = field(default_factory=list)          # for the teacher's review (kata/grading/vetting.py)
    results: dict[str, dict] = field(default_factory=dict)  # nodeid -> {outcome, message, cause, records}
    records: dict[str, dict] = field(default_factory=dict)  # exercise -> record -> {"data"} or {"error"}
    log: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False
    disk_full: bool = False
    output_bytes: int = 0
    seed: int | None = None                                  # what the records' inputs were drawn from


@dataclass
class Job:
    """One job's two servers, and what every submission's run shares."""

    records: Slot
    verdicts: Slot
    limits: Limits
    pytest_args: list[str]        # pytest's arguments for the checks of one hand-in's answers
    order: list[str] = field(default_factory=list)   # every check, in the order pytest runs them (the reference's)


def outcomes(text: str) -> dict[str, dict]:
    """Each check's outcome from a pytest report log (hostile input), read by the one outcome model, for the checks
    whose teardown was reported (done). A check reported twice for one phase is failed: neither report is taken."""
    reports, phases, read = [], Counter(), {}
    for line in text.splitlines():
        with contextlib.suppress(hostile.Unreadable):
            report = hostile.decode(line)
            if isinstance(report, dict) and report.get("$report_type") == "TestReport" \
                    and isinstance(report.get("nodeid"), str):
                reports.append(report)
                phases[report["nodeid"], str(report.get("when"))] += 1
                for pair in report.get("user_properties") or []:
                    match pair:   # the records a check read, and what each rests on
                        case ["kata_record", [str(name), list(rests)]]:
                            read.setdefault(report["nodeid"], {})[name] = [str(v) for v in rests]
    done = {r["nodeid"] for r in reports if r.get("when") == "teardown"}
    try:
        found = outcomes_model.records(reports)
    except Exception:  # noqa: BLE001 - a log the submission wrote itself: read no further
        found = []
    results = {r.nodeid: {"outcome": "failed" if r.outcome == "todo" else r.outcome, "todo": r.outcome == "todo",
                          "message": r.message, "cause": r.cause, "records": read.get(r.nodeid, {})}
               for r in found if r.nodeid in done}
    for (nodeid, when), n in phases.items():
        if n > 1:
            results[nodeid] = {"outcome": "failed", "todo": False, "cause": "twice",
                               "message": say("the report log holds this check's {when} {n} times: the grader "
                                              "takes none of them", when=when, n=n)}
    return results


def _why(answer: Answer, limits: Limits, record: bool = True) -> str:
    if answer.end == "memory":
        return say("ran out of memory ({mb:,} MB for all of the submission's processes)", mb=limits.memory_mb)
    if answer.end == "quiet":
        return say(texts.QUIET[record], s=records.RECORD_SECONDS if record else limits.test_timeout)
    if answer.end == "lost" or answer.why:
        return answer.why
    if answer.disk_full:
        return say("filled its disk ({mb:,} MB)", mb=limits.disk_mb)
    if os.WIFSIGNALED(answer.status):
        return say("was killed by signal {signal}", signal=os.WTERMSIG(answer.status))
    return say("exited (status {status})", status=answer.status >> 8) if answer.status else _("ended early")


def _log(graded: Graded, role: str, answer: Answer) -> None:
    graded.output_bytes += answer.output_bytes
    graded.disk_full = graded.disk_full or answer.disk_full
    graded.log.append(f"--- {role}: {answer.seconds:.1f} s, ended: {answer.end} ---\n{answer.output.rstrip()}")
    if answer.left:
        graded.log.append(f"--- {role}: " + say("this hand-in left its sandbox other than it found it (replaced before "
                                                "the next hand-in): {left}", left="; ".join(answer.left[:20])))


def _asked(exercise: str) -> list[str]:
    """The records asked of an exercise in the sandbox (those of the source are read here)."""
    return [n for n, r in records.load(locate().records_of(exercise)).items() if not r.of_source]


def _records(job: Job, graded: Graded, files: dict[str, str], deadline: float) -> None:
    order = [(ex, name) for ex in curriculum.names() for name in _asked(ex)]
    strikes = Counter()
    for _round in range(MAX_ROUNDS):
        left = deadline - time.monotonic()
        if left < 1:
            graded.timed_out = True
            return
        skip = [f"{ex}/{n}" for ex, names in graded.records.items() for n in names]
        answer = job.records.ask({"files": files, "seed": graded.seed, "skip": skip, "wall": left,
                                  "quiet": records.RECORD_SECONDS + 15, "start": 2 * records.RECORD_SECONDS}, left + 60)
        _log(graded, "the records", answer)
        for line in answer.report.splitlines():
            try:
                decoded = hostile.decode(line)
            except hostile.Unreadable as err:   # said, so that a record lost this way is not taken for a crash
                graded.problems.append(say("a line of its records' report was not read: {why}", why=err))
                continue
            match decoded:
                case [str(exercise), str(name), dict(result)]:
                    if name in graded.records.setdefault(exercise, {}):   # void, not replaced: whose is it?
                        result = {"error": say("the record was written twice; the grader takes neither")}
                    graded.records[exercise][name] = result
        pending = [(ex, n) for ex, n in order if n not in graded.records.get(ex, {})]
        if not pending:
            return
        exercise, name = pending[0]
        strikes[exercise] += 1
        if strikes[exercise] == 1:
            graded.problems.append(say("the process asking its records stopped in {exercise}: {why}; the rest was "
                                       "asked in a fresh one", exercise=exercise, why=_why(answer, job.limits)))
        error = {"error": say("the process asking the records {why}", why=_why(answer, job.limits))}
        for ex, n in pending if strikes[exercise] >= MAX_STRIKES else pending[:1]:
            if ex == exercise:   # twice in one exercise (its import?): the rest of it is not asked again
                graded.records.setdefault(ex, {})[n] = error
        if answer.end == "wall":
            graded.timed_out = True
            return


def _sources(graded: Graded, files: dict[str, str], reference: bool = False) -> None:
    """The records of the source, read here (kata/records/declared.py); what a hand-in's does not fix, to review."""
    for exercise in curriculum.names():
        for name, found in records.ask_source(exercise, files, graded.seed, locate().records_of(exercise)):
            graded.records.setdefault(exercise, {})[name] = found
            for case in [] if reference else found["cases"]:
                with contextlib.suppress(Exception):   # the grader's own reading: nothing to review where it failed
                    unresolved = untyped(case["data"])["unresolved"]
                    graded.notes += [say(texts.REVIEW_SOURCE, unresolved=u) for u in unresolved]


def _verdicts(job: Job, graded: Graded, deadline: float) -> None:
    """Every check, on the records' answers, in the grader's own process (it holds none of the hand-in's code)."""
    left = deadline - time.monotonic()
    if left < 1:
        graded.timed_out = True
        return
    answers = {"seed": graded.seed, "celeba": records.DATA, "records": graded.records}
    answer = job.verdicts.ask({"files": {}, "records": answers, "args": job.pytest_args, "wall": left,
                               "quiet": job.limits.test_timeout + 15, "start": START}, left + 60)
    _log(graded, "the checks of the records' answers", answer)
    graded.results.update(outcomes(answer.report))
    if answer.end != "exit" and any(c not in graded.results for c in job.order):
        graded.problems.append(say("the checks of its answers stopped: the test process {why}",
                                   why=_why(answer, job.limits, False)))
        graded.timed_out = graded.timed_out or answer.end == "wall"


def grade_submission(job: Job, sub: Submission, timeout: float | None = None, reference: bool = False,
                     seed: int | None = None) -> Graded:
    """Take, note, ask the records of (drawn from ``seed``, by default a new one) and check one submission.
    Whatever goes wrong in the grader while it does is this submission's row, never an exception out of here."""
    start = time.monotonic()
    graded = Graded(sub.name, sub.path, seed=new_seed() if seed is None else seed)
    try:
        taken = take(sub.path, trusted=reference)
        graded.found, graded.problems = taken.modules, list(taken.problems)
        graded.notes = [] if reference else review(taken.files)
        if graded.found:
            deadline = start + (timeout or job.limits.timeout)
            _records(job, graded, taken.files, deadline)
            _sources(graded, taken.files, reference)
            _verdicts(job, graded, deadline)
    except Exception as exc:  # noqa: BLE001 - the grader's failure on one hand-in is that hand-in's row
        why = say("the grader could not read its report: {kind}: {error}", kind=type(exc).__name__,
                  error=str(exc)[:300])
        graded.problems.append(why)
        graded.log.append(f"--- {why}")
        job.records.stop()   # and the next hand-in starts with fresh servers
        job.verdicts.stop()
    graded.seconds = time.monotonic() - start
    return graded
