"""``kata next``: the next unfinished exercise, how to check it, and its first hint.

"Unfinished" is read from the progress the checks record in the learner's folder
(kata/progress.py): an exercise is done when its last full check passed every
check and its module was not saved since. Nothing runs, so it answers at once.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from kata import curriculum, progress
from kata.curriculum import Exercise
from kata.harness.target import find_target, target_path
from kata.harness.tracebacks import display

__all__ = ["HELP", "add_parser", "add_target_option", "first_unfinished", "learner_folder", "run"]

HELP = "the next exercise to do, how to check it, and a first hint"


def add_target_option(parser) -> None:
    parser.add_argument("--target", default="exercises", metavar="DIR",
                        help="the folder of your exercise modules (default: the checkout's exercises/)")


def learner_folder(target: str = "exercises") -> Path:
    """The folder of exercise modules ``--target`` names (``exercises`` = the checkout's)."""
    path = target_path(target).expanduser().resolve()
    return find_target(path) or path


def first_unfinished(standings: dict[str, progress.Standing]) -> Exercise | None:
    """The first exercise, in curriculum order, not known to be done: not recorded as done, or
    its module saved since (None: all done)."""
    return next((ex for ex in curriculum.exercises()
                 if not standings.get(ex.name, progress.Standing()).still_done), None)


def add_parser(sub):
    p = sub.add_parser("next", help=HELP,
                       description="The first exercise (in curriculum order) whose checks do not all pass yet, "
                                   "from the progress your last check runs recorded; the command that checks it "
                                   "and the first level of its hint.")
    add_target_option(p)
    return p


def run(args) -> int:
    folder = learner_folder(args.target)
    standings = progress.read(folder)
    ex = first_unfinished(standings)
    exercises = curriculum.exercises()
    if ex is None:
        print(f"Every exercise is done ({len(exercises)}/{len(exercises)} in {display(folder)}).")
        print(f"  `pytest {display(folder)}` checks them all again; `kata train --target {display(folder)} "
              "--device sim` trains your code on the simulated accelerator.")
        return 0
    file = display(folder / f"{ex.name}.py")
    standing = standings.get(ex.name)
    print(f"Next: {ex.label}: {ex.title}")
    if standing is not None and standing.checked:
        since = f"; {ex.name}.py was saved since, so check it again" if standing.edited else ""
        print(f"  At its last check, {standing.passed} of {standing.total} checks passed{since}.")
    else:
        print("  Not checked yet.")
    print(f"  Edit {file}, then check it with `pytest {file}` (or keep `kata watch` running).")
    print(f"  It teaches: {ex.teaches}")
    topics = ex.hint_topics
    if topics:   # the first level of the exercise's first hint (the whole exercise's, when it has one)
        topic = "" if "" in topics else topics[0]
        print(f"\n  Hint{f' for {topic}' if topic else ''} (the first level):")
        print(textwrap.indent(textwrap.dedent(ex.hint_levels(topic)[0]).strip(), "    "))
    print(f"\n  More: `kata hint {ex.name}`.")
    return 0
