"""A whole ``kata grade``: the reference run, every submission, the scores and the reports.

Submissions are graded ``jobs`` at a time, each on its own thread of this
process, each in its own test processes (kata/grading/runner.py). The
reference run goes first in the same pool (or is reused from
``reference.json``); once every submission's processes have ended, the scores
are computed (kata/grading/scoring.py) and the reports written
(kata/grading/reports.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from kata.grading import reference as ref
from kata.grading.intake import GradeError, Submission, name_submissions
from kata.grading.reports import class_table, write_outputs
from kata.grading.results import Graded, finish_results
from kata.grading.runner import Limits, Session, run_submission
from kata.grading.sandbox import Plan, plan
from kata.grading.scoring import Scheme, Score, score
from kata.project import Project, locate

__all__ = ["grade"]


def _last_lines(text: str, n: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def grade(paths: list[str | Path], out: str | Path, limits: Limits | None = None, jobs: int | None = None,
          reference: str | Path | None = None, progress: bool = True, keep: bool = False, echo=print,
          flagged: str = "zero") -> list[Score]:
    """Grade ``paths`` into ``out``; return the scores (in the order given)."""
    limits = limits or Limits()
    jobs = max(1, jobs or os.cpu_count() or 1)
    project = locate()
    subs = name_submissions(paths)
    out = Path(out).expanduser().resolve()
    reference_path = Path(reference).expanduser().resolve() if reference else out / "reference.json"
    work = Path(tempfile.mkdtemp(prefix="kata-grade-"))
    os.chmod(work, 0o711)
    sandbox = plan(limits.isolate, project, work)
    try:
        return _grade(subs, out, reference_path, limits, jobs, project, sandbox, work, progress, echo, flagged)
    finally:
        if sandbox.cgroups is not None:
            sandbox.cgroups.remove()
        if keep:
            echo(f"kata grade: working folders kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _grade(subs: list[Submission], out: Path, reference_path: Path, limits: Limits, jobs: int, project: Project,
           sandbox: Plan, work: Path, progress: bool, echo, flagged: str) -> list[Score]:
    """Set up the session (its zygote), grade, and stop the zygote."""
    digest = ref.assets_digest(project)
    fp = ref.fingerprint(limits, digest, f"{sandbox.files}; {'own user' if sandbox.uids else 'same user'}")
    saved = ref.load_reference(reference_path, fp)
    session = Session(limits, project, sandbox, work, jobs=jobs, out=out)
    protections = sandbox.lines(limits)
    try:
        session.start_spawner()
        if session.spawner.missing or session.spawner.collect_problem:
            echo("kata grade: warning: the test processes start without "
                 + "; ".join([*(f"{m} imported" for m in session.spawner.missing),
                              *([f"the checks collected ({session.spawner.collect_problem})"]
                                if session.spawner.collect_problem else [])])
                 + ": they import or collect it themselves (slower)")
        return _run_all(subs, out, reference_path, limits, jobs, project, session, saved, fp, digest, protections,
                        progress, echo, flagged)
    finally:
        if session.spawner is not None:
            session.spawner.stop()


def _run_all(subs: list[Submission], out: Path, reference_path: Path, limits: Limits, jobs: int, project: Project,
             session: Session, saved: dict | None, fp: dict, digest: str, protections: list[str], progress: bool,
             echo, flagged: str) -> list[Score]:
    sandbox = session.plan
    start = time.monotonic()
    from tqdm import tqdm

    bar = tqdm(total=len(subs), desc="kata grade", unit="submission", disable=not progress or not subs,
               file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    say = (lambda text: bar.write(text, file=sys.stderr)) if progress else (lambda text: None)
    for line in protections:
        echo(f"kata grade: {line}")
    results: dict[str, Graded] = {}
    ref_graded = None
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {}
            if saved is None:
                run = ref.reference_submission(project)
                futures[pool.submit(run_submission, session, run, max(limits.timeout, ref.REFERENCE_TIMEOUT))] = None
            else:
                say(f"reference solutions: reusing {reference_path} ({len(saved['checks'])} checks)")
            for sub in subs:
                futures[pool.submit(run_submission, session, sub)] = sub
            try:
                for future in as_completed(futures):
                    sub = futures[future]
                    graded = future.result()
                    if sub is None:
                        ref_graded = graded
                        _check_reference(graded, say)
                    else:
                        results[sub.name] = graded
                        bar.update(1)
                        bar.set_postfix_str(sub.name, refresh=False)
            except BaseException:
                session.stop()
                for future in futures:
                    future.cancel()
                raise
    finally:
        bar.close()
    if not sandbox.isolated and ref.assets_digest(project) != digest:
        raise GradeError("the checks, the solutions or the kata's own files changed while grading (a submission "
                         "wrote to them?): these grades can't be trusted. Restore the project (git status) and "
                         "grade again.")
    reference_data = saved or ref.record(ref_graded, fp)
    scheme = Scheme.from_reference(reference_data)
    if saved is None and reference_path != out / "reference.json":
        try:
            from kata.files import write_json

            reference_path.parent.mkdir(parents=True, exist_ok=True)
            write_json(reference_path, reference_data, indent=1)
        except OSError as err:
            echo(f"kata grade: could not save the reference run to {reference_path}: {err}")
    graded_list = [results[s.name] for s in subs]
    for g in graded_list:
        finish_results(g, scheme.checks, limits.timeout)
    scores = [score(g, scheme, flagged) for g in graded_list]
    seconds = time.monotonic() - start
    import kata

    extra = {"kata": str(Path(kata.__file__).resolve().parent), "project": str(project.root),
             "seconds": round(seconds, 1), "jobs": jobs, "flagged": flagged, "checks": len(scheme.checks),
             "weighted_checks": sum(1 for w in scheme.weight.values() if w > 0)}
    write_outputs(out, graded_list, scores, scheme, limits, protections, reference_data, extra)
    for warning in scheme.warnings:
        echo(f"warning: {warning}")
    if subs:
        echo(f"kata grade: {len(subs)} submission{'s' if len(subs) != 1 else ''} in {seconds:.1f} s "
             f"({seconds / len(subs):.1f} s each with --jobs {jobs}); {limits.describe()}")
        held = sum(s.flagged for s in scores)
        if held:
            echo(f"kata grade: {held} flagged for review (--flagged {flagged}: "
                 f"{'they score 0' if flagged == 'zero' else 'they keep what their checks earned'}); "
                 f"see their status and logs")
        echo(class_table(scores, scheme))
    echo(f"wrote {out}/grades.csv, summary.json, results/ (Gradescope), feedback/, logs/, reference.json")
    return scores


def _check_reference(graded: Graded, say) -> None:
    passed = sum(r["outcome"] == "passed" for r in graded.results.values())
    say(f"reference solutions: {passed}/{len(graded.collected or [])} checks pass ({graded.seconds:.1f} s)")
    if graded.flags:
        say("warning: the vetting flags the reference solutions: " + "; ".join(graded.flags))
    if graded.collected is None or graded.problems:
        raise GradeError("the reference solutions could not be checked here: "
                         + "; ".join(graded.problems or ["no checks were collected"])
                         + "\n" + _last_lines(graded.log, 15))
