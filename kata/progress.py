"""A learner's progress, recorded where they work: ``.kata-progress.json`` in the folder checked.

Every run of the checks against a folder (``pytest exercises``, ``pytest
exercises/data.py``, ``kata watch``, a notebook's ``kata.check``) records, per
exercise it ran in full, how many checks passed of how many; ``kata solution
NAME --give-up`` records that the solution was viewed. ``kata list`` and
``kata next`` read the file, so they answer at once, without running anything.

The file is small, JSON, ignored by git (``.gitignore``), and written atomically.
A run of only some checks of an exercise (``-m cuda``, ``-k ...``) does not
overwrite that exercise's counts: only a full run says where it stands.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kata.files import write_json

__all__ = ["FILE_NAME", "Standing", "mark_solution_viewed", "read", "record"]

FILE_NAME = ".kata-progress.json"


@dataclass
class Standing:
    """Where one exercise stands."""

    passed: int = 0
    total: int = 0
    solution_viewed: bool = False
    updated: str = ""

    @property
    def checked(self) -> bool:
        return self.total > 0

    @property
    def done(self) -> bool:
        return self.total > 0 and self.passed == self.total


def _path(folder: Path) -> Path:
    return Path(folder) / FILE_NAME


def read(folder: Path) -> dict[str, Standing]:
    """Each exercise's standing in ``folder`` (empty if nothing was recorded, or the file is unreadable)."""
    try:
        raw = json.loads(_path(folder).read_text())
    except (OSError, ValueError):
        return {}
    result = {}
    for name, entry in (raw.get("exercises") or {}).items() if isinstance(raw, dict) else ():
        if isinstance(entry, dict):
            known = {k: entry[k] for k in ("passed", "total", "solution_viewed", "updated") if k in entry}
            try:
                result[name] = Standing(**known)
            except TypeError:
                continue
    return result


def _write(folder: Path, standings: dict[str, Standing]) -> None:
    try:
        write_json(_path(folder), {"exercises": {name: asdict(s) for name, s in sorted(standings.items())}})
    except OSError:
        pass  # a read-only folder: progress is a convenience, never a reason to fail a run


def record(folder: Path, counts: dict[str, tuple[int, int]]) -> None:
    """Record ``{exercise: (passed, total)}`` for exercises whose checks all ran."""
    if not counts:
        return
    standings = read(folder)
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    for name, (passed, total) in counts.items():
        old = standings.get(name, Standing())
        standings[name] = Standing(passed, total, old.solution_viewed, now)
    _write(folder, standings)


def mark_solution_viewed(folder: Path, name: str) -> None:
    standings = read(folder)
    standing = standings.setdefault(name, Standing())
    standing.solution_viewed = True
    standing.updated = time.strftime("%Y-%m-%dT%H:%M:%S")
    _write(folder, standings)
