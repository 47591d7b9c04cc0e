"""``kata solution NAME [--give-up]``: the reference solution, once yours passes (like rustlings).

The reference solution of an exercise is shown once the learner's own
``exercises/NAME.py`` passes all its checks. Before that the command says how
many checks are left and offers ``--give-up``, which shows it anyway and records
that it was viewed (``kata.progress``; ``kata list`` shows it).

Whether the checks pass is never guessed: the record that every run of
``pytest exercises/...`` leaves in ``exercises/.kata-progress.json`` is used only
when no ``.py`` file in ``exercises/`` was saved after that run began
(kata/progress.py; a viewed solution makes it stale too); otherwise the checks run now, as ``pytest exercises/NAME.py``
would run them, and their fresh record is read. A student release (no
``solutions/``) has no solutions to show, and says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from kata import curriculum, progress
from kata.i18n import N_, _, say
from kata.project import Project, locate

__all__ = ["HELP", "add_parser", "recorded", "Result", "run", "run_checks"]

HELP = N_("the reference solution of an exercise, once yours passes its checks (or --give-up)")

RUN_TIMEOUT = 900  # seconds for one exercise's checks; they take well under a minute


@dataclass(frozen=True)
class Result:
    """Where the learner's exercise stands, and how we know."""

    passed: int
    total: int
    how: str  # "checked just now" / "as your run of its checks at 13:34 recorded"

    @property
    def done(self) -> bool:
        return self.total > 0 and self.passed == self.total


def add_parser(sub):
    p = sub.add_parser(
        "solution", help=_(HELP),
        description=_("Show the reference solution of an exercise once your exercises/NAME.py passes all its "
                      "checks (they run now unless a run since your last edit recorded the result). "
                      "Before that, it says how many checks are left."))
    p.add_argument("name", help=_("an exercise (`kata list` shows them)"))
    p.add_argument("--give-up", action="store_true",
                   help=_("show it now, even though your checks don't pass yet (recorded: `kata list` shows "
                          "that you viewed it)"))
    return p


def recorded(ex: curriculum.Exercise, project: Project) -> Result | None:
    """The recorded standing of ``ex``, if it is sure to describe the files as they are now."""
    standing = progress.read(project.exercises).get(ex.name)
    if standing is None or not standing.checked or standing.solution_viewed:
        return None  # a viewed solution's mark moved `updated` without a run: don't trust it
    # One module may import another: any save after the run began makes the record stale.
    if progress.edited_since(standing, project.exercises.glob("*.py")):
        return None
    return Result(standing.passed, standing.total,
                  say("as recorded by your run of its checks at {time}", time=standing.updated.replace("T", " ")))


def run_checks(ex: curriculum.Exercise, project: Project) -> Result:
    """Run the exercise's checks on the learner's module now; their run records the result."""
    stub = ex.stub(project).relative_to(project.root)
    print(say("Running the checks of {stub} (`pytest {stub}`) ...", stub=stub.as_posix()), flush=True)
    before = progress.read(project.exercises).get(ex.name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")}
    env["KATA_HOME"] = str(project.root)  # the child checks this very checkout
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", stub.as_posix(), "-q", "-p", "no:cacheprovider"],
                              cwd=project.root, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(say("the checks of {stub} did not finish in {seconds} s; run `pytest {stub}` to see "
                               "where they hang", stub=stub.as_posix(), seconds=RUN_TIMEOUT)) from None
    after = progress.read(project.exercises).get(ex.name)
    if after is None or not after.checked or after == before:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(say("could not tell whether {stub} passes: its checks ran (exit status {code}) but "
                               "recorded no result. Run `pytest {stub}` yourself; the end of their output:\n{tail}",
                               stub=stub.as_posix(), code=done.returncode, tail=tail))
    return Result(after.passed, after.total, _("checked just now"))


def _show(ex: curriculum.Exercise, project: Project) -> None:
    path = ex.solution(project)
    rule = "-" * 79
    print(say("The reference solution, {path}:", path=path.relative_to(project.root).as_posix()) + f"\n{rule}")
    print(path.read_text().rstrip("\n"))
    print(rule)


def run(args) -> int:
    ex = curriculum.get(args.name)
    project = locate()
    if not project.has_solutions:
        print(say("kata solution: this copy of the kata has no reference solutions (it is a student release, "
                  "without solutions/). Your teacher has them. Meanwhile `pytest exercises/{name}.py` says "
                  "what each failing check expects, and `kata hint {name}` gives hints.", name=ex.name),
              file=sys.stderr)
        return 1
    if not ex.solution(project).is_file():
        print(say("kata solution: {path} is missing from this copy of the kata.", path=ex.solution(project)),
              file=sys.stderr)
        return 1

    standing = progress.read(project.exercises).get(ex.name)
    if standing is not None and standing.solution_viewed and not args.give_up:
        print(say("{label}: you viewed its solution before (`kata solution {name} --give-up`); here it is "
                  "again. Your own version still counts: make it pass its checks.", label=ex.label, name=ex.name)
              + "\n")
        _show(ex, project)
        return 0

    result = recorded(ex, project)
    if result is None and not args.give_up:
        result = run_checks(ex, project)
    stub = ex.stub(project).relative_to(project.root).as_posix()

    if result is not None and result.done:
        print(say("{label}: your {stub} passes all {total} of its checks ({how}). Well done! Compare your code "
                  "with the reference:", label=ex.label, stub=stub, total=result.total, how=result.how) + "\n")
        _show(ex, project)
        return 0

    if args.give_up:
        left = (say("{left} of its {total} checks still fail ({how})", left=result.total - result.passed,
                    total=result.total, how=result.how)
                if result is not None else _("its checks have not run on it as it is now"))
        progress.mark_solution_viewed(project.exercises, ex.name)
        print(say("{label}: giving up for now: {left}. Recorded that you viewed the solution (`kata list` "
                  "shows it). Read it, close it, and write your own {stub} from what you learnt.", label=ex.label,
                  left=left, stub=stub) + "\n")
        _show(ex, project)
        return 0

    left = result.total - result.passed
    print(say("{label}: {left} of the {total} checks of your {stub} still fail ({how}).\n"
              "The reference solution is shown once they all pass. Until then:\n"
              "  pytest {stub}    says what each failing check expects\n"
              "  kata hint {name}    gives a hint, `--more` a more specific one\n"
              "Stuck for good? This shows it now, and `kata list` will show that you viewed it:\n"
              "  kata solution {name} --give-up", label=ex.label, left=left, total=result.total, stub=stub,
              how=result.how, name=ex.name))
    return 1
