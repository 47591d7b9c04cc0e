"""The grader's side of a server (kata/grading/server.py): start it in its sandbox, ask it, watch it (the memory of
its children together, where no cgroup holds it), and replace it when it dies, stops answering, or a hand-in left
its sandbox other than it found it. Everything a slot started ends with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kata.grading.sandbox import CGROUP_ROOT, UID_BASE, Limits, Plan, Roots
from kata.harness import forked
from kata.i18n import _, say

__all__ = ["Answer", "Slot"]

READY_TIMEOUT = 600.0   # importing torch and collecting the checks, on a loaded machine
POLL = 1.0     # seconds between looks at the memory of a server's children (where no cgroup holds it)


@dataclass
class Answer:
    """What a server said of one request (or, when it could not, why)."""

    end: str                      # "exit", "wall", "quiet" (server: a child stuck), "memory", "lost" (the server)
    status: int = 0
    report: str = ""
    output: str = ""
    output_bytes: int = 0
    disk_full: bool = False
    seconds: float = 0.0
    why: str = ""                 # why there is no answer ("lost"), or why the report was not read
    left: list[str] = field(default_factory=list)   # what the hand-in left in the sandbox (it is then replaced)


def _text(path: str | Path) -> str:
    """A file of /proc, of a cgroup or a log, as text ('' when it can't be read: a process gone)."""
    with contextlib.suppress(OSError):
        return Path(path).read_text(errors="replace")
    return ""


def _below(pid: int) -> list[int]:
    """Every process descended from ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(ValueError, IndexError):
            if entry.name.isdigit():
                ppid = int(_text(entry / "stat").rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _private_bytes(pid: int) -> int:
    """Memory a process holds of its own (not what it shares with the server it was forked from)."""
    return sum(int(line.split()[1]) * 1024 for line in _text(f"/proc/{pid}/smaps_rollup").splitlines()
               if line.startswith(("Private_Clean:", "Private_Dirty:", "Swap:")))


@dataclass
class Slot:
    plan: Plan
    role: str
    roots: Roots
    limits: Limits
    index: int
    work: Path                     # the grader's folder for this slot (its server's folder outside bubblewrap)
    threads: int = 1
    collect: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None
    server: int | None = None      # the server's pid, as this machine sees it
    cgroup: list[Path] = field(default_factory=list)
    requests: int = 0

    def start(self, wait: bool = True) -> None:
        """Start the server, from a thread that outlives it (bubblewrap's --die-with-parent, PR_SET_PDEATHSIG,
        follows the thread that started it, not the process); ``wait=False``: :meth:`ready` waits for it."""
        self.stop()
        folder = self.work / f"{self.role}-{self.index}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, mode=0o700)
        if self.plan.kind == "user":
            os.chown(folder, UID_BASE + self.index, UID_BASE + self.index)
        argv = self.plan.command(self.role, self.roots, self.limits, self.index, folder, self.threads) + self.collect
        self.cgroup = self._make_cgroup()
        with open(self.work / f"{self.role}-{self.index}.log", "ab") as log:   # the server's stderr
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                            cwd=folder, start_new_session=True,
                                            preexec_fn=self._join_cgroup if self.cgroup else None)
        if wait:
            self.ready()

    def ready(self) -> None:
        line = self._line(time.monotonic() + READY_TIMEOUT)
        if line is None or "ready" not in line:
            self.stop()
            last = _text(self.work / f"{self.role}-{self.index}.log").strip().splitlines()[-1:] or [_("no message")]
            raise RuntimeError(say("the {role} sandbox did not start: {why}", role=self.role, why=last[0]))
        # The last process whose command names the server (bubblewrap's own names it too).
        self.server = ([p for p in [self.process.pid, *_below(self.process.pid)]
                        if "kata.grading.server" in _text(f"/proc/{p}/cmdline")] or [self.process.pid])[-1]
        if self.cgroup:   # the ceiling: what the server holds once ready, and a submission's memory
            held = sum(int(pages) for p in [self.process.pid, *_below(self.process.pid)]
                       for pages in _text(f"/proc/{p}/statm").split()[1:2]) * os.sysconf("SC_PAGE_SIZE")
            name = "memory.max" if self.plan.cgroups == "v2" else "memory.limit_in_bytes"
            with contextlib.suppress(OSError):
                (self.cgroup[0] / name).write_text(str(held + (self.limits.memory_mb << 20)))

    def ask(self, request: dict, timeout: float) -> Answer:
        """Send one request; the answer, or why there is none (the server is then replaced on the next ask)."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        self.requests += 1
        request = {"id": self.requests, **request}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            self.stop()
            return Answer("lost", why=_("the sandbox's server was gone"))
        deadline, look = time.monotonic() + timeout, time.monotonic()
        killed_for_memory, ooms, held = False, self._oom_kills(), 0
        while True:
            line = self._line(min(deadline, time.monotonic() + POLL))
            if line is not None and "id" in line:
                answer = Answer(**{k: line.get(k, v) for k, v in vars(Answer("")).items()})
                if killed_for_memory or self._oom_kills() > ooms:
                    answer.end = "memory"
                if answer.left:   # not as it started: the next hand-in gets a fresh sandbox
                    self.stop()
                return answer
            held = line.get("held", held) if line is not None else held
            if self.process.poll() is not None or time.monotonic() >= deadline:
                why = _("the sandbox's server stopped answering (by the submission's doing?)") \
                    if self.process.poll() is None else _("the sandbox's server ended (by the submission's doing?)")
                self.stop()
                return Answer("lost", why=why)
            if not killed_for_memory and not self.cgroup and time.monotonic() >= look:   # (a cgroup holds it)
                look = time.monotonic() + POLL
                children = _below(self.server)
                if sum(_private_bytes(p) for p in children) + held > self.limits.memory_mb << 20:
                    killed_for_memory = True
                    for pid in children:
                        forked.end(pid)

    def stop(self) -> None:
        if self.process is not None:
            for pid in [*_below(self.process.pid), self.process.pid]:   # and the server's group (its session)
                forked.end(pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
            self.process = None
        for d in self.cgroup:
            for pid in _text(d / "cgroup.procs").split():
                forked.end(int(pid))
            with contextlib.suppress(OSError):
                d.rmdir()
        self.cgroup = []

    def _line(self, deadline: float) -> dict | None:
        stream = self.process.stdout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            if not (raw := stream.readline()):
                return None
            with contextlib.suppress(ValueError):
                if isinstance(line := json.loads(raw), dict):
                    return line
        return None

    # --- cgroups (as root, where the machine has them) --------------------------------------------

    def _make_cgroup(self) -> list[Path]:
        if self.plan.cgroups is None:
            return []
        name = f"kata-grade-{os.getpid()}-{self.role}-{self.index}"
        dirs = [CGROUP_ROOT / c / name for c in (("",) if self.plan.cgroups == "v2" else ("memory", "pids"))]
        try:
            for d in dirs:
                d.mkdir(exist_ok=True)
            (dirs[-1] / "pids.max").write_text(str(self.limits.processes + 64))
        except OSError:
            return []
        return dirs

    def _oom_kills(self) -> int:
        """How many processes the kernel has ended in this slot's cgroup for want of memory."""
        if not self.cgroup:
            return 0
        text = _text(self.cgroup[0] / ("memory.events" if self.plan.cgroups == "v2" else "memory.oom_control"))
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")), 0)

    def _join_cgroup(self) -> None:
        for d in self.cgroup:
            (d / "cgroup.procs").write_text(str(os.getpid()))
