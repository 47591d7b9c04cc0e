"""The ``kata`` command: one module per subcommand, each with the same shape.

A subcommand is a module ``kata/commands/NAME.py`` with

    HELP = "one line for `kata --help`"
    def add_parser(sub) -> argparse.ArgumentParser   # its options; sub.add_parser(NAME, ...)
    def run(args) -> int                             # the exit status

and its name in :data:`COMMANDS`. Modules import what is heavy (torch) inside
``run``, so ``kata --help`` and ``kata list`` answer at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kata.commands._args import HelpFormatter, localize
from kata.curriculum import CurriculumError, UnknownExercise
from kata.i18n import LANGUAGES, _, say, set_language
from kata.project import ProjectError

__all__ = ["COMMANDS", "build_parser", "main"]

# In the order `kata --help` lists them: the learner's loop first, then the teacher's.
COMMANDS = ("list", "next", "watch", "hint", "solution", "reset", "lang",
            "data", "train", "run", "bench", "doctor", "release", "grade", "gradescope")


def _module(name: str):
    return importlib.import_module(f"kata.commands.{name}")


def _language(text: str) -> str:
    if text not in LANGUAGES:
        raise argparse.ArgumentTypeError(say("{text!r} is not one of {languages}", text=text,
                                             languages=", ".join(LANGUAGES)))
    return text


def build_parser() -> argparse.ArgumentParser:
    # --lang, before or after the command: `kata --lang ko hint data` or `kata hint data --lang ko`
    lang = argparse.ArgumentParser(add_help=False)
    lang.add_argument("--lang", type=_language, default=argparse.SUPPRESS, metavar="LANG",
                      help=_("en or ko (default: $KATA_LANG, else `kata lang`'s choice, else the locale, else en)"))
    parser = localize(argparse.ArgumentParser(prog="kata", description=_("device-kata: learn where a tensor lives."),
                                              parents=[lang], formatter_class=HelpFormatter))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    real_add_parser = sub.add_parser
    sub.add_parser = lambda *a, **kw: localize(real_add_parser(
        *a, parents=[lang, *kw.pop("parents", [])], formatter_class=kw.pop("formatter_class", HelpFormatter), **kw))
    for name in COMMANDS:
        module = _module(name)
        module.add_parser(sub).set_defaults(run=module.run)
    return parser


def _given_language(argv: list[str]) -> str | None:
    """The ``--lang`` of a command line, read before the parser is built so that its help is in that language."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--lang" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--lang="):
            value = arg.partition("=")[2]
        else:
            continue
        if value in LANGUAGES:
            return value
    return None


def main(argv: list[str] | None = None) -> int:
    given = _given_language(sys.argv[1:] if argv is None else argv)
    if given is not None:
        set_language(given)
    args = build_parser().parse_args(argv)
    set_language(getattr(args, "lang", None))
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("\n" + _("interrupted"), file=sys.stderr)
        return 130
    except (UnknownExercise, CurriculumError, ProjectError) as err:
        print(f"kata {args.command}: {err}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, OSError) as err:
        print(f"kata {args.command}: {err}", file=sys.stderr)
        return 1
