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
from kata.i18n import N_, _, say
from kata.project import ProjectError

__all__ = ["HELP", "add_parser", "notes", "row", "run", "table", "table_row"]

HELP = N_("the exercises, in order, and your progress on each")


def add_parser(sub):
    p = sub.add_parser("list", help=_(HELP),
                       description=_("The exercises in the order to do them, each with the checks it passed at "
                                     "its last check run, whether it is done, and whether you viewed its solution."))
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
    found = [_("solution viewed")] if standing is not None and standing.solution_viewed else []
    if standing is not None and standing.edited:
        found.append(say("{name}.py changed since", name=ex.name))
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
    if folder:
        print(say("device-kata: the exercises, in order and where {folder} stands (from each exercise's last check "
                  "run)", folder=display(folder)) + "\n")
    else:
        print(_("device-kata: the exercises, in order") + "\n")
    for ex in curriculum.exercises():
        standing = standings.get(ex.name)
        print(f"  {ex.number}. {ex.name:<{curriculum.name_width()}} {ex.title}")
        if folder is None:
            continue
        r = table_row(ex, standing)
        if not r.total:
            status = r.status
        elif r.done:
            status = say("done: {passed}/{counted} checks pass", passed=r.passed, counted=r.counted)
        else:
            status = say("{passed}/{counted} checks pass, {status}", passed=r.passed, counted=r.counted,
                         status=r.status)
        status = "; ".join([status, *notes(ex, standing)])
        print(f"  {'':>{len(str(ex.number))}}  {'':<{curriculum.name_width()}} {status}")
    if folder is not None:
        ex = first_unfinished(standings)
        print("\n" + (say("  Next: {label} (`kata next`)", label=ex.label) if ex else _("  Every exercise is done.")))
        print("\n" + say("`pytest {folder}` checks them all, `pytest {folder}/NAME.py` one; `kata watch` rechecks "
                         "the next one at every save; `kata hint NAME` gives a hint.", folder=display(folder)))
    else:
        print("\n" + _("`pytest exercises` checks them all; `kata hint NAME` gives a hint."))
    return 0
