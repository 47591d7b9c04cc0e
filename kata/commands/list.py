"""``kata list``: the exercises, in order, with where the learner's folder stands on each.

The progress comes from the file the check runs record in the folder
(kata/progress.py), so nothing runs and it answers at once.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from kata import curriculum, progress
from kata.commands.next import add_target_option, first_unfinished, learner_folder
from kata.curriculum import Exercise
from kata.harness.tracebacks import display
from kata.project import ProjectError

__all__ = ["HELP", "add_parser", "changed_since", "row", "run", "table"]

HELP = "the exercises, in order, and your progress on each"


def add_parser(sub):
    p = sub.add_parser("list", help=HELP,
                       description="The exercises in the order to do them, each with the checks it passed at "
                                   "its last check run, whether it is done, and whether you viewed its solution.")
    add_target_option(p)
    return p


def changed_since(file: Path, standing: progress.Standing) -> bool:
    """Whether ``file`` was saved after its exercise's progress was recorded."""
    try:
        recorded = datetime.fromisoformat(standing.updated).timestamp()
        return os.stat(file).st_mtime > recorded + 1
    except (ValueError, OSError):
        return False


def row(ex: Exercise, standing: progress.Standing | None) -> str:
    """One exercise as the table at the end of a check run shows it:
    ``  2. data       14/23  passed   9 failing``."""
    if standing is None or not standing.checked:
        line = f"  {ex.number}. {ex.name:<9}   -/-    not checked yet"
    else:
        status = "done" if standing.done else f"{standing.total - standing.passed} failing"
        line = f"  {ex.number}. {ex.name:<9} {standing.passed:>3}/{standing.total:<3} passed   {status}"
    return line + ("   (solution viewed)" if standing is not None and standing.solution_viewed else "")


def table(folder: Path, rows: dict[str, str] | None = None) -> list[str]:
    """Every exercise's row, in curriculum order, from the progress recorded in ``folder``
    (``rows`` gives some exercises' rows instead)."""
    standings, rows = progress.read(folder), rows or {}
    return [rows.get(ex.name) or row(ex, standings.get(ex.name)) for ex in curriculum.exercises()]


def run(args) -> int:
    try:
        folder = learner_folder(args.target)
    except ProjectError:   # no checkout: the curriculum alone
        folder = None
    standings = progress.read(folder) if folder is not None else {}
    where = f" and where {display(folder)} stands (from each exercise's last check run)" if folder else ""
    print(f"device-kata: the exercises, in order{where}\n")
    for ex in curriculum.exercises():
        standing = standings.get(ex.name)
        print(f"  {ex.number}. {ex.name:<9} {ex.title}")
        if folder is None:
            continue
        if standing is None or not standing.checked:
            status = "not checked yet"
        elif standing.done:
            status = f"done: {standing.passed}/{standing.total} checks pass"
        else:
            status = (f"{standing.passed}/{standing.total} checks pass, "
                      f"{standing.total - standing.passed} failing")
        if standing is not None and standing.solution_viewed:
            status += "; solution viewed"
        if standing is not None and standing.checked and changed_since(folder / f"{ex.name}.py", standing):
            status += f"; {ex.name}.py changed since"
        print(f"  {'':>{len(str(ex.number))}}  {'':<9} {status}")
    if folder is not None:
        ex = first_unfinished(standings)
        print(f"\n  Next: {ex.label} (`kata next`)" if ex else "\n  Every exercise is done.")
        print(f"\n`pytest {display(folder)}` checks them all, `pytest {display(folder)}/NAME.py` one; "
              "`kata watch` rechecks the next one at every save; `kata hint NAME` gives a hint.")
    else:
        print("\n`pytest exercises` checks them all; `kata hint NAME` gives a hint.")
    return 0
