"""`kata grade`: grade a class's submissions in bulk, safely, with Gradescope-ready results.

    kata grade SUBMISSION... --out DIR [--jobs N] [--timeout SECONDS] [--test-timeout SECONDS]
                                       [--memory MB] [--slow] [--reference FILE]

A *submission* is a folder holding the contract's modules (directly or in an
``exercises/`` subfolder, or inside its one subfolder, as unzipped archives
often are) or a ``.zip`` of one; its name is the folder's or the zip's name
without ``.zip``.

How one submission is graded
----------------------------
* Only the contract's module files (``devices.py`` ... ``sync.py``: regular
  files, 1 MB at most) are copied, into ``exercises/`` of a fresh working folder
  of its own. Anything else it holds (a ``conftest.py``, a ``pytest.ini``, a
  ``sitecustomize.py``, fake results) is never looked at. A submission with
  none of them needs no test process: each check fails as its module is missing.
* The pristine checks (tests/test_*.py) run against that copy in one child
  process (kata/grade_child.py, with kata/grade_plugin.py), with its working
  folder as current folder and home, a clean environment, a per-check time
  limit (pytest-timeout), a wall-clock limit for the whole submission, a memory
  ceiling, output captured (the first and last 32 KB are kept), and, on Linux
  as root, no network, file systems read-only outside its working folder and
  its own PID namespace (see kata/grade_child.py; what the platform refuses is
  skipped and said in the log and on the console).
* The child writes each check's outcome to a results file as the check ends.
  If the process dies (``os._exit``, a crash, the OOM killer), the check that
  was running fails with the reason and a fresh process runs the checks that
  are left; an exercise that times out or kills the process twice has its
  remaining checks failed without running them. When the wall-clock limit
  ends the run, what did not run fails with "not run". So a check that did not
  run never counts as passed, and one broken module costs only its exercise.

Scoring
-------
The reference solutions (solutions/) are checked first, in the same sandbox
and with the same options (once; ``--reference FILE`` keeps the result, and it
is reused while the checks, solutions, options and environment are the same).
That run is the list of checks, known independently of any student's run, and
it fixes each check's weight: exercise X's points (kata/curriculum.toml) are
shared equally among X's checks (tests/test_X.py) that the reference passes
here. A check the reference skips here (a slow check without ``--slow``, a
CUDA check on a machine without one) carries no points, for everyone, and
the feedback says so; a check the reference fails here carries none either,
with a warning (the environment is broken). A student earns a check's weight
when the check passes on their code; failed, skipped in their run, or not run
earns nothing.

``--slow`` is off by default: a submission is graded on the same checks
``pytest exercises`` runs for its author, so a learner whose table says
"done" everywhere gets full marks. Pass ``--slow`` to add the slow checks.

Outputs in DIR (replaced by each run): grades.csv, summary.json,
results/NAME.json (Gradescope's results.json format), feedback/NAME.md,
logs/NAME.log and reference.json.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import platform
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath

from kata.target import CHECKS_DIR, CONTRACT, PROJECT_ROOT, curriculum

SOLUTIONS = PROJECT_ROOT / "solutions"
CHILD = Path(__file__).with_name("grade_child.py")
MODULE_LIMIT = 1 << 20          # bytes: a contract module larger than this is not taken
OUTPUT_KEEP = 32 << 10          # bytes of a child's output kept from its start, and from its end
RESULTS_LIMIT = 32 << 20        # bytes of a results file read at most
MAX_STRIKES = 2                 # timeouts or process deaths in one exercise before the rest is not run
MAX_ATTEMPTS = 8                # processes per submission at most
SIGNAL_NAMES = {getattr(signal, n): n for n in dir(signal) if n.startswith("SIG") and not n.startswith("SIG_")}
EXERCISES = {ex["name"]: (number, ex) for number, ex in enumerate(curriculum(), 1)}


class GradeError(Exception):
    """Grading could not be done (bad arguments, or the reference does not run here)."""


@dataclass
class Limits:
    timeout: float = 300.0      # wall-clock seconds for a whole submission
    test_timeout: float = 30.0  # seconds for one check
    memory_mb: int = 4096       # heap and anonymous mappings of the test process
    file_mb: int = 256          # largest file the test process may write
    slow: bool = False          # also run the checks marked slow
    isolate: bool = True        # use namespaces where the platform allows

    def describe(self) -> str:
        return (f"{self.test_timeout:g} s per check, {self.timeout:g} s per submission, "
                f"{self.memory_mb:,} MB of memory" + (", slow checks included" if self.slow else ""))


@dataclass
class Submission:
    name: str
    path: Path


@dataclass
class Graded:
    """What one submission's run produced (the reference's too)."""
    name: str
    path: Path
    results: dict[str, dict] = field(default_factory=dict)  # nodeid -> {outcome, kind, message, duration}
    collected: list[str] | None = None
    found: list[str] = field(default_factory=list)           # contract modules taken
    problems: list[str] = field(default_factory=list)        # what went wrong taking or running it
    sandbox: dict | None = None
    log: str = ""
    seconds: float = 0.0
    output_bytes: int = 0
    timed_out: bool = False                                   # the wall-clock limit ended it
    run_dir: Path | None = None                               # set when no test process was needed


def exercise_of(nodeid: str) -> str | None:
    """'data' for 'tests/test_data.py::test_x', else None."""
    path = PurePosixPath(nodeid.split("::")[0])
    if path.parent.name == "tests" and path.stem.startswith("test_") and path.stem[5:] in CONTRACT:
        return path.stem[5:]
    return None


def check_name(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


# --- taking a submission's modules ----------------------------------------------


def submission_name(path: Path) -> str:
    return path.name[:-4] if path.suffix.lower() == ".zip" and path.is_file() else path.name


def name_submissions(paths: list[str | Path]) -> list[Submission]:
    subs, seen = [], Counter()
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise GradeError("no such file or folder: " + ", ".join(missing))
    for p in paths:
        path = Path(p).expanduser().resolve()
        if not (path.is_dir() or (path.is_file() and path.suffix.lower() == ".zip")):
            raise GradeError(f"{p}: a submission is a folder or a .zip file")
        name = re.sub(r"[^\w .@+-]+", "_", submission_name(path)).strip("._ ") or "submission"
        seen[name] += 1
        subs.append(Submission(name if seen[name] == 1 else f"{name}-{seen[name]}", path))
    return subs


def _module_files() -> list[str]:
    return [f"{name}.py" for name in CONTRACT]


def take_modules(source: Path, dest: Path) -> tuple[list[str], list[str]]:
    """Copy the contract's modules of ``source`` (folder or zip) into ``dest``.
    Returns (modules taken, problems)."""
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_file():
        return _take_from_zip(source, dest)
    return _take_from_folder(source, dest)


def _single_subfolder(names: list[str]) -> str | None:
    real = [n for n in names if not n.startswith((".", "__MACOSX"))]
    return real[0] if len(real) == 1 else None


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
    for name in CONTRACT:
        path = folder / f"{name}.py"
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append(f"{name}.py is not a plain file (a link?): not taken")
            continue
        if info.st_size > MODULE_LIMIT:
            problems.append(f"{name}.py is larger than {MODULE_LIMIT >> 20} MB: not taken")
            continue
        with open(path, "rb") as f:
            data = f.read(MODULE_LIMIT + 1)
        (dest / f"{name}.py").write_bytes(data[:MODULE_LIMIT])
        found.append(name)
    return found, problems


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
            tops.add(parts[0]) if len(parts) > 1 else None
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
        for name in CONTRACT:
            info = by_folder[folder].get(name)
            if info is None:
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                problems.append(f"{name}.py is a link in the zip: not taken")
                continue
            if info.file_size > MODULE_LIMIT:
                problems.append(f"{name}.py is larger than {MODULE_LIMIT >> 20} MB: not taken")
                continue
            try:
                with archive.open(info) as f:
                    data = f.read(MODULE_LIMIT + 1)
            except (RuntimeError, zipfile.BadZipFile, OSError, NotImplementedError) as err:
                problems.append(f"{name}.py could not be read from the zip ({err})")
                continue
            if len(data) > MODULE_LIMIT:
                problems.append(f"{name}.py is larger than {MODULE_LIMIT >> 20} MB: not taken")
                continue
            (dest / f"{name}.py").write_bytes(data)
            found.append(name)
        return found, problems


# --- running the checks in a child process ----------------------------------------


class OutputTail:
    """The first and last OUTPUT_KEEP bytes of a stream, and how much there was."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_KEEP - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * OUTPUT_KEEP:
                del self.tail[:-OUTPUT_KEEP]

    def text(self) -> str:
        tail = bytes(self.tail[-OUTPUT_KEEP:])
        cut = self.total - len(self.head) - len(tail)
        middle = f"\n[... {cut:,} bytes of output cut ...]\n" if cut > 0 else ""
        return (bytes(self.head).decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace"))


@dataclass
class ChildRun:
    events: list[dict]
    output: OutputTail
    returncode: int
    killed_by: str | None   # "wall": the submission's time ran out; "watchdog": one check overran
    seconds: float


class RunningCheck:
    """Follows a results file as it grows: which check is running, since when."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = b""
        self.running: str | None = None
        self.since = 0.0

    def poll(self) -> tuple[str | None, float]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except OSError:
            return self.running, self.since
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("e") == "start":
                self.running, self.since = event.get("id"), time.monotonic()
            elif event.get("e") == "result" and event.get("id") == self.running:
                self.running = None
        return self.running, self.since


class Context:
    """What every run of one `kata grade` shares."""

    def __init__(self, limits: Limits, jobs: int):
        self.limits = limits
        self.jobs = jobs
        self.threads = max(1, (os.cpu_count() or 1) // jobs)
        self.root = Path(tempfile.mkdtemp(prefix="kata-grade-"))
        os.chmod(self.root, 0o711)
        self.private = self.root / "private"
        self.private.mkdir(mode=0o700)
        self.checks = [str(CHECKS_DIR / f"test_{name}.py") for name in CONTRACT
                       if (CHECKS_DIR / f"test_{name}.py").is_file()]
        if not self.checks:
            raise GradeError(f"no checks found in {CHECKS_DIR}")
        self.counter = 0
        self.lock = threading.Lock()
        self.active: set[subprocess.Popen] = set()
        self.stopping = False

    def next_id(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def stop(self) -> None:
        """Ctrl-C: end every running child."""
        self.stopping = True
        with self.lock:
            procs = list(self.active)
        for proc in procs:
            _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _sweep(token: str) -> None:
    """Kill what a run left behind outside its process group (a daemon that
    called setsid), found by the token in its environment. Linux only."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    needle = f"KATA_GRADE_RUN={token}".encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            continue


def child_env(run_dir: Path, threads: int, token: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {
        "PATH": os.pathsep.join([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(run_dir), "TMPDIR": str(run_dir / "tmp"), "USER": "student", "LOGNAME": "student",
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(run_dir / ".config" / "matplotlib"), "XDG_CACHE_HOME": str(run_dir / ".cache"),
        "XDG_CONFIG_HOME": str(run_dir / ".config"), "TORCH_HOME": str(run_dir / ".cache" / "torch"),
        "KATA_DATA": str(run_dir / "data"), "NO_COLOR": "1", "COLUMNS": "100",
        "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
        "KATA_GRADE_RUN": token,
    }
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
                 "SYSTEMROOT"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def run_child(ctx: Context, run_dir: Path, skip: list[str], strikes: dict[str, int], broken: dict[str, str],
              wall: float) -> ChildRun:
    """One test process over the checks not in ``skip``, for at most ``wall`` seconds."""
    n = ctx.next_id()
    limits = ctx.limits
    results_path = ctx.private / f"results-{n}.jsonl"
    fd = os.open(results_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    args = [*ctx.checks, "--target", str(run_dir / "exercises"), "-p", "no:cacheprovider",
            "--rootdir", str(PROJECT_ROOT), "-c", str(PROJECT_ROOT / "pyproject.toml"),
            "--timeout", f"{limits.test_timeout:g}", "--timeout-method", "signal",
            "--basetemp", str(run_dir / "tmp" / "pytest"), "-q", "-s", "--tb=short", "--color=no"]
    if limits.slow:
        args.append("--slow")
    config = {
        "run_dir": str(run_dir), "project_root": str(PROJECT_ROOT), "results_fd": fd,
        "pytest_args": args, "skip": skip, "strikes": strikes, "broken": broken, "max_strikes": MAX_STRIKES,
        "isolate": limits.isolate,
        "limits": {"memory_mb": limits.memory_mb, "file_mb": limits.file_mb,
                   "test_timeout": limits.test_timeout,
                   # a backstop only (the wall clock is the limit): every thread's seconds count
                   "cpu_seconds": math.ceil(wall) * (ctx.threads + 1) + 30},
    }
    config_path = ctx.private / f"config-{n}.json"
    config_path.write_text(json.dumps(config))
    (run_dir / "tmp").mkdir(exist_ok=True)
    token = secrets.token_hex(8)
    output = OutputTail()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-B", str(CHILD), str(config_path)], cwd=run_dir,
            env=child_env(run_dir, ctx.threads, token), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, pass_fds=(fd,), start_new_session=True)
    finally:
        os.close(fd)
    with ctx.lock:
        ctx.active.add(proc)

    def pump():
        while True:
            chunk = proc.stdout.read1(1 << 16)
            if not chunk:
                break
            output.feed(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    # The check's own limit is pytest-timeout's, inside the process; this watchdog
    # ends the process when that one fails (the code swallows the time-out, or
    # is stuck where signals don't reach).
    watchdog = limits.test_timeout + max(3.0, limits.test_timeout / 2)
    follow = RunningCheck(results_path)
    killed_by = None
    try:
        while True:
            try:
                proc.wait(timeout=0.25)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            running, since = follow.poll()
            if now - start >= wall or ctx.stopping:
                killed_by = "wall"
            elif running is not None and now - since > watchdog:
                killed_by = "watchdog"
            if killed_by:
                _kill_group(proc)
                proc.wait()
                break
    finally:
        _kill_group(proc)  # whatever of its group is still there
        _sweep(token)
        with ctx.lock:
            ctx.active.discard(proc)
    reader.join(timeout=10)
    proc.stdout.close()
    seconds = time.monotonic() - start
    return ChildRun(_read_events(results_path), output, proc.returncode, killed_by, seconds)


def _read_events(path: Path) -> list[dict]:
    events = []
    try:
        with open(path, "rb") as f:
            data = f.read(RESULTS_LIMIT)
    except OSError:
        return events
    for line in data.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("e"), str):
            events.append(event)
    return events


def _describe_end(run: ChildRun) -> str:
    """How a test process that did not finish its checks ended, in words."""
    exit_event = next((e for e in reversed(run.events) if e["e"] == "exit"), None)
    code = run.returncode
    sig = None
    if exit_event is not None and isinstance(exit_event.get("signal"), int):
        sig = exit_event["signal"]
    elif exit_event is not None and isinstance(exit_event.get("code"), int):
        code = exit_event["code"]
    elif code is not None and code < 0:
        sig = -code
    if sig is not None:
        name = SIGNAL_NAMES.get(sig, f"signal {sig}")
        why = {"SIGKILL": ": out of memory, or killed", "SIGSEGV": ": a crash in native code",
               "SIGXCPU": ": it used up its CPU time", "SIGABRT": ": aborted"}.get(name, "")
        return f"was killed by {name}{why}"
    finish = next((e for e in run.events if e["e"] == "finish"), None)
    if finish is not None and finish.get("exitstatus") == 3:
        return ("ended with an internal error of pytest (the time limit of a check can strike inside "
                "pytest itself)")
    if finish is not None:
        return (f"stopped the test run early (exit status {code}: KeyboardInterrupt or pytest.exit() "
                f"in the submission's code?)")
    if code == 0:
        return "exited with status 0 in the middle of the checks (os._exit() in the submission's code?)"
    return f"exited with status {code} in the middle of the checks (os._exit() or a crash?)"


REFERENCE_TIMEOUT = 900.0  # seconds: the reference solutions are trusted, and must not be cut short


def run_submission(ctx: Context, sub: Submission, timeout: float | None = None) -> Graded:
    """Grade one submission: take its modules, run the checks (restarting after a
    crash), and collect each check's outcome."""
    limits = ctx.limits
    graded = Graded(sub.name, sub.path)
    start = time.monotonic()
    deadline = start + (timeout or limits.timeout)
    run_dir = ctx.root / f"run-{ctx.next_id()}"
    run_dir.mkdir(mode=0o700)
    graded.found, graded.problems = take_modules(sub.path, run_dir / "exercises")
    if not graded.found:
        # Nothing to import: every check fails at its module, as the kata plugin says (no process
        # needed; finish_results writes the messages once the list of checks is known).
        graded.run_dir = run_dir
        graded.seconds = time.monotonic() - start
        graded.log = "(no contract module: no test process was started; each check fails as its module is missing)"
        return graded
    strikes: Counter = Counter()
    broken: dict[str, str] = {}   # module -> why: its import ended a test process
    logs, deaths, timed_out = [], 0, False
    for attempt in range(MAX_ATTEMPTS):
        left = deadline - time.monotonic()
        if left < 1 or ctx.stopping:
            timed_out = True
            break
        run = run_child(ctx, run_dir, sorted(graded.results), dict(strikes), broken, left)
        graded.output_bytes += run.output.total
        logs.append(f"--- test process {attempt + 1} ({run.seconds:.1f} s, exit status {run.returncode}) ---\n"
                    + run.output.text())
        graded.sandbox = graded.sandbox or next((e for e in run.events if e["e"] == "sandbox"), None)
        collected = next((e["ids"] for e in run.events if e["e"] == "collected" and isinstance(e.get("ids"), list)),
                         None)
        if collected is None:
            error = next((e.get("message") for e in run.events if e["e"] == "error"), None)
            if run.killed_by == "wall":
                timed_out = True
            else:
                graded.problems.append("the checks could not start: " + (
                    str(error) if error else _last_line(run.output.text()) or _describe_end(run)))
            break
        if graded.collected is None:
            graded.collected = [str(i) for i in collected]
        new, running = _accept(run.events)
        for result in new.values():
            result["message"] = result["message"].replace(f"{run_dir}{os.sep}", "")
        for nodeid, result in new.items():
            graded.results[nodeid] = result
            if result["kind"] == "timeout":
                strikes[exercise_of(nodeid)] += 1
        left_over = [i for i in graded.collected if i not in graded.results]
        if not left_over:
            break
        if run.killed_by == "wall":
            timed_out = True
            if running is not None:
                graded.results[running] = _failed(
                    "timeout", f"not finished: the submission's time limit ({limits.timeout:g} s) ran out "
                               f"during this check")
            break
        module = _importing_at_end(run.events)
        seconds = f"{limits.test_timeout:g} s"
        if run.killed_by == "watchdog":
            kind = "timeout"
            if module is not None:
                broken[module] = (f"exercises/{module}.py did not finish importing within {seconds} (the time "
                                  f"limit of one check): does it run an endless loop or long work at its top "
                                  f"level? Keep a module's top level to definitions.")
            message = (f"did not finish within {seconds} (the time limit of one check), and did not stop when "
                       f"told to (is the time-out caught, or is the code stuck where Python can't interrupt "
                       f"it?), so its test process was ended. The checks after it ran in a fresh process.")
        else:
            kind = "crash"
            how = _describe_end(run)
            if module is not None:
                broken[module] = (f"exercises/{module}.py ended the test process while it was being imported: "
                                  f"it {how}. Keep a module's top level to definitions.")
            message = f"the test process {how}, during this check. The checks after it ran in a fresh process."
        if running is not None:
            deaths += 1
            strikes[exercise_of(running)] += 1
            graded.results[running] = _failed(kind, broken[module] if module is not None else message)
        elif not new:
            graded.problems.append(f"the test process {_describe_end(run)}, and a new one got no further")
            break
    else:
        graded.problems.append(f"the test process ended early {MAX_ATTEMPTS} times: gave up")

    graded.seconds = time.monotonic() - start
    graded.log = "\n".join(logs)
    if deaths:
        graded.problems.append(f"the test process ended early {_times(deaths)} (see the failed checks); "
                               f"the checks left were run in a fresh one")
    graded.timed_out = timed_out
    return graded


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _missing_message(run_dir: Path, module: str | None) -> str:
    """What the kata plugin says when a check touches a module that isn't there."""
    from kata.target import Target, TargetError

    try:
        Target(run_dir / "exercises").load(module or "")
    except TargetError as err:
        return str(err).replace(f"{run_dir}{os.sep}", "")
    return f"exercises/{module}.py does not exist"


def _importing_at_end(events: list[dict]) -> str | None:
    """The contract module whose import had begun and not ended when the process ended."""
    importing = None
    for event in events:
        if event["e"] == "import" and event.get("module") in CONTRACT:
            importing = event["module"]
        elif event["e"] == "imported":
            importing = None
        elif event["e"] == "start":
            importing = None
    return importing


def _failed(kind: str, message: str) -> dict:
    return {"outcome": "failed", "kind": kind, "message": message, "duration": 0.0}


def _accept(events: list[dict]) -> tuple[dict[str, dict], str | None]:
    """The results of one test process, and the check it was running when it
    ended (None if none). A "passed" is only believed for the check that was
    running (its "start" came last), so a line forged by the submission's code
    for another check counts for nothing."""
    results: dict[str, dict] = {}
    running = None
    for event in events:
        kind = event["e"]
        if kind == "start" and isinstance(event.get("id"), str):
            running = event["id"]
        elif kind == "result" and isinstance(event.get("id"), str):
            outcome = event.get("outcome")
            if outcome not in ("passed", "failed", "skipped", "not run"):
                continue
            if outcome in ("passed", "skipped") and event["id"] != running:
                continue
            duration = event.get("duration")
            results[event["id"]] = {
                "outcome": outcome, "kind": str(event.get("kind") or ""),
                "message": str(event.get("message") or "")[:20000],
                "duration": float(duration) if isinstance(duration, (int, float)) else 0.0,
            }
            if event["id"] == running:
                running = None
    return results, running


def finish_results(graded: Graded, checks: list[str], limits: Limits) -> None:
    """Every check of the reference list gets an outcome: what did not run fails."""
    timed_out = graded.timed_out
    not_run = [c for c in checks if c not in graded.results]
    for nodeid in not_run:
        if not graded.found and graded.run_dir is not None:
            graded.results[nodeid] = _failed("module", _missing_message(graded.run_dir, exercise_of(nodeid)))
            continue
        if timed_out:
            why = f"not run: the submission's time limit ({limits.timeout:g} s) ran out before this check"
        elif graded.collected is None:
            why = "not run: the checks could not start (see the status)"
        else:
            why = "not run: the test process ended before this check"
        graded.results[nodeid] = {"outcome": "not run", "kind": "not run", "message": why, "duration": 0.0}
    if timed_out:
        graded.problems.insert(0, f"timed out after {limits.timeout:g} s: {len(not_run)} "
                                  f"check{'s' if len(not_run) != 1 else ''} did not run")


# --- the reference ------------------------------------------------------------------


def _asset_files() -> list[Path]:
    files = [PROJECT_ROOT / "pyproject.toml", PROJECT_ROOT / "conftest.py", CHECKS_DIR / "conftest.py",
             Path(__file__).with_name("curriculum.toml")]
    files += sorted(CHECKS_DIR.glob("test_*.py")) + sorted(SOLUTIONS.glob("*.py"))
    files += sorted(Path(__file__).parent.glob("*.py"))
    return [f for f in files if f.is_file()]


def assets_digest() -> str:
    """A digest of everything grading trusts: the checks, the solutions, the kata."""
    h = hashlib.sha256()
    for f in _asset_files():
        h.update(str(f.relative_to(PROJECT_ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def fingerprint(limits: Limits, digest: str) -> dict:
    """What a reference run depends on; a saved one is reused only if all match."""
    gpus = len([p for p in Path("/dev").glob("nvidia[0-9]*")]) if Path("/dev").is_dir() else 0
    return {"assets": digest, "python": platform.python_version(), "machine": platform.machine(),
            "torch": _version("torch"), "torchvision": _version("torchvision"), "pytest": _version("pytest"),
            "hypothesis": _version("hypothesis"), "slow": limits.slow, "test_timeout": limits.test_timeout,
            "gpus": gpus, "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES")}


def load_reference(path: Path | None, expected: dict) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if saved.get("fingerprint") != expected or not isinstance(saved.get("results"), dict):
        return None
    return saved


def reference_record(graded: Graded, fp: dict) -> dict:
    return {"fingerprint": fp, "checks": graded.collected, "results": graded.results,
            "sandbox": graded.sandbox, "seconds": round(graded.seconds, 1),
            "created": time.strftime("%Y-%m-%d %H:%M:%S")}


@dataclass
class Scheme:
    """Each check's weight, from the reference run."""
    checks: list[str]                        # every check, in order
    weight: dict[str, float]                 # nodeid -> points (0 for an unweighted check)
    unweighted: dict[str, str]               # nodeid -> why it carries no points
    max: dict[str, float]                    # exercise -> points available here
    warnings: list[str]

    @classmethod
    def from_reference(cls, reference: dict) -> "Scheme":
        checks = [c for c in reference["checks"] if exercise_of(c) is not None]
        results = reference["results"]
        weight, unweighted, maximum, warnings = {}, {}, {}, []
        for name in CONTRACT:
            _, ex = EXERCISES[name]
            mine = [c for c in checks if exercise_of(c) == name]
            counted = [c for c in mine if results.get(c, {}).get("outcome") == "passed"]
            for c in mine:
                r = results.get(c, {})
                if c in counted:
                    continue
                if r.get("outcome") == "skipped":
                    unweighted[c] = f"skipped here ({r.get('message') or 'no reason given'})"
                else:
                    unweighted[c] = "the reference solutions do not pass it here"
                    warnings.append(f"the reference solutions fail {c} here ({r.get('kind') or r.get('outcome')}): "
                                    f"it carries no points. {_first_line(r.get('message', ''))}")
            for c in mine:
                weight[c] = ex["points"] / len(counted) if c in counted else 0.0
            maximum[name] = float(ex["points"]) if counted else 0.0
            if not mine:
                warnings.append(f"exercise '{name}' has no checks here (tests/test_{name}.py): "
                                f"its {ex['points']} points are not graded")
            elif not counted:
                warnings.append(f"no check of exercise '{name}' runs here: its {ex['points']} points are not graded")
        return cls(checks, weight, unweighted, maximum, warnings)

    @property
    def total(self) -> float:
        return math.fsum(self.max.values())


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0][:200] if (text or "").strip() else ""


# --- scoring and reports ---------------------------------------------------------------


@dataclass
class Score:
    name: str
    exercises: dict[str, float]
    passed: dict[str, int]
    counted: dict[str, int]
    total: float
    status: str


def score(graded: Graded, scheme: Scheme) -> Score:
    exercises, passed, counted = {}, {}, {}
    for name in CONTRACT:
        mine = [c for c in scheme.checks if exercise_of(c) == name and scheme.weight[c] > 0]
        ok = [c for c in mine if graded.results.get(c, {}).get("outcome") == "passed"]
        exercises[name] = math.fsum(scheme.weight[c] for c in ok)
        passed[name], counted[name] = len(ok), len(mine)
    return Score(graded.name, exercises, passed, counted, math.fsum(exercises.values()), status_of(graded))


def status_of(graded: Graded) -> str:
    """'ok', or what went wrong, in plain words."""
    notes = list(graded.problems)
    if not graded.found and not any("zip" in p for p in notes):
        notes.append("no contract module found (an empty submission?)")
    elif graded.found:
        missing = [f"{m}.py" for m in CONTRACT if m not in graded.found]
        if missing:
            notes.append("missing: " + ", ".join(missing))
    broken = []
    for r in graded.results.values():
        m = re.match(r"exercises/(\w+)\.py (failed to import|did not finish importing)", r.get("message", ""))
        if m and f"{m.group(1)}.py" not in broken:
            broken.append(f"{m.group(1)}.py")
    if broken:
        notes.append(", ".join(broken) + (" fails" if len(broken) == 1 else " fail") + " to import")
    kinds = Counter(r.get("kind") for r in graded.results.values())
    if kinds["timeout"]:
        notes.append(f"{kinds['timeout']} check{'s' if kinds['timeout'] > 1 else ''} timed out")
    if kinds["memory"]:
        notes.append(f"{kinds['memory']} check{'s' if kinds['memory'] > 1 else ''} ran out of memory")
    if kinds["struck"]:
        notes.append(f"{kinds['struck']} check{'s' if kinds['struck'] > 1 else ''} not run after repeated "
                     f"timeouts or crashes in their exercise")
    if graded.output_bytes > 1 << 20:
        notes.append(f"printed {_size(graded.output_bytes)} of output (the log keeps its start and end)")
    return "; ".join(notes) if notes else "ok"


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def _fence(text: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"


def _pct(total: float, maximum: float) -> float:
    return round(100 * total / maximum, 1) if maximum else 0.0


def feedback_markdown(graded: Graded, s: Score, scheme: Scheme) -> str:
    lines = [f"# device-kata: feedback for {graded.name}", "",
             f"**Score: {s.total:.2f} / {scheme.total:g} ({_pct(s.total, scheme.total):.1f}%)**", ""]
    if s.status != "ok":
        lines += [f"While grading: {s.status}.", ""]
    lines += ["| # | exercise | points | checks passed |", "|---|---|---|---|"]
    for name in CONTRACT:
        number, ex = EXERCISES[name]
        if scheme.max[name]:
            lines.append(f"| {number} | {name} | {s.exercises[name]:.2f} / {scheme.max[name]:g} | "
                         f"{s.passed[name]} / {s.counted[name]} |")
        else:
            lines.append(f"| {number} | {name} | not graded here | - |")
    lines.append("")
    for name in CONTRACT:
        number, ex = EXERCISES[name]
        mine = [c for c in scheme.checks if exercise_of(c) == name]
        failing = [c for c in mine if scheme.weight[c] > 0 and graded.results.get(c, {}).get("outcome") != "passed"]
        free = [c for c in mine if scheme.weight[c] == 0]
        heading = f"## {number}. {name}: {ex['title']}"
        if not scheme.max[name]:
            lines += [heading, "", "Not graded here: none of its checks runs on this machine.", ""]
            continue
        if not failing and not free:
            lines += [heading, "", f"{s.exercises[name]:.2f} / {scheme.max[name]:g}: every check passes.", ""]
            continue
        lines += [heading, "", f"{s.exercises[name]:.2f} / {scheme.max[name]:g}: {s.passed[name]} of "
                                f"{s.counted[name]} checks pass."]
        if free:
            reasons = sorted({scheme.unweighted[c] for c in free})
            lines += ["", f"{len(free)} check{'s' if len(free) > 1 else ''} of this exercise carr"
                          f"{'y' if len(free) > 1 else 'ies'} no points here ({'; '.join(reasons)}); its "
                          f"{scheme.max[name]:g} points are shared among the other {s.counted[name]}."]
        if failing:
            lines += ["", f"Hint (`kata hint {name}`):", "",
                      textwrap.indent(ex["hint"].strip(), "> ", lambda _: True), "",
                      f"Run these checks on your own machine with `pytest exercises/{name}.py`.", ""]
            groups: dict[str, list[str]] = {}
            for c in failing:
                r = graded.results.get(c, {})
                groups.setdefault(r.get("message") or r.get("outcome", "failed"), []).append(c)
            for message, same in groups.items():
                if len(same) == 1:
                    lines += [f"### {check_name(same[0])}", ""]
                else:
                    names = ", ".join(f"`{check_name(c)}`" for c in same[:12])
                    more = f" and {len(same) - 12} more" if len(same) > 12 else ""
                    lines += [f"### {len(same)} checks, one message", "", f"{names}{more}:", ""]
                lines += [_fence(message), ""]
        else:
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def gradescope_results(graded: Graded, s: Score, scheme: Scheme, feedback: str) -> dict:
    """The submission in Gradescope's results.json format (Autograder Specifications):
    a top-level score (it overrides the tests' sum), one test per check with its
    weight as max_score, and the feedback as the top-level output."""
    tests = []
    for name in CONTRACT:
        number, _ = EXERCISES[name]
        for k, c in enumerate([c for c in scheme.checks if exercise_of(c) == name], 1):
            r = graded.results.get(c, {})
            test = {"name": f"{number}. {name}: {check_name(c)}", "number": f"{number}.{k}",
                    "visibility": "visible", "tags": [name]}
            w = scheme.weight[c]
            if w > 0:
                ok = r.get("outcome") == "passed"
                test.update(score=round(w, 4) if ok else 0.0, max_score=round(w, 4),
                            status="passed" if ok else "failed",
                            output="" if ok else (r.get("message") or r.get("outcome", "failed")))
            else:
                test.update(score=0.0, max_score=0.0, output=f"carries no points: {scheme.unweighted[c]}")
            tests.append(test)
    return {"score": round(s.total, 2), "execution_time": round(graded.seconds),
            "output": feedback, "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def log_text(graded: Graded, s: Score | None, limits: Limits) -> str:
    head = [f"submission: {graded.name} ({graded.path})",
            f"modules taken: {', '.join(graded.found) or 'none'}",
            f"status: {s.status if s else status_of(graded)}",
            f"limits: {limits.describe()}",
            f"sandbox: {describe_sandbox(graded.sandbox)}",
            f"seconds: {graded.seconds:.1f}", ""]
    return "\n".join(head) + graded.log


def describe_sandbox(sandbox: dict | None) -> str:
    if not sandbox:
        return "unknown (the test process did not report)"
    text = (f"network: {sandbox.get('network')}; files: {sandbox.get('files')}; processes: "
            f"{sandbox.get('processes')}; privileges: {sandbox.get('privileges')}; limits: {sandbox.get('limits')}")
    notes = sandbox.get("notes") or []
    return text + (f" ({'; '.join(map(str, notes))})" if notes else "")


def class_table(scores: list[Score], scheme: Scheme) -> str:
    width = max([10] + [len(s.name) for s in scores])
    cols = [n for n in CONTRACT]
    head = f"  {'submission':<{width}} " + " ".join(f"{n:>8}" for n in cols) + f" {'total':>7} {'%':>6}  status"
    rows = [head]
    for s in scores:
        cells = " ".join(f"{s.exercises[n]:>8.2f}" for n in cols)
        status = s.status if len(s.status) <= 60 else s.status[:57] + "..."
        rows.append(f"  {s.name:<{width}} {cells} {s.total:>7.2f} {_pct(s.total, scheme.total):>6.1f}  {status}")
    rows.append(f"  {'max':<{width}} " + " ".join(f"{scheme.max[n]:>8g}" for n in cols) + f" {scheme.total:>7g}")
    return "\n".join(rows)


def _money(x: float) -> float:
    return round(x + 0.0, 2)


def write_outputs(out: Path, graded: list[Graded], scores: list[Score], scheme: Scheme, limits: Limits,
                  reference: dict, extra: dict) -> None:
    """Write DIR's files into a staging folder, then put them in place (the
    folders results/, feedback/, logs/ are replaced as a whole)."""
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".kata-grade-", dir=out))
    try:
        for sub in ("results", "feedback", "logs"):
            (staging / sub).mkdir()
        with open(staging / "grades.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["submission", *CONTRACT, "total", "max", "percent", "status"])
            for s in scores:
                writer.writerow([s.name, *(f"{s.exercises[n]:.2f}" for n in CONTRACT), f"{s.total:.2f}",
                                 f"{scheme.total:g}", f"{_pct(s.total, scheme.total):.1f}", s.status])
        summary = {
            "max": {n: scheme.max[n] for n in CONTRACT},
            "submissions": {s.name: {"exercises": {n: _money(s.exercises[n]) for n in CONTRACT},
                                     "total": _money(s.total), "percent": _pct(s.total, scheme.total),
                                     "status": s.status} for s in scores},
            "total": scheme.total, "warnings": scheme.warnings, "limits": limits.__dict__, **extra,
        }
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        for g, s in zip(graded, scores):
            feedback = feedback_markdown(g, s, scheme)
            (staging / "feedback" / f"{g.name}.md").write_text(feedback)
            (staging / "results" / f"{g.name}.json").write_text(
                json.dumps(gradescope_results(g, s, scheme, feedback), indent=1) + "\n")
            (staging / "logs" / f"{g.name}.log").write_text(log_text(g, s, limits))
        (staging / "reference.json").write_text(json.dumps(reference, indent=1) + "\n")
        for name in ("results", "feedback", "logs"):
            if (out / name).is_dir() and not (out / name).is_symlink():
                shutil.rmtree(out / name)
            elif (out / name).exists() or (out / name).is_symlink():
                (out / name).unlink()
            os.replace(staging / name, out / name)
        for name in ("grades.csv", "summary.json", "reference.json"):
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --- the whole run ---------------------------------------------------------------------


def grade(paths: list[str | Path], out: str | Path, limits: Limits | None = None, jobs: int | None = None,
          reference: str | Path | None = None, progress: bool = True, keep: bool = False,
          echo=print) -> list[Score]:
    """Grade ``paths`` into ``out``; return the scores (in the order given)."""
    limits = limits or Limits()
    jobs = max(1, jobs or os.cpu_count() or 1)
    subs = name_submissions(paths)
    out = Path(out).expanduser().resolve()
    reference_path = Path(reference).expanduser().resolve() if reference else out / "reference.json"
    digest = assets_digest()
    fp = fingerprint(limits, digest)
    saved = load_reference(reference_path, fp)
    ctx = Context(limits, jobs)
    start = time.monotonic()
    from tqdm import tqdm

    bar = tqdm(total=len(subs), desc="kata grade", unit="submission", disable=not progress or not subs,
               file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    say = (lambda text: bar.write(text, file=sys.stderr)) if progress else (lambda text: None)
    results: dict[str, Graded] = {}
    ref_graded = None
    told_sandbox = False
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {}
            if saved is None:
                reference_run = Submission("reference", SOLUTIONS)
                wall = max(limits.timeout, REFERENCE_TIMEOUT)
                futures[pool.submit(run_submission, ctx, reference_run, wall)] = None
            else:
                say(f"reference solutions: reusing {reference_path} ({len(saved['checks'])} checks)")
            for sub in subs:
                futures[pool.submit(run_submission, ctx, sub)] = sub
            try:
                for future in as_completed(futures):
                    sub = futures[future]
                    graded = future.result()
                    if graded.sandbox and not told_sandbox:
                        say(f"sandbox: {describe_sandbox(graded.sandbox)}")
                        told_sandbox = True
                    if sub is None:
                        ref_graded = graded
                        passed = sum(r["outcome"] == "passed" for r in graded.results.values())
                        say(f"reference solutions: {passed}/{len(graded.collected or [])} checks pass "
                            f"({graded.seconds:.1f} s)")
                        if graded.collected is None or graded.problems:
                            raise GradeError("the reference solutions could not be checked here: "
                                             + "; ".join(graded.problems or ["no checks were collected"])
                                             + "\n" + _last_lines(graded.log, 15))
                    else:
                        results[sub.name] = graded
                        bar.update(1)
                        bar.set_postfix_str(sub.name, refresh=False)
            except BaseException:
                ctx.stop()
                for future in futures:
                    future.cancel()
                raise
    finally:
        bar.close()
        if not keep:
            ctx.cleanup()
        else:
            echo(f"kata grade: working folders kept in {ctx.root}")
    sandboxes = [g.sandbox for g in [ref_graded, *results.values()] if g is not None and g.sandbox]
    files_guarded = bool(sandboxes) and all(
        (sb or {}).get("files") == "read-only outside its own folder" for sb in sandboxes)
    if not files_guarded and assets_digest() != digest:
        raise GradeError("the checks, the solutions or the kata's own files changed while grading (a submission "
                         "wrote to them?): these grades can't be trusted. Restore the project (git status) and "
                         "grade again.")
    reference_data = saved or reference_record(ref_graded, fp)
    scheme = Scheme.from_reference(reference_data)
    if saved is None and reference_path != out / "reference.json":
        try:
            reference_path.parent.mkdir(parents=True, exist_ok=True)
            reference_path.write_text(json.dumps(reference_data, indent=1) + "\n")
        except OSError as err:
            echo(f"kata grade: could not save the reference run to {reference_path}: {err}")
    graded_list = [results[s.name] for s in subs]
    for g in graded_list:
        finish_results(g, scheme.checks, limits)
    scores = [score(g, scheme) for g in graded_list]
    seconds = time.monotonic() - start
    sandbox = (ref_graded.sandbox if ref_graded else None) or next((g.sandbox for g in graded_list if g.sandbox),
                                                                       saved.get("sandbox") if saved else None)
    extra = {"seconds": round(seconds, 1), "jobs": jobs, "sandbox": describe_sandbox(sandbox),
             "checks": len(scheme.checks), "weighted_checks": sum(1 for w in scheme.weight.values() if w > 0)}
    write_outputs(out, graded_list, scores, scheme, limits, reference_data, extra)
    for warning in scheme.warnings:
        echo(f"warning: {warning}")
    if subs:
        echo(f"kata grade: {len(subs)} submission{'s' if len(subs) != 1 else ''} in {seconds:.1f} s "
             f"({seconds / len(subs):.1f} s each with --jobs {jobs}); {limits.describe()}")
        echo(class_table(scores, scheme))
    echo(f"wrote {out}/grades.csv, summary.json, results/ (Gradescope), feedback/, logs/, reference.json")
    return scores


def _last_lines(text: str, n: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def fallback_results(message: str) -> dict:
    """A results.json that says the autograder itself failed (so Gradescope shows why)."""
    return {"score": 0.0, "output": f"The autograder could not grade this submission: {message}\n"
                                    f"Tell your teacher; resubmitting will not help until it is fixed.",
            "tests": []}


def run_from_args(args) -> int:
    """`kata grade` (see kata/cli.py for the options)."""
    limits = Limits(timeout=args.timeout, test_timeout=args.test_timeout, memory_mb=args.memory,
                    slow=args.slow, isolate=not args.no_sandbox)
    results_json = Path(args.gradescope_results) if args.gradescope_results else None
    if results_json and len(args.submissions) != 1:
        print("kata grade: --gradescope-results takes exactly one submission", file=sys.stderr)
        return 2
    try:
        grade(args.submissions, args.out, limits, jobs=args.jobs, reference=args.reference,
              progress=not args.quiet, keep=args.keep)
    except GradeError as err:
        print(f"kata grade: {err}", file=sys.stderr)
        if results_json:
            _write_json(results_json, fallback_results(str(err)))
        return 1
    except BaseException as err:
        if results_json and not isinstance(err, KeyboardInterrupt):
            _write_json(results_json, fallback_results(f"{type(err).__name__}: {err}"))
        raise
    if results_json:
        name = name_submissions(args.submissions)[0].name
        results_json.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(args.out) / "results" / f"{name}.json", results_json)
    return 0


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
