"""Taking a submission: a name of its own, and its exercise modules as text, nothing else (what is taken and what
is refused: docs/teaching.md, "2. Collect"). The grader writes them into a folder of its own
(kata/grading/server.py), so a ``conftest.py`` or ``sitecustomize.py`` beside them never runs.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kata import curriculum
from kata.i18n import say

__all__ = ["MODULE_LIMIT", "GradeError", "Submission", "Taken", "name_submissions", "take"]

MODULE_LIMIT = 1 << 20
MAX_FILES = 50
NEVER = {"conftest.py", "sitecustomize.py", "usercustomize.py", "setup.py", "__init__.py"}


class GradeError(Exception):
    """Grading could not be done (bad arguments, or the reference does not run here)."""


@dataclass(frozen=True)
class Submission:
    name: str
    path: Path


@dataclass
class Taken:
    files: dict[str, str] = field(default_factory=dict)   # file name -> source text
    problems: list[str] = field(default_factory=list)     # what was refused or not taken, in words

    @property
    def modules(self) -> list[str]:
        return [n for n in curriculum.names() if f"{n}.py" in self.files]


def name_submissions(paths: list[str | Path]) -> list[Submission]:
    """A :class:`Submission` per path, each with a name of its own (``alice``, then ``alice-2``, ...)."""
    missing = [str(p) for p in paths if not os.path.lexists(p)]
    if missing:
        raise GradeError(say("no such file or folder: {paths}", paths=", ".join(missing)))
    subs: list[Submission] = []
    for p in paths:
        path = Path(p).expanduser().absolute()
        if not (path.is_dir() or (path.is_file() and path.suffix.lower() == ".zip")):
            raise GradeError(say("{path}: a submission is a folder or a .zip file", path=p))
        base = path.name[:-4] if path.suffix.lower() == ".zip" and path.is_file() else path.name
        name = re.sub(r"[^\w.@+-]+", "_", base).strip("._") or "submission"
        unique, n = name, 1
        while unique in {s.name for s in subs}:
            n += 1
            unique = f"{name}-{n}"
        subs.append(Submission(unique, path))
    return subs


def _wanted(name: str) -> bool:
    return name.endswith(".py") and name not in NEVER and re.fullmatch(r"[A-Za-z_]\w*\.py", name) is not None


def _folder_of(tops: list[str], names_of) -> tuple[str, ...] | None:
    """Where a hand-in's modules are, as path parts from its top (``names_of(parts)``: the file names there): the
    top, its ``exercises/``, or those of its one subfolder of ``tops`` (as unzipped archives often are), or None."""
    candidates = [(), ("exercises",)] + ([(tops[0],), (tops[0], "exercises")] if len(tops) == 1 else [])
    return next((c for c in candidates if any(f"{m}.py" in names_of(c) for m in curriculum.names())), None)


def _inside(path: Path, top: Path, taken: Taken) -> Path | None:
    """``path`` with its links followed, when that stays inside ``top``; else None, and a problem said."""
    real = Path(os.path.realpath(path))
    if real.is_relative_to(Path(os.path.realpath(top))):
        return real
    shown = path.relative_to(top) if path.is_relative_to(top) else path
    taken.problems.append(say("refused: {shown} is a link to {real}, outside the hand-in", shown=shown, real=real))
    return None


def take(source: Path, trusted: bool = False) -> Taken:
    """The submission's modules (see the module's docstring); ``trusted`` (the reference solutions, in the
    teacher's own checkout): links are followed wherever they lead."""
    if source.is_file():
        return _from_zip(source)
    top, taken = source, Taken()
    inner = [p.name for p in top.iterdir() if p.is_dir() and not p.name.startswith((".", "__MACOSX"))]
    parts = _folder_of(inner, lambda c: os.listdir(top.joinpath(*c)) if top.joinpath(*c).is_dir() else [])
    if parts is None:
        return taken
    folder = top.joinpath(*parts)
    if not trusted and _inside(folder, top, taken) is None:
        return taken
    for name in sorted(os.listdir(folder)):
        if not _wanted(name) or len(taken.files) >= MAX_FILES:
            continue
        path = folder / name
        shown = path.relative_to(top)
        info = os.stat(path) if trusted else os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            if (real := _inside(path, top, taken)) is None:
                continue
            info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            continue
        if info.st_nlink > 1 and not trusted:
            taken.problems.append(say("refused: {shown} is a hard link (it has {n} names, so it may be a file from "
                                      "elsewhere): hand in a copy", shown=shown, n=info.st_nlink))
            continue
        try:
            with open(path, "rb") as f:
                _keep(taken, name, f.read(MODULE_LIMIT + 1), str(shown))
        except OSError as err:
            taken.problems.append(say("{shown} could not be read ({why})", shown=shown, why=err.strerror))
    return taken


def _keep(taken: Taken, name: str, data: bytes, shown: str) -> None:
    if len(data) > MODULE_LIMIT:
        taken.problems.append(say("{shown} is larger than {mb} MB: not taken", shown=shown, mb=MODULE_LIMIT >> 20))
        return
    taken.files[name] = data.decode("utf-8", "replace")


def _from_zip(source: Path) -> Taken:
    taken = Taken()
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as err:
        taken.problems.append(say("not a readable zip file ({err})", err=err))
        return taken
    with archive:
        folders: dict[tuple[str, ...], dict[str, zipfile.ZipInfo]] = {}
        tops = set()
        for info in archive.infolist():
            raw = info.filename.replace("\\", "/")
            parts = PurePosixPath(raw).parts
            if not parts or "__MACOSX" in parts:
                continue
            if raw.startswith("/") or ".." in parts or re.match(r"^[A-Za-z]:", raw):
                taken.problems.append(say("refused: the zip entry {name} points outside the hand-in",
                                          name=info.filename))
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                taken.problems.append(say("refused: the zip entry {name} is a link", name=info.filename))
                continue
            if len(parts) > 1:
                tops.add(parts[0])
            if not info.is_dir() and _wanted(parts[-1]):
                folders.setdefault(parts[:-1], {})[parts[-1]] = info
        folder = _folder_of(sorted(tops), lambda c: folders.get(c, {}))
        for name, info in sorted(folders.get(folder, {}).items())[:MAX_FILES]:
            try:
                with archive.open(info) as f:
                    _keep(taken, name, f.read(MODULE_LIMIT + 1), info.filename)
            except (RuntimeError, zipfile.BadZipFile, OSError, NotImplementedError) as err:
                taken.problems.append(say("{name} could not be read from the zip ({err})", name=info.filename, err=err))
    return taken
