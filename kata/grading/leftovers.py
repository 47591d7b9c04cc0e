"""What a hand-in leaves in its sandbox: ended, removed, then checked, before the next hand-in comes.

What is checked, by the sandbox's kind: ``bubblewrap``, the job's folder, its tmpfs (/tmp, /dev/shm) and namespaces;
``user``, the job's folder and that uid's files, System V objects and processes; ``none``, the job's folder and the
child's process group. What is still not as at the server's start is said: the grader replaces that server.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import stat
import time
from pathlib import Path

__all__ = ["Leftovers"]

_IPC = {"shm": ("shmid", "shmctl"), "sem": ("semid", "semctl"), "msg": ("msqid", "msgctl")}


class Leftovers:
    """The sandbox of one server as it was at its start, and how to bring it back there."""

    def __init__(self, kind: str, work: Path):
        self.kind, self.uid, self.libc = kind, os.getuid(), ctypes.CDLL(None)
        folders = [str(work)] + (["/tmp", "/dev/shm"] if kind == "bubblewrap" else [])
        self.start = {folder: _tree(folder) for folder in folders if os.path.isdir(folder)}
        self.shared = ["/tmp", "/var/tmp", "/dev/shm"] if kind == "user" else []   # the machine's: that uid's files

    def held(self) -> int:
        """Bytes the sandbox holds outside its processes' memory: System V shared memory, bubblewrap's tmpfs."""
        total = sum(size for kind, _ident, size in self._ipc() if kind == "shm")
        for folder in self.start if self.kind == "bubblewrap" else ():
            with contextlib.suppress(OSError):
                fs = os.statvfs(folder)
                total += (fs.f_blocks - fs.f_bfree) * fs.f_frsize
        return total

    def end_processes(self, child: int) -> int:
        """SIGKILL to every process of the sandbox but this one (with no sandbox, to the child's process group),
        again until none is left, each child reaped: ``child``'s wait status."""
        status, deadline = None, time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(child, signal.SIGKILL) if self.kind == "none" else os.kill(-1, signal.SIGKILL)
            except OSError:   # ESRCH: none is left (in a PID namespace of its own, or the child's group)
                break
            status = _reap(child, status)
            if self.kind == "user" and not self._processes():   # kill(-1) counts the machine's others too
                break
            time.sleep(0.001)
        status = _reap(child, status)
        if status is None:
            with contextlib.suppress(ChildProcessError):
                status = os.waitpid(child, 0)[1]
        return status or 0

    def clear(self) -> list[str]:
        """The sandbox brought back to its start (rights, files, System V objects); what is still not as it was."""
        for start in self.start.values():
            for path, mode in start.items():   # top-down: each folder writable again before what it holds
                with contextlib.suppress(OSError):
                    if stat.S_ISDIR(mode) and stat.S_ISDIR(os.lstat(path).st_mode):
                        os.chmod(path, stat.S_IMODE(mode))
        strays = [s for folder, start in self.start.items() for s in _strays(folder, start, None)]
        strays += [s for folder in self.shared for s in _strays(folder, {}, self.uid)]   # that uid's, in the machine's
        for path, mode in strays:
            if stat.S_ISDIR(mode):
                _unlock(path)
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        for kind, ident, _size in self._ipc():
            getattr(self.libc, _IPC[kind][1])(ident, 0, 0)   # shmctl, semctl, msgctl: IPC_RMID (0)
        left = {path for folder, start in self.start.items() for path, _mode in _tree(folder).items() ^ start.items()}
        left |= {path for folder in self.shared for path, _mode in _strays(folder, {}, self.uid)}
        return sorted(left) + [f"System V {kind} {ident}" for kind, ident, _size in self._ipc()] + \
            [f"process {pid}" for pid in self._processes()]

    def _ipc(self) -> list[tuple[str, int, int]]:
        """(kind, id, bytes held) of each System V object of the sandbox."""
        found = []
        for kind, (column, _call) in _IPC.items() if self.kind != "none" else ():
            with contextlib.suppress(OSError, ValueError, IndexError, KeyError):
                header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
                for row in (dict(zip(header.split(), map(int, line.split()))) for line in rows):
                    if self.kind == "bubblewrap" or self.uid in (row["uid"], row["cuid"]):
                        found.append((kind, row[column], row.get("rss", 0) + row.get("swap", 0)))
        return found

    def _processes(self) -> list[int]:
        """Every process of the sandbox but its init, its server and this one."""
        found = []
        for name in os.listdir("/proc") if self.kind != "none" else ():
            if name.isdigit() and int(name) not in (1, os.getpid(), os.getppid()):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    uid = int(Path(f"/proc/{name}/status").read_text().split("\nUid:")[1].split()[0])
                    if self.kind == "bubblewrap" or uid == self.uid:
                        found.append(int(name))
        return found


def _reap(child: int, status: int | None) -> int | None:
    with contextlib.suppress(ChildProcessError):
        while (got := os.waitpid(-1, os.WNOHANG))[0]:
            status = got[1] if got[0] == child else status
    return status


def _unlock(top: str) -> None:
    """``u+rwx`` on every folder from ``top`` down, each before it is entered: a read-only folder can be emptied."""
    with contextlib.suppress(OSError):
        os.chmod(top, stat.S_IMODE(os.lstat(top).st_mode) | 0o700)
    for root, dirs, _files in os.walk(top):
        for path in (os.path.join(root, name) for name in dirs):
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(mode := os.lstat(path).st_mode):
                    os.chmod(path, stat.S_IMODE(mode) | 0o700)


def _scan(folder: str) -> list[tuple[str, os.stat_result]]:
    try:
        return [(e.path, e.stat(follow_symlinks=False)) for e in os.scandir(folder)]
    except OSError:
        return []


def _tree(folder: str) -> dict[str, int]:
    """Each path in ``folder`` (itself included) on its file system, with its mode; a mount below is not entered."""
    found, device = {folder: os.lstat(folder).st_mode}, os.lstat(folder).st_dev
    for path, mode in _scan(folder):
        found.update(_tree(path) if stat.S_ISDIR(mode.st_mode) and mode.st_dev == device else {path: mode.st_mode})
    return found


def _strays(folder: str, start: dict[str, int], owner: int | None) -> list[tuple[str, int]]:
    """What in ``folder`` is not in ``start`` (or is ``owner``'s, in folders anyone may write to), with its mode."""
    found, device = [], os.lstat(folder).st_dev
    for path, mode in _scan(folder):
        if path not in start if owner is None else mode.st_uid == owner:
            found.append((path, mode.st_mode))
        elif stat.S_ISDIR(mode.st_mode) and mode.st_dev == device and (owner is None or mode.st_mode & 0o002):
            found += _strays(path, start, owner)
    return found
