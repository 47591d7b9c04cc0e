"""``kata gradescope DIR_OR_ZIP``: a Gradescope autograder grading with ``kata grade`` (kata/grading/gradescope.py)."""

from __future__ import annotations

import shlex

from kata.commands._args import add_grading_options
from kata.i18n import N_, _, say

__all__ = ["HELP", "add_parser", "run"]

HELP = N_("write a Gradescope autograder (setup.sh, run_autograder) for this kata")


def add_parser(sub):
    from kata.grading.gradescope import CONTAINER_MB, MEMORY_MB

    p = sub.add_parser("gradescope", help=_(HELP),
                       description=say("Write the files of a Gradescope autograder into DIR (or into a .zip ready "
                                       "to upload): setup.sh, run_autograder and the kata's own source. It grades "
                                       "/autograder/submission with the bundle's own `kata grade` and writes "
                                       "/autograder/results/results.json. The default --memory ({memory} MB) fits "
                                       "a {container} MB container.", memory=MEMORY_MB, container=CONTAINER_MB))
    p.add_argument("dest", metavar="DIR_OR_ZIP", help=_("a folder, or a file name ending in .zip"))
    add_grading_options(p, memory=MEMORY_MB)
    return p


def run(args) -> int:
    from kata.grading.gradescope import options_of, write

    options = options_of(args)
    where = write(args.dest, options, args.memory)
    kind = "zip" if where.suffix.lower() == ".zip" else "folder"
    print(say("wrote a Gradescope autograder (zip): {where}", where=where) if kind == "zip" else
          say("wrote a Gradescope autograder (folder): {where}", where=where))
    print(_("  setup.sh installs the kata (and bubblewrap) in /autograder and checks the reference solutions once;"))
    print(say("  run_autograder grades /autograder/submission with `kata grade {options}`.",
              options=shlex.join(options)))
    if kind == "folder":
        print(say("  Upload a zip of the folder's contents (not of the folder): cd {where} && zip -r "
                  "../autograder.zip .", where=shlex.quote(str(where))))
    return 0
