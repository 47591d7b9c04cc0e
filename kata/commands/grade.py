"""``kata grade SUBMISSION... --out DIR``: grade a class's submissions, safely, in bulk (kata/grading/)."""

from __future__ import annotations

import sys
from pathlib import Path

from kata.commands._args import add_grading_options, positive
from kata.i18n import N_, _, say

__all__ = ["HELP", "add_parser", "run"]

HELP = N_("grade a class's submissions (folders or zips), safely, in bulk")


def add_parser(sub):
    p = sub.add_parser("grade", help=_(HELP),
                       description=_("Grade each submission (a folder holding the exercises' modules, directly or "
                                   "in exercises/, or a .zip of one): its functions answer the exercises' records in "
                                   "a sandbox, the pristine checks read those answers in the grader's own process, "
                                   "and it writes grades.csv, summary.json, results/NAME.json (Gradescope's format), "
                                   "feedback/NAME.md and logs/NAME.log into --out. It starts by saying which "
                                   "protections are in force."))
    p.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                   help=_("folders or .zip files (none: only check the reference solutions)"))
    p.add_argument("--out", required=True, metavar="DIR", help=_("folder for the results (its files are replaced)"))
    p.add_argument("--jobs", type=positive, default=None, metavar="N",
                   help=_("submissions graded at once (default: one per CPU core)"))
    add_grading_options(p)
    p.add_argument("--gradescope-results", metavar="FILE",
                   help=_("also write the (one) submission's results to FILE (what run_autograder uses)"))
    p.add_argument("--no-sandbox", action="store_true",
                   help=_("no sandbox: the graded code runs as you, with your files and the network (trusted code "
                          "only); the limits still apply"))
    p.add_argument("--keep", action="store_true", help=_("keep the working folders (for debugging)"))
    p.add_argument("--quiet", action="store_true", help=_("no progress bar"))
    return p


def _fallback_results(message: str) -> dict:
    """A results.json that says the autograder itself failed (so Gradescope shows why)."""
    return {"score": 0.0, "output": say("The autograder could not grade this submission: {message}\n"
                                        "Tell your teacher; resubmitting will not help until it is fixed.",
                                        message=message),
            "tests": []}


def run(args) -> int:
    from kata.files import atomic_write, write_json
    from kata.grading.batch import grade
    from kata.grading.intake import GradeError, name_submissions
    from kata.grading.sandbox import Limits

    limits = Limits(timeout=args.timeout, test_timeout=args.test_timeout, memory_mb=args.memory,
                    processes=args.processes, disk_mb=args.disk, slow=args.slow, isolate=not args.no_sandbox)
    results_json = Path(args.gradescope_results) if args.gradescope_results else None
    if results_json and len(args.submissions) != 1:
        print(_("kata grade: --gradescope-results takes exactly one submission"), file=sys.stderr)
        return 2
    try:
        grade(args.submissions, args.out, limits, jobs=args.jobs, progress=not args.quiet, keep=args.keep,
              echo=(lambda *a: None) if args.quiet and results_json else print)
    except GradeError as err:
        print(f"kata grade: {err}", file=sys.stderr)
        if results_json:
            results_json.parent.mkdir(parents=True, exist_ok=True)
            write_json(results_json, _fallback_results(str(err)))
        return 1
    except BaseException as err:
        if results_json and not isinstance(err, KeyboardInterrupt):
            results_json.parent.mkdir(parents=True, exist_ok=True)
            write_json(results_json, _fallback_results(f"{type(err).__name__}: {err}"))
        raise
    if results_json:
        name = name_submissions(args.submissions)[0].name
        results_json.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(results_json, (Path(args.out) / "results" / f"{name}.json").read_bytes())
    return 0


