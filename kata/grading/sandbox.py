"""The sandbox around a submission's test processes: what is in force, and where they are started.

Decided once per ``kata grade`` (:func:`plan`), with maintained tools first:

* **bubblewrap** (``bwrap``, Debian/Ubuntu package ``bubblewrap``) around the
  zygote every test process is forked from (kata/grading/zygote.py): a file
  system holding only the system's programs and libraries, Python and its
  packages, the kata, the checks and the stubs (read-only), and the grader's
  working folder; no network. The reference solutions, the grader's results,
  the host's ``/etc``, homes and sockets are not there. Each test process then
  shuts itself in further (kata/grading/namespaces.py, as root, before it drops
  its privileges): its own mount, PID, network, IPC and UTS namespaces, a fresh
  ``/tmp`` and ``/dev/shm``, its own folder as its home and every other
  submission's hidden; when its first process ends, the kernel ends the rest.
  Where ``bwrap`` is missing or refused, the hand-written namespaces do all of
  it (read-only file systems, the solutions and the grader's folders hidden).
* **its own user**: when the grader is root, each test process drops to an
  unprivileged user of its own (uids from 61000, one per job at a time, never
  a real account's), so it can read neither root's files nor other
  submissions' folders, and can write none of the grader's.
* **cgroups** (kata/grading/cgroups.py): one memory ceiling and one process
  count for all of a submission's processes together; where cgroups can't be
  used, the grader watches their memory together and ``RLIMIT_NPROC`` counts
  the user's processes.
* **resource limits** (``setrlimit``, as ``prlimit`` sets them) in every
  process: memory, CPU seconds, file size, no core files.

:class:`Plan` says which of these are in force, in the words ``kata grade``
prints and each log repeats.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kata.grading.cgroups import Cgroups
from kata.grading.namespaces import STAGING
from kata.project import Project

__all__ = ["SANDBOX_HOME", "Plan", "UidPool", "bwrap_arguments", "plan"]

SANDBOX_HOME = "/home/student"   # the submission's folder, as its test processes see it inside bubblewrap
UID_BASE, UID_COUNT = 61000, 256
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "fonts", "alternatives",
             "mime.types")
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


class UidPool:
    """Unprivileged users for test processes: one per job at a time, locked against other graders."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.held: dict[int, int] = {}   # uid -> lock file descriptor
        self.taken = {int(line.split(":")[2]) for line in _passwd_lines() if line.count(":") >= 3
                      and line.split(":")[2].isdigit()}

    def acquire(self) -> int:
        for uid in range(UID_BASE, UID_BASE + UID_COUNT):
            if uid in self.held or uid in self.taken:
                continue
            fd = os.open(self.folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.held[uid] = fd
            return uid
        raise RuntimeError(f"no free user among uids {UID_BASE}-{UID_BASE + UID_COUNT - 1} for a test process")

    def release(self, uid: int) -> None:
        fd = self.held.pop(uid, None)
        if fd is not None:
            os.close(fd)


def _passwd_lines() -> list[str]:
    try:
        return Path("/etc/passwd").read_text().splitlines()
    except OSError:
        return []


@dataclass
class Plan:
    """What protects the host, the other submissions and the grader from one submission's code."""

    files: str = "bubblewrap"          # "bubblewrap", "namespaces" (hand-written) or "none"
    bwrap: str | None = None
    uids: UidPool | None = None
    cgroups: Cgroups | None = None
    project: Project | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def isolated(self) -> bool:
        return self.files != "none"

    def lines(self, limits) -> list[str]:
        """The protections in force, one per line, for the console, the summary and each log."""
        user = ("its own unprivileged user (uids from 61000), apart from the grader and other submissions"
                if self.uids else "the grader's own user (not root: no other user to run as)")
        if self.files == "bubblewrap":
            files = ("bubblewrap: only Python, the kata, the checks and its own folder visible (read-only but "
                     "its folder), own /tmp and /dev/shm, no reference solutions; no network or host sockets; "
                     "own PID namespace")
        elif self.files == "namespaces":
            files = ("hand-written namespaces (bubblewrap is not installed or refused): read-only file systems, "
                     "reference solutions hidden, own /dev/shm, no network, own PID namespace where allowed")
        else:
            files = "none: the network and the file system are the grader's (--no-sandbox, or not Linux)"
        total = (f"{limits.memory_mb:,} MB and {limits.processes} processes for all of a submission's processes "
                 f"together ({self.cgroups.describe})" if self.cgroups else
                 f"{limits.memory_mb:,} MB per process and for all together (watched), {limits.processes} processes"
                 + (" of its user" if self.uids else ""))
        lines = ["verdicts: each submission's source vetted before it runs (flagged: see --flagged); a tripwire "
                 "in each test process; outcomes read by the grader, every process ended first",
                 f"user: {user}", f"sandbox: {files}", f"limits: {total}; {limits.describe()}"]
        return lines + [f"note: {n}" for n in self.notes]

    # --- where test processes come from ---------------------------------------------------

    def sandbox_dir(self, run_dir: Path) -> str:
        """The run folder as the test process sees it."""
        return SANDBOX_HOME if self.files == "bubblewrap" else str(run_dir)

    def zygote_prefix(self, work: Path) -> list[str]:
        """The command the zygote (kata/grading/zygote.py) runs under: bubblewrap, or nothing."""
        if self.files != "bubblewrap":
            return []
        return [self.bwrap, *bwrap_arguments(self.project, work, root=self.uids is not None or os.geteuid() == 0),
                "--"]

    def kept(self) -> list[str]:
        """What bubblewrap binds under /tmp (a virtual environment made there, as CI makes one): a test
        process puts it back over its own fresh /tmp."""
        if self.files != "bubblewrap" or self.project is None:
            return []
        return [str(p) for p in _read_only(self.project) if p.is_relative_to("/tmp")]

    def hidden(self, out: Path | None, work: Path) -> list[str]:
        """Folders a test process must not see: the grader's working folder (every submission's) inside
        bubblewrap; otherwise the reference solutions, the grader's results and its private folder."""
        if self.files == "bubblewrap":
            return [str(work)]
        found = [str(work / "private")]
        if self.project is not None:
            found.append(str(self.project.solutions))
        if out is not None:
            found.append(str(out))
        return found


def _python_dirs() -> list[Path]:
    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix),
            Path(os.path.realpath(sys.executable)).parent.parent}
    for d in site.getsitepackages():
        dirs.add(Path(d))
    return [d.resolve() for d in dirs if d.is_dir()]


def _outermost(paths: list[Path]) -> list[Path]:
    keep = []
    for p in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(p.is_relative_to(k) for k in keep):
            keep.append(p)
    return keep


def _read_only(project: Project) -> list[Path]:
    """Python, its packages, the kata, the checks and the stubs: what the sandbox shows, read-only."""
    import kata

    ro = [d for d in _python_dirs() if not d.is_relative_to("/usr")]
    ro += [Path(kata.__file__).resolve().parent, project.checks.resolve(), project.exercises.resolve()]
    ro += [f.resolve() for f in (project.root / "pyproject.toml", project.root / "conftest.py") if f.is_file()]
    return _outermost(ro)


def bwrap_arguments(project: Project, work: Path, root: bool) -> list[str]:
    """bubblewrap's options for the zygote (see the module's docstring): the system's programs and
    libraries, Python, the kata, the checks and the stubs read-only, the grader's working folder (each
    test process keeps its own and hides the rest), no network. As root it keeps what a test process needs
    to shut itself in (namespaces, changing user); else it gets a user namespace."""
    args = ["--unshare-ipc", "--unshare-net", "--unshare-uts", "--hostname", "kata-sandbox", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL"]
    if root and os.geteuid() == 0:
        args += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user", "--cap-add", "CAP_SYS_ADMIN"]
    binds: list[tuple[str, Path]] = [("--ro-bind", Path("/usr"))]
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            binds.append(("--ro-bind", path))
    binds += [("--ro-bind", Path("/etc") / name) for name in ETC_FILES if (Path("/etc") / name).exists()]
    binds += [("--ro-bind", p) for p in _read_only(project)]
    for device in sorted(Path("/dev").glob("nvidia*")) + [Path("/dev/dri")]:
        if device.exists():
            binds.append(("--dev-bind", device))
    if any(kind == "--dev-bind" for kind, _ in binds):
        binds.append(("--ro-bind", Path("/sys")))
    binds.append(("--bind", work.resolve()))
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
             "--perms", "1777", "--tmpfs", "/dev/shm"]
    made: set[Path] = {Path("/"), Path("/tmp"), Path("/dev"), Path("/proc")}
    mounted = [p for _, p in binds]
    for _, path in binds + [("", Path(SANDBOX_HOME) / "x")]:
        for parent in reversed(path.parents):   # bwrap would make missing parents 0700: make them 0755
            if parent not in made and not any(parent.is_relative_to(m) for m in mounted if m != parent):
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
    for kind, path in binds:
        args += [kind, str(path), str(path)]
    return args + ["--perms", "0700", "--dir", STAGING, "--chdir", "/"]


def _bwrap_works(bwrap: str, project: Project, work: Path, root: bool) -> str:
    """'' when a trial run of bubblewrap works here (as the zygote will run), else why not."""
    trial = ("import ctypes, os; assert ctypes.CDLL(None, use_errno=True).unshare(0x60020000) == 0, "
             "'a test process could not make its namespaces'")
    if root:
        trial += "; os.setresuid(61000, 61000, 61000)"
    argv = [bwrap, *bwrap_arguments(project, work, root), "--", sys.executable, "-I", "-S", "-c", trial]
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    return "" if run.returncode == 0 else (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]


def plan(isolate: bool, project: Project, work: Path) -> Plan:
    """What can be put in force here (tried, not assumed)."""
    result = Plan(project=project)
    root = os.name == "posix" and os.geteuid() == 0
    if root:
        pool_dir = Path(tempfile.gettempdir()) / "kata-grade-uids"
        try:
            pool_dir.mkdir(mode=0o700, exist_ok=True)
            if pool_dir.stat().st_uid != 0 or pool_dir.is_symlink():
                raise OSError(f"{pool_dir} is not root's own")
            result.uids = UidPool(pool_dir)
        except OSError as err:
            result.notes.append(f"runs as root: no lock folder for the test users ({err})")
        result.cgroups, why = Cgroups.create()
        if result.cgroups is None:
            result.notes.append(f"no cgroups ({why}): memory watched by the grader instead")
    if not isolate or not sys.platform.startswith("linux"):
        result.files = "none"
        return _check_readable(result, project)
    bwrap = shutil.which("bwrap")
    why = "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)" if bwrap is None else \
        _bwrap_works(bwrap, project, work, root)
    if not why:
        result.bwrap = bwrap
        return result
    result.notes.append(f"no bubblewrap: {why}")
    result.files = "namespaces" if root else "none"
    return _check_readable(result, project)


def _check_readable(result: Plan, project: Project) -> Plan:
    """Without bubblewrap, the test processes' user reads Python and the kata where they are."""
    if result.uids is not None and not _readable_by_others([*_python_dirs(), project.root]):
        result.notes.append("runs as root: Python or the kata is not readable by other users here (install "
                            "them where they are, or install bubblewrap)")
        result.uids = None
    return result


def _readable_by_others(paths: list[Path]) -> bool:
    for path in paths:
        for p in [path, *path.parents]:
            try:
                if not p.stat().st_mode & 0o001:
                    return False
            except OSError:
                return False
    return True
