"""``kata gradescope DIR_OR_ZIP``: a Gradescope autograder grading with ``kata grade`` (kata/grading/gradescope.py)."""

from __future__ import annotations

import shlex

from kata.commands._args import add_grading_options

__all__ = ["HELP", "add_parser", "run"]

HELP = "write a Gradescope autograder (setup.sh, run_autograder) for this kata"


def add_parser(sub):
    from kata.grading.gradescope import CONTAINER_MB, MEMORY_MB

    p = sub.add_parser("gradescope", help=HELP,
                       description="Write the files of a Gradescope autograder into DIR (or into a .zip ready to "
                                   "upload): setup.sh, run_autograder and the kata's own source. It grades "
                                   "/autograder/submission with the bundle's own `kata grade` and writes "
                                   f"/autograder/results/results.json. The default --memory ({MEMORY_MB} MB) "
                                   f"fits a {CONTAINER_MB} MB container.")
    p.add_argument("dest", metavar="DIR_OR_ZIP", help="a folder, or a file name ending in .zip")
    add_grading_options(p, memory=MEMORY_MB)
    return p


def run(args) -> int:
    from kata.grading.gradescope import options_of, write

    options = options_of(args)
    where = write(args.dest, options, args.memory)
    kind = "zip" if where.suffix.lower() == ".zip" else "folder"
    print(f"wrote a Gradescope autograder ({kind}): {where}")
    print("  setup.sh installs the kata (and bubblewrap) in /autograder and checks the reference solutions once;")
    print(f"  run_autograder grades /autograder/submission with `kata grade {shlex.join(options)}`.")
    if kind == "folder":
        print(f"  Upload a zip of the folder's contents (not of the folder): "
              f"cd {shlex.quote(str(where))} && zip -r ../autograder.zip .")
    return 0
