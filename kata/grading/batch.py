"""A whole ``kata grade``: the run's data, the servers, the reference, every submission, ``jobs`` at a time.

The reference solutions are graded first, as a hand-in is: their run lists the checks and fixes each one's weight.
Whatever one hand-in's bytes do to the grader becomes that hand-in's row: every other row is written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import kata
from kata import curriculum, records
from kata.grading import sandbox, texts
from kata.grading.intake import GradeError, Submission, name_submissions
from kata.grading.reports import class_table, write_outputs
from kata.grading.runner import Graded, Job, grade_submission
from kata.grading.sandbox import Limits, Roots
from kata.grading.scoring import Scheme, Score, score
from kata.grading.slots import Slot
from kata.i18n import _, say
from kata.project import Project, locate

__all__ = ["grade"]

REFERENCE_TIMEOUT = 900.0


def grade(paths: list[str | Path], out: str | Path, limits: Limits | None = None, jobs: int | None = None,
          progress: bool = True, keep: bool = False, echo=print) -> list[Score]:
    """Grade ``paths`` into ``out``; return the scores (in the order given)."""
    limits = limits or Limits()
    jobs = max(1, jobs or os.cpu_count() or 1)
    project = locate()
    if not project.has_solutions:
        raise GradeError(say("no reference solutions in {root} (a student release?): grading needs the teacher's "
                             "copy of the kata, with solutions/", root=project.root))
    subs = name_submissions(paths)
    out = Path(out).expanduser().resolve()
    work = Path(tempfile.mkdtemp(prefix="kata-grade-"))
    os.chmod(work, 0o711)
    try:
        return _grade(subs, out, limits, jobs, project, work, progress, echo)
    finally:
        if keep:
            echo(say("kata grade: working folders kept in {work}", work=work))
        else:
            shutil.rmtree(work, ignore_errors=True)


def _grade(subs, out: Path, limits: Limits, jobs: int, project: Project, work: Path, progress: bool,
           echo) -> list[Score]:
    start = time.monotonic()
    data = work / "data"   # read-only in every sandbox: the records' CelebA
    records.small_celeba(data / records.DATA)
    os.chmod(data, 0o755)
    roots = Roots(project, data)
    plan = sandbox.plan(limits.isolate, roots)
    if plan.kind == "refused":
        raise GradeError("; ".join(plan.notes))
    protections = plan.lines(limits)
    for line in protections:
        echo(f"kata grade: {line}")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    # The checks, collected once in each verdicts' server (the grader's own process, given no hand-in's code), then
    # run with ``args`` on each hand-in's answers.
    checks = [str(project.checks_of(n)) for n in curriculum.names() if project.checks_of(n).is_file()]
    collect = [*checks, "--rootdir", str(project.root), "-c", str(project.root / "pyproject.toml"),
               "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    args = [*collect, "-p", "no:cacheprovider", "--timeout", f"{limits.test_timeout:g}", "--timeout-method", "signal",
            "--basetemp", "{work}/tmp/pytest", "-q", "--tb=short", "--color=no", "--target", "{work}/exercises",
            "--report-log", "{work}/out/report.jsonl", "--records-from", "{work}/records.json"]
    pool = [Job(Slot(plan, "records", roots, limits, i, work, threads),
                Slot(sandbox.Plan(), "verdicts", roots, limits, i, work, threads, collect), limits,
                args + (["--slow"] if limits.slow else []))
            for i in range(min(jobs, max(1, len(subs))))]
    slots = [slot for job in pool for slot in (job.verdicts, job.records)]
    try:
        for slot in slots:   # from this thread, which outlives them
            slot.start(wait=False)
        for slot in slots:
            slot.ready()
        reference = grade_submission(pool[0], Submission("reference", project.solutions), REFERENCE_TIMEOUT,
                                     reference=True)
        if not any(r["outcome"] == "passed" for r in reference.results.values()):
            raise GradeError(_("the reference solutions could not be checked here:") + "\n"
                             + "\n".join(reference.log)[-3000:])
        for job in pool:
            job.order = list(reference.results)
        graded = _run_all(pool, subs, progress)
    finally:
        for slot in slots:
            slot.stop()
    scheme = Scheme.from_reference(reference.results)
    scores = [score(g, scheme, limits.timeout) for g in graded]
    seconds = time.monotonic() - start
    extra = {"kata": str(Path(kata.__file__).resolve().parent), "project": str(project.root),
             "seconds": round(seconds, 1), "jobs": len(pool), "checks": len(scheme.checks),
             "points_resting_on_the_process": round(scheme.resting_on_the_process(), 2)}
    write_outputs(out, graded, scores, scheme, limits, protections, extra)
    for warning in scheme.warnings:
        echo(say("warning: {warning}", warning=warning))
    if subs:
        echo(say(texts.GRADED[len(subs) != 1], n=len(subs), seconds=seconds, each=seconds / len(subs),
                 jobs=len(pool), limits=limits.describe()))
        echo(class_table(scores, scheme))
    echo(say("wrote {out}/grades.csv, summary.json, results/ (Gradescope), feedback/, logs/", out=out))
    return scores


def _run_all(pool: list[Job], subs: list[Submission], progress: bool) -> list[Graded]:
    """Each submission on its worker's own job, in order; a failure of the grader's own ends the run."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    jobs, mine, graded = iter(pool), threading.local(), []
    with ThreadPoolExecutor(len(pool), initializer=lambda: setattr(mine, "job", next(jobs))) as workers, tqdm(
            total=len(subs), desc="kata grade", unit=_("submission"), disable=not progress or not subs,
            file=sys.stderr, dynamic_ncols=True, mininterval=0.5) as bar:
        try:
            for g in workers.map(lambda sub: grade_submission(mine.job, sub), subs):
                graded.append(g)
                bar.update(1)
                bar.set_postfix_str(g.name, refresh=False)
        except BaseException:
            workers.shutdown(wait=False, cancel_futures=True)
            raise
    return graded
