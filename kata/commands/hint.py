"""``kata hint NAME [FUNCTION] [--more]``: the curriculum's hints, one level at a time.

Each hint topic (a function of the exercise, or the whole exercise) has levels
from general to specific (``kata/curriculum.toml``): 1. the concept (a question
to ask yourself, what to look up), 2. the PyTorch APIs involved, with links to
their documentation, 3. the shape of the code. ``kata hint NAME`` shows level 1
of every topic of the exercise, ``kata hint NAME FUNCTION`` only that
function's; each ``--more`` goes one level further (``--level N`` jumps there).
Every answer ends with the command for the next level.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from kata import curriculum
from kata.i18n import N_, _, say

__all__ = ["HELP", "add_parser", "run"]

HELP = N_("a hint for an exercise or one of its functions; --more for the next level")


def _level(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(say("a level is a whole number (1, 2, 3), not {text!r}", text=text)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(say("levels count from 1, got {value}", value=value))
    return value


def add_parser(sub):
    p = sub.add_parser(
        "hint", help=_(HELP),
        description=_("A hint for one exercise, from general to specific: level 1 is the concept (a question "
                      "to ask yourself, what to look up), level 2 the PyTorch APIs involved (with links to their "
                      "documentation), level 3 the shape of the code."),
        epilog=_("examples: `kata hint devices` (level 1 of every topic), `kata hint devices to_device` (one "
                 "function), `kata hint devices to_device --more` (level 2), `--more --more` or `--level 3` "
                 "(level 3)."))
    p.add_argument("name", help=_("an exercise (`kata list` shows them)"))
    p.add_argument("function", nargs="?", help=_("one function of the exercise: only its hints"))
    level = p.add_mutually_exclusive_group()
    level.add_argument("-m", "--more", action="count", default=0,
                       help=_("one level further than the first; repeat it for more (--more --more)"))
    level.add_argument("-l", "--level", type=_level, help=_("show level N (1: the concept, 2: the APIs, "
                                                            "3: the shape of the code)"))
    return p


def _level_name(level: int) -> str:
    return curriculum.hint_level_name(level)


def _command(ex: curriculum.Exercise, function: str | None, level: int) -> str:
    """The command that shows ``level``."""
    return " ".join(["kata hint", ex.name, *([function] if function else []), *["--more"] * (level - 1)])


def run(args) -> int:
    ex = curriculum.get(args.name)
    topics = ex.hint_topics
    function = args.function
    if function is not None:
        topic = "" if function == "*" else function.split(".")[0]  # LivePlot.update -> LivePlot
        if topic not in topics:
            named = [t for t in topics if t]
            print(say("kata hint: {name} has no hints for {function!r}; its hints are for: {functions} (or leave "
                      "the function out for all of them)", name=ex.name, function=function,
                      functions=", ".join(named)) if named else
                  say("kata hint: {name} has no hints for {function!r}; it has hints for the whole exercise only: "
                      "`kata hint {name}`", name=ex.name, function=function),
                  file=sys.stderr)
            return 2
        topics = (topic,)
        function = topic or None

    wanted = args.level if args.level is not None else 1 + args.more
    depth = max(len(ex.hint_levels(topic)) for topic in topics)
    level = min(wanted, depth)

    print(f"{ex.label}: {ex.title}")
    if len(topics) == 1 and topics[0]:
        heading = say("Hint {level} of {depth}: {name}, for `{topic}`", level=level, depth=depth,
                      name=_level_name(level), topic=topics[0])
    elif len(topics) > 1:
        heading = say("Hint {level} of {depth}: {name}, for the whole exercise and each of its functions",
                      level=level, depth=depth, name=_level_name(level))
    else:
        heading = say("Hint {level} of {depth}: {name}", level=level, depth=depth, name=_level_name(level))
    print(heading)
    if wanted > depth:
        print(_("(there is only 1 level; this is the last one)") if depth == 1 else
              say("(there are only {depth} levels; this is the last one)", depth=depth))
    for topic in topics:
        levels = ex.hint_levels(topic)
        text = levels[min(level, len(levels)) - 1]
        print()
        if len(topics) > 1:
            print(f"  {topic}:" if topic else "  " + _("The whole exercise") + ":")
            print(textwrap.indent(text, "    "))
        else:
            print(textwrap.indent(text, "  "))
    print()
    if level < depth:
        print(say("Next, level {level} ({name}):\n  {command}", level=level + 1, name=_level_name(level + 1),
                  command=_command(ex, function, level + 1)))
    else:
        print(say("That is the last level. What each failing check expects, in its message:\n"
                  "  pytest exercises/{name}.py\n"
                  "The reference solution, once they all pass:\n  kata solution {name}", name=ex.name))
    named = [t for t in ex.hint_topics if t]
    if function is None and len(named) > 1:
        print(say("One function at a time:\n  kata hint {name} FUNCTION    ({functions})", name=ex.name,
                  functions=", ".join(named)))
    return 0
