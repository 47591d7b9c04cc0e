"""``kata list``: the exercises, in order, with where the learner's folder stands on each.

The progress comes from the file the check runs record in the folder
(kata/progress.py), so nothing runs and it answers at once. Each row is the one
the run that recorded it ended its table with (kata/harness/outcomes.py), and
says when the exercise's module was saved after that run.
"""

from __future__ import annotations

from pathlib import Path

from kata import curriculum, progress
from kata.commands.next import add_target_option, first_unfinished, learner_folder
from kata.curriculum import Exercise
from kata.harness import outcomes
from kata.harness.tracebacks import display
from kata.project import ProjectError

__all__ = ["HELP", "add_parser", "notes", "row", "run", "table", "table_row"]

HELP = "the exercises, in order, and your progress on each"


def add_parser(sub):
    p = sub.add_parser("list", help=HELP,
                       description="The exercises in the order to do them, each with the checks it passed at "
                                   "its last check run, whether it is done, and whether you viewed its solution.")
    add_target_option(p)
    return p


def table_row(ex: Exercise, standing: progress.Standing | None) -> outcomes.Row:
    """The row the run that recorded ``standing`` ended its table with (kata/harness/outcomes.py)."""
    if standing is None or not standing.checked:
        return outcomes.Row(ex)
    return outcomes.Row(ex, passed=standing.passed, failed=standing.total - standing.passed - standing.todo,
                        todo=standing.todo, skipped=standing.skipped, causes=standing.causes)


def notes(ex: Exercise, standing: progress.Standing | None) -> list[str]:
    """What the table's row adds to the run's: a solution viewed, an edit since the run."""
    found = ["solution viewed"] if standing is not None and standing.solution_viewed else []
    if standing is not None and standing.edited:
        found.append(f"{ex.name}.py changed since")
    return found


def row(ex: Exercise, standing: progress.Standing | None) -> str:
    """One exercise as the table at the end of a check run shows it:
    ``  2. data        14/23  passed   9 failing``."""
    said = notes(ex, standing)
    return outcomes.render_row(table_row(ex, standing), f"   ({'; '.join(said)})" if said else "")


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
        print(f"  {ex.number}. {ex.name:<{curriculum.name_width()}} {ex.title}")
        if folder is None:
            continue
        r = table_row(ex, standing)
        if not r.total:
            status = r.status
        elif r.done:
            status = f"done: {r.passed}/{r.counted} checks pass"
        else:
            status = f"{r.passed}/{r.counted} checks pass, {r.status}"
        status = "; ".join([status, *notes(ex, standing)])
        print(f"  {'':>{len(str(ex.number))}}  {'':<{curriculum.name_width()}} {status}")
    if folder is not None:
        ex = first_unfinished(standings)
        print(f"\n  Next: {ex.label} (`kata next`)" if ex else "\n  Every exercise is done.")
        print(f"\n`pytest {display(folder)}` checks them all, `pytest {display(folder)}/NAME.py` one; "
              "`kata watch` rechecks the next one at every save; `kata hint NAME` gives a hint.")
    else:
        print("\n`pytest exercises` checks them all; `kata hint NAME` gives a hint.")
    return 0
