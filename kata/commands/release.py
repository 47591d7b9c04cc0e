"""``kata release OUT``: the learners' copy of the kata, without the answers (kata/grading/release.py)."""

from __future__ import annotations

__all__ = ["HELP", "add_parser", "run"]

HELP = "write the learners' copy (no solutions) into a new folder"


def add_parser(sub):
    p = sub.add_parser("release", help=HELP,
                       description="Write the learners' copy of the kata into OUT (a new or empty folder): the "
                                   "stubs, the checks, the kata package and a short README for learners; no "
                                   "solutions/ and no grader self-tests. Hand it out (or push it as the class's "
                                   "repository); collect their exercises/ folders; grade them with `kata grade`.")
    p.add_argument("out", metavar="OUT", help="the folder to write (new, or empty)")
    return p


def run(args) -> int:
    from kata.grading.release import release

    written = release(args.out)
    print(f"wrote the learners' copy: {args.out} ({len(written)} files, no solutions/)")
    print(f"  try it: cd {args.out} && pip install -e . && pytest exercises   (every check fails on the stubs)")
    return 0
