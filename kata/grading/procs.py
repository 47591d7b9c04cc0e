"""Finding and ending processes, from /proc: by user, by marker in the environment, by ancestry.

The grader ends every process a submission started before it reads that
submission's results (kata/grading/runner.py): by its cgroup where there is
one (kata/grading/cgroups.py), by its user where it runs as its own user, and
by the marker ``KATA_GRADE_RUN=<token>`` in its environment and its ancestry
otherwise. Linux only; elsewhere these find nothing.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["descendants", "end", "memory_of", "with_marker", "with_uid"]

PROC = Path("/proc")


def _pids() -> list[int]:
    try:
        return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]
    except OSError:
        return []


def _status(pid: int) -> dict[str, str]:
    try:
        text = (PROC / str(pid) / "status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def with_uid(uid: int) -> list[int]:
    """The processes whose real or effective user is ``uid``."""
    found = []
    for pid in _pids():
        uids = _status(pid).get("Uid", "").split()
        if uids[:2] and str(uid) in uids[:2] and pid != os.getpid():
            found.append(pid)
    return found


def with_marker(marker: bytes) -> list[int]:
    """The processes whose environment holds ``marker`` (``KATA_GRADE_RUN=...``)."""
    found = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            if marker in (PROC / str(pid) / "environ").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def descendants(root: int) -> list[int]:
    """The processes below ``root`` (its children, theirs, ...)."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        ppid = _status(pid).get("PPid", "").strip()
        if ppid.isdigit():
            children.setdefault(int(ppid), []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def memory_of(pids: list[int]) -> int:
    """Their resident memory together, in bytes."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    for pid in pids:
        try:
            total += int((PROC / str(pid) / "statm").read_text().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def end(find, rounds: int = 50) -> bool:
    """SIGKILL what ``find()`` returns until it returns nothing twice in a row; True when it did."""
    quiet = 0
    for _ in range(rounds):
        pids = find()
        if not pids:
            quiet += 1
            if quiet >= 2:
                return True
            time.sleep(0.005)
            continue
        quiet = 0
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        time.sleep(0.01)
    return not find()
