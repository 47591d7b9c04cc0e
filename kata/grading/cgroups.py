"""One control group per submission: one memory ceiling and one process count for all its processes.

The grader (as root) makes ``kata-grade-PID/`` below its own cgroup and, in it,
a group per submission with ``memory`` (the ceiling of all its processes
together) and ``pids`` (how many it may have at once). The grader puts each
test process in its submission's group before it runs anything (the process
waits for the grader's word), so everything it starts is counted, and the
grader ends them all by the group's list. cgroup v2 where its controllers can be used,
else the v1 ``memory`` and ``pids`` hierarchies; without either the grader
says so and falls back to a ceiling per process and a watch on their sum.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cgroups", "Group"]

ROOT = Path("/sys/fs/cgroup")


def _own(controller: str) -> str | None:
    """This process's path in the hierarchy of ``controller`` ("" for v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if (controller == "" and number == "0") or controller in controllers.split(","):
            return path
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class Group:
    """One submission's group, in each hierarchy that counts it."""

    dirs: list[Path]
    version: int

    def add(self, pid: int) -> None:
        """Put process ``pid`` in this group (before it runs anything of the submission's)."""
        for d in self.dirs:
            _write(d / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        found = set()
        for d in self.dirs:
            try:
                found.update(int(x) for x in (d / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(found)

    def kill(self) -> bool:
        """End every process in the group; True when none is left."""
        if self.version == 2 and (self.dirs[0] / "cgroup.kill").exists():
            try:
                _write(self.dirs[0] / "cgroup.kill", "1")
            except OSError:
                pass
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
        return not self.pids()

    def _read(self, name: str) -> str:
        for d in self.dirs:
            try:
                return (d / name).read_text()
            except OSError:
                continue
        return ""

    def oom_kills(self) -> int:
        """How many of its processes the kernel ended for memory."""
        text = self._read("memory.events" if self.version == 2 else "memory.oom_control")
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def memory_peak(self) -> int:
        text = self._read("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes").strip()
        return int(text) if text.isdigit() else 0

    def remove(self) -> None:
        self.kill()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


class Cgroups:
    """The grader's own part of the cgroup tree: one group per submission below it."""

    def __init__(self, bases: list[Path], version: int):
        self.bases = bases
        self.version = version
        self.count = 0

    @property
    def describe(self) -> str:
        return f"cgroup v{self.version}"

    @classmethod
    def create(cls) -> tuple[Cgroups | None, str]:
        """The grader's cgroups, or None and why not."""
        if os.name != "posix" or not ROOT.is_dir():
            return None, "no cgroups on this system"
        if os.geteuid() != 0:
            return None, "cgroups need root"
        name = f"kata-grade-{os.getpid()}"
        if (ROOT / "cgroup.controllers").is_file():
            made = cls._v2(name)
            if made is not None:
                return made, ""
        bases = []
        for controller in ("memory", "pids"):
            own = _own(controller)
            if own is None or not (ROOT / controller).is_dir():
                return None, f"no cgroup {controller} controller"
            base = ROOT / controller / own.lstrip("/") / name
            try:
                base.mkdir(exist_ok=True)
            except OSError as err:
                for made_base in bases:
                    made_base.rmdir()
                return None, f"cgroup {controller}: {err.strerror}"
            bases.append(base)
        return cls(bases, 1), ""

    @classmethod
    def _v2(cls, name: str) -> Cgroups | None:
        own = _own("")
        if own is None:
            return None
        parent = ROOT / own.lstrip("/")
        try:
            if not {"memory", "pids"} <= set((parent / "cgroup.controllers").read_text().split()):
                return None
            base = parent / name
            base.mkdir(exist_ok=True)
            try:
                _write(parent / "cgroup.subtree_control", "+memory +pids")
            except OSError:
                # a cgroup with processes in it can't give controllers to its children: move this one aside
                leaf = parent / f"{name}-grader"
                leaf.mkdir(exist_ok=True)
                _write(leaf / "cgroup.procs", str(os.getpid()))
                _write(parent / "cgroup.subtree_control", "+memory +pids")
            _write(base / "cgroup.subtree_control", "+memory +pids")
        except OSError:
            return None
        return cls([base], 2)

    def group(self, memory_bytes: int, processes: int) -> Group:
        self.count += 1
        dirs = [base / f"sub-{self.count}" for base in self.bases]
        for d in dirs:
            d.mkdir(exist_ok=True)
        if self.version == 2:
            _write(dirs[0] / "memory.max", str(memory_bytes))
            if (dirs[0] / "memory.swap.max").exists():
                _write(dirs[0] / "memory.swap.max", "0")
            _write(dirs[0] / "pids.max", str(processes))
        else:
            memory, pids = dirs
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            try:
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            except OSError:
                pass
            _write(pids / "pids.max", str(processes))
        return Group(dirs, self.version)

    def remove(self) -> None:
        for base in self.bases:
            for sub in base.glob("sub-*"):
                Group([sub], self.version).remove()
            try:
                base.rmdir()
            except OSError:
                pass
