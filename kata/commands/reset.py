"""``kata reset NAME``: put an exercise's pristine stub back, keeping the learner's file.

The pristine stub comes from :func:`kata.pristine.pristine_source` (the release's
snapshot, else git), in the copy's language: the one ``kata lang`` (or ``kata release
--lang``) chose, in ``.kata-lang`` (:func:`copy_language`), its texts translated with
:func:`kata.i18n.translate_stub`. The learner's file is kept beside it as ``NAME.py.~N~``
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
from kata.i18n import N_, _, chosen_in, say, translate_stub
from kata.project import locate

__all__ = ["HELP", "add_parser", "backup", "copy_language", "run"]

HELP = N_("restore an exercise's stub (your file is kept as a backup)")


def add_parser(sub):
    p = sub.add_parser("reset", help=_(HELP),
                       description=_("Replace exercises/NAME.py with its pristine stub, after asking. Your file "
                                     "is kept next to it as NAME.py.~N~ (never overwritten). `git checkout "
                                     "exercises/NAME.py` does the same without the backup."))
    p.add_argument("name", help=_("an exercise (`kata list` shows them)"))
    p.add_argument("--yes", "-y", action="store_true", help=_("don't ask"))
    add_target_option(p)
    return p


def copy_language(folder: Path, root: Path | None = None) -> str | None:
    """The language the copy whose exercise modules are in ``folder`` chose (``kata lang``): the
    ``.kata-lang`` of the checkout holding ``folder``, else of the kata's checkout ``root``; None
    when neither chose one (the pristine stub is then restored in its own language)."""
    return chosen_in(folder.parent) or chosen_in(root if root is not None else locate().root)


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
        print(say("kata reset: can't find the pristine stub of {name}: this checkout has no {snapshot} and no git "
                  "commit whose exercises/{name}.py is a stub. Get it from a fresh clone of the kata.",
                  name=ex.name, snapshot=(pristine.SNAPSHOT_DIR / f"{ex.name}.py").as_posix()), file=sys.stderr)
        return 1
    lang = copy_language(folder)
    if lang is not None:
        translated = translate_stub(stub, lang)   # the snapshot's (or git's) texts, in the copy's language
        if pristine.is_stub(file, translated, ex.name):
            stub = translated
        # else: never with the catalogue's texts; the stub as it was rather than a file that does not run
    if file.is_file() and file.read_text(encoding="utf-8", errors="replace") == stub:
        print(say("{file} is already the pristine stub: nothing to do.", file=display(file)))
        return 0
    if file.exists() and not args.yes:
        numbered = file.name + ".~N~"
        if not _confirm(say("Replace {file} with the pristine stub of {label}? Your file is kept as a numbered "
                            "backup ({backup}).", file=display(file), label=ex.label, backup=numbered)):
            print(_("Nothing changed."))
            return 1
    kept = backup(file) if file.exists() else None
    atomic_write(file, stub)
    standing = progress.read(folder).get(ex.name)
    if standing is not None and standing.checked:
        progress.record(folder, {ex.name: (0, standing.total)})  # a stub fails every check
    print(say("{file} is the pristine stub again. Your file is kept as {backup}.", file=display(file),
              backup=display(kept)) if kept else say("{file} is the pristine stub again.", file=display(file)))
    print(say("  `kata next` or `pytest {file}` to start it again.", file=display(file)))
    return 0
