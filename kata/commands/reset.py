"""``kata reset NAME``: put an exercise's pristine stub back, keeping the learner's file.

The pristine stub comes from :func:`kata.pristine.pristine_source` (the release's
snapshot, else git). The learner's file is kept beside it as ``NAME.py.~N~``
(numbered as GNU ``cp --backup=numbered`` does: a backup is never overwritten).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kata import curriculum, pristine, progress
from kata.commands.next import add_target_option, learner_folder
from kata.files import atomic_write
from kata.harness.tracebacks import display

__all__ = ["HELP", "add_parser", "backup", "run"]

HELP = "restore an exercise's stub (your file is kept as a backup)"


def add_parser(sub):
    p = sub.add_parser("reset", help=HELP,
                       description="Replace exercises/NAME.py with its pristine stub, after asking. Your file "
                                   "is kept next to it as NAME.py.~N~ (never overwritten). `git checkout "
                                   "exercises/NAME.py` does the same without the backup.")
    p.add_argument("name", help="an exercise (`kata list` shows them)")
    p.add_argument("--yes", "-y", action="store_true", help="don't ask")
    add_target_option(p)
    return p


def backup(file: Path) -> Path:
    """Copy ``file`` to ``file.~N~`` with N one more than any backup there; never overwrites."""
    pattern = re.compile(re.escape(file.name) + r"\.~(\d+)~$")
    taken = [int(m.group(1)) for p in file.parent.iterdir() if (m := pattern.match(p.name))]
    number = max(taken, default=0) + 1
    data = file.read_bytes()
    while True:
        target = file.with_name(f"{file.name}.~{number}~")
        try:
            with open(target, "xb") as f:   # "x": fails rather than overwrite
                f.write(data)
            return target
        except FileExistsError:
            number += 1


def _confirm(question: str) -> bool:
    print(question + " [y/N] ", end="", flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        answer = ""
    if not answer:
        print()
    return answer.strip().lower() in ("y", "yes")


def run(args) -> int:
    ex = curriculum.get(args.name)
    folder = learner_folder(args.target)
    file = folder / f"{ex.name}.py"
    stub = pristine.pristine_source(ex.name)
    if stub is None:
        print(f"kata reset: can't find the pristine stub of {ex.name}: this checkout has no "
              f"{pristine.SNAPSHOT_DIR}/{ex.name}.py and no git commit whose exercises/{ex.name}.py is a stub. "
              f"Get it from a fresh clone of the kata.", file=sys.stderr)
        return 1
    if file.is_file() and file.read_text(encoding="utf-8", errors="replace") == stub:
        print(f"{display(file)} is already the pristine stub: nothing to do.")
        return 0
    if file.exists() and not args.yes:
        if not _confirm(f"Replace {display(file)} with the pristine stub of {ex.label}? "
                        f"Your file is kept as a numbered backup ({file.name}.~N~)."):
            print("Nothing changed.")
            return 1
    kept = backup(file) if file.exists() else None
    atomic_write(file, stub)
    standing = progress.read(folder).get(ex.name)
    if standing is not None and standing.checked:
        progress.record(folder, {ex.name: (0, standing.total)})  # a stub fails every check
    print(f"{display(file)} is the pristine stub again." + (f" Your file is kept as {display(kept)}." if kept else ""))
    print(f"  `kata next` or `pytest {display(file)}` to start it again.")
    return 0
