"""A learner's progress, recorded where they work: ``.kata-progress.json`` in the folder checked.

Every run of the checks against a folder (``pytest exercises``, ``pytest
exercises/data.py``, ``kata watch``, a notebook's ``kata.check``) records, per
exercise it ran in full, how many checks passed of how many; ``kata solution
NAME --give-up`` records that the solution was viewed. ``kata list`` and
``kata next`` read the file, so they answer at once, without running anything.

Each record keeps when its run began: an exercise whose module was saved after
that is *edited* since (``Standing.edited``), so ``kata next``, ``kata list`` and
``kata watch`` don't take an old "done" for a current one.

The file is small, JSON, ignored by git (``.gitignore``), and written atomically.
A run of only some checks of an exercise (``-m cuda``, ``-k ...``) does not
overwrite that exercise's counts: only a full run says where it stands.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kata.files import write_json

__all__ = ["FILE_NAME", "Standing", "edited_since", "mark_solution_viewed", "read", "record"]

FILE_NAME = ".kata-progress.json"
_STORED = ("passed", "total", "skipped", "todo", "causes", "solution_viewed", "updated", "checked_at")


@dataclass
class Standing:
    """Where one exercise stands, by the last run of all its checks."""

    passed: int = 0
    total: int = 0              # the checks that counted (all but the skipped ones)
    solution_viewed: bool = False
    updated: str = ""           # when it was recorded, local time, to the second
    skipped: int = 0
    todo: int = 0               # of the failing checks, those stopped at a stub
    causes: int = 0             # the failing checks' causes (kata/harness/outcomes.py)
    checked_at: float = 0.0     # when the run that recorded it began (seconds since the epoch)
    edited: bool = field(default=False, compare=False)   # not stored: its module was saved after that run

    @classmethod
    def of(cls, row) -> Standing:
        """From a row of a run's table (kata.harness.outcomes.Row)."""
        return cls(row.passed, row.counted, skipped=row.skipped, todo=row.todo, causes=row.causes)

    @property
    def checked(self) -> bool:
        return self.total > 0

    @property
    def done(self) -> bool:
        """Its last run passed every check."""
        return self.total > 0 and self.passed == self.total

    @property
    def still_done(self) -> bool:
        """Done, and its module not saved since."""
        return self.done and not self.edited

    @property
    def since(self) -> float:
        """When the run that recorded it began (for a record older than that field: its time, plus the
        second it was cut to)."""
        if self.checked_at:
            return self.checked_at
        try:
            return time.mktime(time.strptime(self.updated, "%Y-%m-%dT%H:%M:%S")) + 1
        except (ValueError, OverflowError):
            return 0.0


def _path(folder: Path) -> Path:
    return Path(folder) / FILE_NAME


def edited_since(standing: Standing, files) -> bool:
    """Whether one of ``files`` was saved after the run that recorded ``standing`` began (a missing
    file counts as not saved; a standing with no time, as edited)."""
    since = standing.since
    for file in files:
        try:
            if os.stat(file).st_mtime > since:
                return True
        except OSError:
            continue
    return not since


def read(folder: Path) -> dict[str, Standing]:
    """Each exercise's standing in ``folder`` (empty if nothing was recorded, or the file is unreadable),
    with ``edited`` set where ``folder/NAME.py`` was saved after the run that recorded it."""
    try:
        raw = json.loads(_path(folder).read_text())
    except (OSError, ValueError):
        return {}
    result = {}
    for name, entry in (raw.get("exercises") or {}).items() if isinstance(raw, dict) else ():
        if isinstance(entry, dict):
            known = {k: entry[k] for k in _STORED if k in entry}
            try:
                standing = Standing(**known)
            except TypeError:
                continue
            standing.edited = standing.checked and edited_since(standing, [Path(folder) / f"{name}.py"])
            result[name] = standing
    return result


def _write(folder: Path, standings: dict[str, Standing]) -> None:
    try:
        write_json(_path(folder), {"exercises": {name: {k: getattr(s, k) for k in _STORED}
                                                 for name, s in sorted(standings.items())}})
    except OSError:
        pass  # a read-only folder: progress is a convenience, never a reason to fail a run


def record(folder: Path, counts: dict[str, tuple[int, int] | Standing], started: float | None = None) -> None:
    """Record, for exercises whose checks all ran, ``(passed, total)`` or their :class:`Standing`;
    ``started``: when the run began (default: now)."""
    if not counts:
        return
    standings = read(folder)
    now = time.time()
    for name, count in counts.items():
        new = count if isinstance(count, Standing) else Standing(*count)
        new.solution_viewed = standings.get(name, Standing()).solution_viewed
        new.updated, new.checked_at = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now)), started or now
        new.edited = False
        standings[name] = new
    _write(folder, standings)


def mark_solution_viewed(folder: Path, name: str) -> None:
    standings = read(folder)
    standing = standings.setdefault(name, Standing())
    standing.solution_viewed = True
    standing.updated = time.strftime("%Y-%m-%dT%H:%M:%S")
    _write(folder, standings)
