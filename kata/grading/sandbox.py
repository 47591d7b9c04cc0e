"""The sandbox around a submission's code, and what is in force, in the words ``kata grade`` prints.

Decided once per ``kata grade`` (:func:`plan`), tried rather than assumed: bubblewrap where it works; else, as root,
an unprivileged user of its own per job; with ``--no-sandbox``, the grader's own user. ``prlimit`` everywhere, a
cgroup per job as root (kata/grading/slots.py); what each does: docs/teaching.md ("The trust model", 5).
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import kata
from kata.grading import texts
from kata.i18n import _, language, say
from kata.project import Project

__all__ = ["CGROUP_ROOT", "UID_BASE", "Limits", "Plan", "Roots", "plan"]

UID_BASE = 61000
CGROUP_ROOT = Path("/sys/fs/cgroup")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "fonts", "alternatives",
             "mime.types", "ssl")
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
WORK = "/kata-job"   # a job's folder, inside the sandbox (a path no checkout or Python lives under)


@dataclass
class Limits:
    timeout: float = 300.0      # wall-clock seconds for a whole submission
    test_timeout: float = 30.0  # seconds for one check
    memory_mb: int = 4096       # all of a submission's processes together (and each one)
    processes: int = 128        # processes and threads at once
    disk_mb: int = 512          # what a submission may write, all files together
    slow: bool = False          # also run the checks marked slow
    isolate: bool = True        # a sandbox where the machine allows one

    def describe(self) -> str:
        return say(texts.DESCRIBE[self.slow], test_timeout=self.test_timeout, timeout=self.timeout,
                   memory=self.memory_mb, processes=self.processes, disk=self.disk_mb)


@dataclass
class Roots:
    """Where a sandbox's read-only files come from: the checkout, and the run's data (the records' CelebA)."""

    project: Project
    data: Path


@dataclass
class Plan:
    """What protects the host, the grader and the other submissions from one submission's code."""

    kind: str = "none"                 # "bubblewrap", "user" (its own uid, no namespaces) or "none"
    bwrap: str | None = None
    root: bool = False
    cgroups: str | None = None         # "v2", "v1" or None
    notes: list[str] = field(default_factory=list)

    def lines(self, limits: Limits) -> list[str]:
        """The protections in force, one per line, for the console, the summary and each log."""
        kind = self.kind if self.kind in ("bubblewrap", "user") else "none"
        who = "root" if kind == "bubblewrap" and self.root else kind
        count = say(texts.COUNT[bool(self.cgroups)], cgroups=self.cgroups, memory=limits.memory_mb,
                    processes=limits.processes)
        limited = f"limits: {say(texts.LIMITS, count=count, limits=limits.describe())}"
        return [f"grades: {_(texts.GRADES)}", f"sandbox: {say(texts.SANDBOX[kind], disk=limits.disk_mb)}",
                f"user: {say(texts.USER[who], uids=UID_BASE)}", limited, *[f"note: {n}" for n in self.notes]]

    def command(self, role: str, roots: Roots, limits: Limits, slot: int, folder: Path, threads: int) -> list[str]:
        """The command that starts one server (kata/grading/server.py) of ``role`` for job ``slot``."""
        python = [sys.executable, "-m", "kata.grading.server", role]
        cpu = math.ceil(limits.timeout) * (threads + 1) + 60
        prlimit = [f"--nproc={limits.processes}", f"--fsize={limits.disk_mb << 20}", "--core=0",
                   f"--data={limits.memory_mb << 20}", f"--cpu={cpu}"]
        prefix = [shutil.which("prlimit") or "prlimit", *prlimit, "--"]
        if self.kind == "bubblewrap":
            return prefix + [self.bwrap, *_bwrap_args(roots, limits, self.root, threads), "--", *python]
        plain = ["env", "-i", *_env(str(folder), roots, threads, "=".join, self.kind), *python]
        uid = str(UID_BASE + slot)   # a user of its own per sandbox
        return prefix + (["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--",
                          *plain] if self.kind == "user" else plain)


def _env(work: str, roots: Roots, threads: int, pair, kind: str) -> list[str]:
    values = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
              "HOME": f"{work}/home", "TMPDIR": f"{work}/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
              "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{work}/home/.matplotlib", "XDG_CACHE_HOME": f"{work}/home/.cache",
              "TORCH_HOME": f"{work}/home/.torch", "KATA_HOME": str(roots.project.root),
              "KATA_WORK": work, "KATA_DATA": str(roots.data), "OMP_NUM_THREADS": str(threads),
              "MKL_NUM_THREADS": str(threads), "NO_COLOR": "1", "COLUMNS": "100", "PYTHONDONTWRITEBYTECODE": "1",
              "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "USER": _user(), "LOGNAME": _user(),
              "KATA_SANDBOX": kind, "PYTHONPATH": str(Path(kata.__file__).resolve().parent.parent),
              "KATA_LANG": language()}   # the checks' messages in the report's language; the server reads every
    # KATA_* variable and removes it before any hand-in runs (kata/grading/server.py)
    values.update({name: os.environ[name] for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                                                        "LD_LIBRARY_PATH", "KATA_SIM_UNTESTED") if name in os.environ})
    return [pair((k, v)) for k, v in values.items()]


def _user() -> str:
    """A user's name as ordinary as any: the grader's own (not root), else the machine's first user's, or "user"."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid() or 1000).pw_name
    except (ImportError, AttributeError, KeyError):
        return "user"


def _bwrap_args(roots: Roots, limits: Limits, root: bool, threads: int) -> list[str]:
    """bubblewrap's options for one server: what texts.SANDBOX["bubblewrap"] says, and a host name as random as a
    container's."""
    size = str(limits.disk_mb << 20)
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--hostname", secrets.token_hex(6), "--clearenv", "--proc", "/proc", "--dev", "/dev",
            "--size", size, "--tmpfs", "/tmp", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
            "--size", size, "--tmpfs", WORK]   # first: what is bound below /tmp (a virtual environment) stays seen
    if root:
        args += ["--uid", "1000", "--gid", "1000"]
    for pair in _env(WORK, roots, threads, list, "bubblewrap"):
        args += ["--setenv", *pair]
    python = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix),
              Path(os.path.realpath(sys.executable)).parent.parent, *map(Path, site.getsitepackages())}
    ro = {d.resolve() for d in python if d.is_dir()} | {Path(kata.__file__).resolve().parent, roots.data,
                                                          roots.project.records}
    binds = [("--ro-bind", Path("/usr"))]
    for path in sorted((p for p in ro if p.exists() and not p.is_relative_to("/usr")), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(b) for _kind, b in binds[1:]):   # the outermost of them
            binds.append(("--ro-bind", path))
    binds += [("--ro-bind", Path("/etc") / n) for n in ETC_FILES if (Path("/etc") / n).exists()]
    gpus = [d for d in sorted(Path("/dev").glob("nvidia*")) if d.exists()]
    binds += [("--dev-bind", d) for d in gpus] + ([("--ro-bind", Path("/sys"))] if gpus else [])
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            binds.append(("--ro-bind", path))
    made = {Path("/"), Path("/tmp"), Path("/dev"), Path("/proc")}
    for _kind, path in binds:
        for parent in reversed(path.parents):   # bwrap makes a missing parent 0700: these are 0755
            if parent not in made and not any(parent.is_relative_to(b) for _kind, b in binds if b != parent):
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
    for kind, path in binds:
        args += [kind, str(path), str(path)]
    hidden = Path(kata.__file__).resolve().parent / "checks"
    if hidden.is_dir():
        args += ["--tmpfs", str(hidden)]
    return args + ["--chdir", WORK]


def _cgroups() -> tuple[str | None, str]:
    if (CGROUP_ROOT / "cgroup.controllers").is_file():
        have = set((CGROUP_ROOT / "cgroup.controllers").read_text().split())
        return ("v2", "") if {"memory", "pids"} <= have and os.access(CGROUP_ROOT, os.W_OK) else \
            (None, _("cgroup v2 without the memory and pids controllers here"))
    if all(os.access(CGROUP_ROOT / c, os.W_OK) for c in ("memory", "pids")):
        return "v1", ""
    return None, _("no writable cgroup hierarchy with memory and pids")


def _trial(plan: Plan, roots: Roots) -> str:
    """'' when a server's sandbox starts here, else what went wrong (one line)."""
    argv = plan.command("records", roots, Limits(), 0, Path("/tmp"), 1)
    probe = argv[:argv.index("-m")] + ["-c", "import kata.records, sys; sys.exit(0)"]
    try:
        run = subprocess.run(probe, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    lines = [line for line in run.stderr.strip().splitlines() if line.strip()]
    return "" if run.returncode == 0 else (lines[-1] if lines else f"exit status {run.returncode}")


def plan(isolate: bool, roots: Roots) -> Plan:
    """What can be put in force here."""
    root = os.name == "posix" and os.geteuid() == 0
    result = Plan(root=root)
    if root:
        result.cgroups, why = _cgroups()
        if why:
            result.notes.append(say("no cgroups ({why}): the grader watches the memory of each submission's processes",
                                    why=why))
    if not isolate or not sys.platform.startswith("linux"):
        return result
    result.bwrap = shutil.which("bwrap")
    why = _(texts.NO_BWRAP)
    if result.bwrap:
        result.kind = "bubblewrap"
        why = _trial(result, roots)
        if not why:
            return result
    result.notes.append(say("no bubblewrap: {why}", why=why))
    if not root:
        result.kind = "refused"
        result.notes.append(_(texts.NEEDS_BWRAP))
        return result
    result.kind = "user"
    why = _trial(result, roots)
    if why:
        result.kind = "refused"
        result.notes.append(say(texts.NO_PYTHON, uids=UID_BASE, why=why))
        return result
    solutions = roots.project.solutions
    if solutions.is_dir() and solutions.stat().st_mode & 0o005:
        result.notes.append(say(texts.READABLE, solutions=solutions))
    return result
