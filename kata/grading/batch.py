"""A whole ``kata grade``: the run's seed and audit data, the sandboxes, the reference, every submission.

Submissions are graded ``jobs`` at a time, each job with its two servers
(kata/grading/slots.py): the audit's records, then the checks. The reference
solutions' check run goes first on the first job (or is reused from
``reference.json`` while nothing it depends on changed); their records are made
here, with the run's fresh seed and each hand-in's own (kata/audit/reference.py),
each hand-in's verdicts as soon as its processes have ended. Then the scores are
computed and the reports written. Whatever one hand-in's bytes do to the grader
becomes that hand-in's row: every other row is written.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import sys
import tempfile
import time
from pathlib import Path

import kata
from kata import audit, curriculum
from kata.audit import texts
from kata.audit.reference import Reference, fingerprint, new_seed, saved_run
from kata.grading import sandbox
from kata.grading.intake import GradeError, Submission, name_submissions
from kata.grading.reports import class_table, write_outputs
from kata.grading.runner import Graded, Job, grade_submission
from kata.grading.sandbox import Limits, Roots
from kata.grading.scoring import Scheme, Score, finish, score
from kata.grading.slots import Slot
from kata.i18n import _, language, say
from kata.project import Project, locate

__all__ = ["grade"]

REFERENCE_TIMEOUT = 900.0


def _pytest_args(project: Project, limits: Limits) -> tuple[list[str], list[str]]:
    """(pytest's options for the checks, the checks with the options to collect them in a server)."""
    checks = [str(project.checks_of(n)) for n in curriculum.names() if project.checks_of(n).is_file()]
    common = ["--rootdir", str(project.root), "-c", str(project.root / "pyproject.toml"),
              "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    args = [*common, "-p", "no:cacheprovider", "--timeout", f"{limits.test_timeout:g}",
            "--timeout-method", "signal", "--basetemp", "{work}/tmp/pytest", "-q", "--tb=short", "--color=no"]
    return args + (["--slow"] if limits.slow else []), [*checks, *common]


def grade(paths: list[str | Path], out: str | Path, limits: Limits | None = None, jobs: int | None = None,
          reference: str | Path | None = None, progress: bool = True, keep: bool = False, echo=print) -> list[Score]:
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
        return _grade(subs, out, Path(reference) if reference else out / "reference.json", limits, jobs, project,
                      work, progress, echo)
    finally:
        if keep:
            echo(say("kata grade: working folders kept in {work}", work=work))
        else:
            shutil.rmtree(work, ignore_errors=True)


def _grade(subs, out: Path, reference_path: Path, limits: Limits, jobs: int, project: Project, work: Path,
           progress: bool, echo) -> list[Score]:
    start = time.monotonic()
    ref = Reference(project, new_seed(), work)
    os.chmod(work / "audit-data", 0o755)
    plan = sandbox.plan(limits.isolate, Roots(project, ref.data))
    if plan.kind == "refused":
        raise GradeError("; ".join(plan.notes))
    protections = plan.lines(limits)
    for line in protections:
        echo(f"kata grade: {line}")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    args, collect = _pytest_args(project, limits)
    roots = Roots(project, ref.data)
    pool = [Job(Slot(plan, "records", roots, limits, i, work, threads),
                Slot(plan, "checks", roots, limits, i, work, threads, collect), limits, ref.seed, args)
            for i in range(min(jobs, max(1, len(subs))))]
    try:
        slots = [slot for job in pool for slot in (job.checks, job.records)]
        for slot in slots:   # from this thread, which outlives them: they import and collect while ref.make() runs
            slot.start(wait=False)
        ref.make()
        for slot in slots:
            slot.ready()
        fp = fingerprint(project, slow=limits.slow, test_timeout=limits.test_timeout, memory_mb=limits.memory_mb,
                         sandbox=plan.kind, lang=language())
        saved = saved_run(reference_path, fp)
        if saved is None:
            reference_run = grade_submission(pool[0], Submission("reference", project.solutions),
                                             REFERENCE_TIMEOUT, reference=True)
            saved = {"fingerprint": fp, "checks": list(reference_run.results), "results": reference_run.results,
                     "seconds": round(reference_run.seconds, 1), "created": time.strftime("%Y-%m-%d %H:%M:%S")}
            if not reference_run.results or not any(r["outcome"] == "passed" for r in reference_run.results.values()):
                raise GradeError(_("the reference solutions could not be checked here:") + "\n"
                                 + "\n".join(reference_run.log)[-3000:])
        else:
            echo(say("kata grade: reference solutions: reusing {path} ({n} checks)", path=reference_path,
                     n=len(saved["checks"])))
        for job in pool:
            job.order = list(saved["checks"])
        graded = _run_all(pool, subs, progress, ref)
    finally:
        for job in pool:
            job.records.stop()
            job.checks.stop()
    unavailable = [f for f, v in ref.verdicts({}).items() if (v or "").startswith("unavailable")]
    scheme = Scheme.from_reference(saved, unavailable)
    scheme.warnings += [say(texts.NO_RECORD, record=f) for f in ref.failures()]
    scores = [_scored(g, verdicts, scheme, limits) for g, verdicts in graded]
    graded = [g for g, _verdicts in graded]
    seconds = time.monotonic() - start
    extra = {"kata": str(Path(kata.__file__).resolve().parent), "project": str(project.root),
             "seconds": round(seconds, 1), "jobs": len(pool), "seed": ref.seed, "checks": len(scheme.checks),
             "points_resting_on_the_process": round(scheme.resting_on_the_process(), 2)}
    write_outputs(out, graded, scores, scheme, limits, protections, saved, extra)
    if reference_path != out / "reference.json":
        reference_path.parent.mkdir(parents=True, exist_ok=True)
        reference_path.write_text(json.dumps(saved, indent=1))
    for warning in scheme.warnings:
        echo(say("warning: {warning}", warning=warning))
    if subs:
        echo(say(texts.GRADED[len(subs) != 1], n=len(subs), seconds=seconds, each=seconds / len(subs),
                 jobs=len(pool), limits=limits.describe()))
        echo(class_table(scores, scheme))
    echo(say("wrote {out}/grades.csv, summary.json, results/ (Gradescope), feedback/, logs/, reference.json", out=out))
    return scores


def _scored(graded: Graded, verdicts: dict, scheme: Scheme, limits: Limits) -> Score:
    """The hand-in's score; a row that says why when its bytes made scoring fail (the others are scored)."""
    try:
        finish(graded, scheme.checks, limits.timeout)
        return score(graded, scheme, verdicts)
    except Exception as exc:  # noqa: BLE001 - one hand-in's data never ends the class's run
        why = say("the grader could not score it: {kind}: {error}", kind=type(exc).__name__, error=str(exc)[:200])
        graded.problems.append(why)
        names = curriculum.names()
        return Score(graded.name, dict.fromkeys(names, 0.0), dict.fromkeys(names, 0), dict.fromkeys(names, 0), 0.0,
                     why, {})


def _judged(graded: Graded, ref: Reference) -> dict:
    """The verdicts on a hand-in's records (made at once: the reference's records for its seed are let go)."""
    if not graded.found:
        return {}
    seed = graded.seed
    try:
        return ref.verdicts(graded.records, seed)
    except Exception as exc:  # noqa: BLE001 - the judge never raises on a record: this is the grader's own failure
        why = say("the grader could not read its records: {kind}: {error}", kind=type(exc).__name__,
                  error=str(exc)[:200])
        graded.problems.append(why)   # said in the row; its checks rest on the sandbox's report, and nobody is accused
        return {f: "unavailable: " + why for ex in curriculum.names() for f in audit.facets(ex)}
    finally:
        if seed is not None:
            ref.forget(seed)


def _run_all(pool: list[Job], subs: list[Submission], progress: bool, ref: Reference) -> list[tuple[Graded, dict]]:
    """Each submission on the first free job, in order, with a seed of its own; its verdicts made as soon as its
    processes have ended (while the job takes the next). A grader's own failure ends the run."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    free: queue.Queue = queue.Queue()
    for job in pool:
        free.put(job)

    def one(sub: Submission) -> tuple[Graded, dict]:
        job = free.get()
        try:
            graded = grade_submission(job, sub, seed=new_seed())
        finally:
            free.put(job)
        return graded, _judged(graded, ref)

    graded = []
    with ThreadPoolExecutor(2 * len(pool)) as workers, tqdm(
            total=len(subs), desc="kata grade", unit=_("submission"), disable=not progress or not subs,
            file=sys.stderr, dynamic_ncols=True, mininterval=0.5) as bar:
        try:
            for g, verdicts in workers.map(one, subs):
                graded.append((g, verdicts))
                bar.update(1)
                bar.set_postfix_str(g.name, refresh=False)
        except BaseException:
            workers.shutdown(wait=False, cancel_futures=True)
            raise
    return graded
