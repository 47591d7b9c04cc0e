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
from kata.i18n import N_, _, say

__all__ = ["HELP", "add_parser", "add_target_option", "first_unfinished", "learner_folder", "run"]

HELP = N_("the next exercise to do, how to check it, and a first hint")


def add_target_option(parser) -> None:
    parser.add_argument("--target", default="exercises", metavar="DIR",
                        help=_("the folder of your exercise modules (default: the checkout's exercises/)"))


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
    p = sub.add_parser("next", help=_(HELP),
                       description=_("The first exercise (in curriculum order) whose checks do not all pass yet, "
                                     "from the progress your last check runs recorded; the command that checks it "
                                     "and the first level of its hint."))
    add_target_option(p)
    return p


def run(args) -> int:
    folder = learner_folder(args.target)
    standings = progress.read(folder)
    ex = first_unfinished(standings)
    exercises = curriculum.exercises()
    if ex is None:
        print(say("Every exercise is done ({count}/{count} in {folder}).", count=len(exercises),
                  folder=display(folder)))
        print(say("  `pytest {folder}` checks them all again; `kata train --target {folder} --device sim` trains "
                  "your code on the simulated accelerator.", folder=display(folder)))
        return 0
    file = display(folder / f"{ex.name}.py")
    standing = standings.get(ex.name)
    print(say("Next: {label}: {title}", label=ex.label, title=ex.title))
    if standing is not None and standing.checked:
        edited = N_("  At its last check, {passed} of {total} checks passed; {name}.py was saved since, so check it "
                    "again.")
        template = edited if standing.edited else N_("  At its last check, {passed} of {total} checks passed.")
        print(say(template, passed=standing.passed, total=standing.total, name=ex.name))
    else:
        print(_("  Not checked yet."))
    print(say("  Edit {file}, then check it with `pytest {file}` (or keep `kata watch` running).", file=file))
    print(say("  It teaches: {teaches}", teaches=ex.teaches))
    topics = ex.hint_topics
    if topics:   # the first level of the exercise's first hint (the whole exercise's, when it has one)
        topic = "" if "" in topics else topics[0]
        print("\n" + (say("  Hint for {topic} (the first level):", topic=topic) if topic
                      else _("  Hint (the first level):")))
        print(textwrap.indent(textwrap.dedent(ex.hint_levels(topic)[0]).strip(), "    "))
    print("\n" + say("  More: `kata hint {name}`.", name=ex.name))
    return 0
