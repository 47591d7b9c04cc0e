"""Taking a submission: its name, and a copy of its exercise modules, nothing else.

A *submission* is a folder holding the exercises' modules (directly, in an
``exercises/`` subfolder, or inside its one subfolder, as unzipped archives
often are) or a ``.zip`` of one; its name is the folder's or the zip's name
without ``.zip``. Only the modules the curriculum names (``devices.py`` ...)
are copied, as plain files of 1 MB at most, into a fresh folder: a
``conftest.py``, a ``pytest.ini``, a ``sitecustomize.py``, links or fake
results next to them are never read.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kata import curriculum

__all__ = ["MODULE_LIMIT", "GradeError", "Submission", "name_submissions", "take_modules"]

MODULE_LIMIT = 1 << 20  # bytes: a module larger than this is not taken


class GradeError(Exception):
    """Grading could not be done (bad arguments, or the reference does not run here)."""


@dataclass(frozen=True)
class Submission:
    name: str
    path: Path


def _display_name(path: Path) -> str:
    return path.name[:-4] if path.suffix.lower() == ".zip" and path.is_file() else path.name


def name_submissions(paths: list[str | Path]) -> list[Submission]:
    """A :class:`Submission` per path, named after it (``alice``, ``alice-2`` for a second ``alice``)."""
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise GradeError("no such file or folder: " + ", ".join(missing))
    subs, seen = [], Counter()
    for p in paths:
        path = Path(p).expanduser().resolve()
        if not (path.is_dir() or (path.is_file() and path.suffix.lower() == ".zip")):
            raise GradeError(f"{p}: a submission is a folder or a .zip file")
        name = re.sub(r"[^\w .@+-]+", "_", _display_name(path)).strip("._ ") or "submission"
        seen[name] += 1
        subs.append(Submission(name if seen[name] == 1 else f"{name}-{seen[name]}", path))
    return subs


def _module_files() -> list[str]:
    return [f"{name}.py" for name in curriculum.names()]


def take_modules(source: Path, dest: Path) -> tuple[list[str], list[str]]:
    """Copy the exercise modules of ``source`` (a folder or a zip) into ``dest``.
    Returns (the modules taken, in curriculum order; the problems met, in words)."""
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_file():
        return _take_from_zip(source, dest)
    return _take_from_folder(source, dest)


def _single_subfolder(names: list[str]) -> str | None:
    real = [n for n in names if not n.startswith((".", "__MACOSX"))]
    return real[0] if len(real) == 1 else None


def _too_large(name: str) -> str:
    return f"{name}.py is larger than {MODULE_LIMIT >> 20} MB: not taken"


def _take_from_folder(source: Path, dest: Path) -> tuple[list[str], list[str]]:
    def holds_modules(folder: Path) -> bool:
        return any(os.path.lexists(folder / f) for f in _module_files())

    candidates = [source, source / "exercises"]
    if not any(holds_modules(c) for c in candidates):
        subfolders = [p.name for p in source.iterdir() if p.is_dir() and not p.is_symlink()] if source.is_dir() else []
        inner = _single_subfolder(subfolders)
        if inner:
            candidates += [source / inner, source / inner / "exercises"]
    folder = next((c for c in candidates if holds_modules(c)), None)
    if folder is None:
        return [], []
    found, problems = [], []
    for name in curriculum.names():
        path = folder / f"{name}.py"
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append(f"{name}.py is not a plain file (a link?): not taken")
            continue
        if info.st_size > MODULE_LIMIT:
            problems.append(_too_large(name))
            continue
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except OSError as err:
            problems.append(f"{name}.py could not be read ({err.strerror})")
            continue
        with os.fdopen(fd, "rb") as f:
            _keep(name, f.read(MODULE_LIMIT + 1), dest, found, problems)
    return found, problems


def _keep(name: str, data: bytes, dest: Path, found: list[str], problems: list[str]) -> None:
    """Write a module read with one byte beyond the limit into `dest`, or say it is too large."""
    if len(data) > MODULE_LIMIT:
        problems.append(_too_large(name))
        return
    (dest / f"{name}.py").write_bytes(data)
    found.append(name)


def _take_from_zip(source: Path, dest: Path) -> tuple[list[str], list[str]]:
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as err:
        return [], [f"not a readable zip file ({err})"]
    with archive:
        by_folder: dict[tuple[str, ...], dict[str, zipfile.ZipInfo]] = {}
        tops = set()
        for info in archive.infolist():
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            if not parts or "__MACOSX" in parts:
                continue
            if len(parts) > 1:
                tops.add(parts[0])
            if not info.is_dir() and parts[-1] in _module_files():
                by_folder.setdefault(parts[:-1], {})[parts[-1][:-3]] = info
        candidates = [(), ("exercises",)]
        top = _single_subfolder(sorted(tops))
        if top:
            candidates += [(top,), (top, "exercises")]
        folder = next((c for c in candidates if c in by_folder), None)
        if folder is None:
            return [], []
        found, problems = [], []
        for name in curriculum.names():
            info = by_folder[folder].get(name)
            if info is None:
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                problems.append(f"{name}.py is a link in the zip: not taken")
                continue
            if info.file_size > MODULE_LIMIT:
                problems.append(_too_large(name))
                continue
            try:
                with archive.open(info) as f:
                    data = f.read(MODULE_LIMIT + 1)
            except (RuntimeError, zipfile.BadZipFile, OSError, NotImplementedError) as err:
                problems.append(f"{name}.py could not be read from the zip ({err})")
                continue
            _keep(name, data, dest, found, problems)
        return found, problems
