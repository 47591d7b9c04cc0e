"""Running a submission's checks: test processes, their limits, and the end of every process they start.

One submission gets a fresh folder with a copy of its modules (kata/grading/intake.py),
its source is vetted (kata/grading/vetting.py), and the pristine checks run
against it in a test process (kata/grading/child.py) forked from the zygote
(kata/grading/spawner.py, kata/grading/zygote.py) inside the sandbox
(kata/grading/sandbox.py). If that process dies (``os._exit``, a crash, the
memory ceiling), the check that was running fails with the reason and a fresh
process runs the rest; an exercise that times out or kills the process twice
has its remaining checks failed without running them. The wall-clock limit of
the submission, the time limit of one check (pytest-timeout inside, a watchdog
outside) and the memory of all its processes together are the grader's to
enforce, from this process's one thread per job: it reads the test process's
output, follows its signed results (kata/grading/channel.py), and, once it
ends or must end, ends every process the submission started (its cgroup, its
user, its marker) before any result is read. Nothing a submission does can
keep this thread waiting past its limits.
"""

from __future__ import annotations

import math
import os
import secrets
import select
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kata import curriculum
from kata.grading import channel, procs
from kata.grading.events import (
    ChildRun,
    OutputTail,
    RunningCheck,
    accept,
    describe_end,
    failed,
    importing_at_end,
    read_events,
)
from kata.grading.intake import Submission, take_modules
from kata.grading.results import Graded
from kata.grading.sandbox import Plan
from kata.grading.spawner import Spawner
from kata.grading.vetting import vet_folder
from kata.project import Project

__all__ = ["MAX_ATTEMPTS", "MAX_STRIKES", "Limits", "Session", "Slot", "run_child", "run_submission"]

MAX_STRIKES = 2      # timeouts or process deaths in one exercise before the rest is not run
MAX_ATTEMPTS = 8     # test processes per submission at most
POLL = 0.2           # seconds between looks at a running test process


@dataclass
class Limits:
    timeout: float = 300.0      # wall-clock seconds for a whole submission
    test_timeout: float = 30.0  # seconds for one check
    memory_mb: int = 4096       # all of a submission's processes together (and each one)
    processes: int = 128        # processes and threads of a submission at once
    file_mb: int = 256          # largest file a test process may write
    slow: bool = False          # also run the checks marked slow
    isolate: bool = True        # a sandbox (bubblewrap, else hand-written namespaces) where the platform allows

    def describe(self) -> str:
        return (f"{self.test_timeout:g} s per check, {self.timeout:g} s per submission, "
                f"{self.memory_mb:,} MB of memory" + (", slow checks included" if self.slow else ""))


@dataclass
class Session:
    """What every test process of one ``kata grade`` shares."""

    limits: Limits
    project: Project
    plan: Plan
    work: Path                          # the grader's working folder: run-N/ and private/
    jobs: int = 1
    out: Path | None = None
    counter: int = 0
    stopping: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    active: set = field(default_factory=set)   # pids of the test processes running now
    spawner: Spawner | None = None

    def __post_init__(self):
        self.threads = max(1, (os.cpu_count() or 1) // self.jobs)
        self.private = self.work / "private"
        self.private.mkdir(mode=0o700, exist_ok=True)
        self.checks = [str(self.project.checks_of(name)) for name in curriculum.names()
                       if self.project.checks_of(name).is_file()]

    def next_id(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    def start_spawner(self) -> None:
        """The zygote every test process is forked from (kata/grading/zygote.py), in the sandbox."""
        env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
               "HOME": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "MPLBACKEND": "Agg",
               "PYTORCH_NVML_BASED_CUDA_CHECK": "1",   # asking whether there is CUDA must not start it before a fork
               "MPLCONFIGDIR": "/tmp/.kata-zygote-matplotlib", "KATA_HOME": str(self.project.root),
               "OMP_NUM_THREADS": str(self.threads), "NO_COLOR": "1"}
        # Without the kata's plugin: nothing is selected, no accelerator chosen (CUDA and the simulated
        # one must first be touched after the fork); the checks' modules are only imported.
        collect = ["-p", "no:kata", "-p", "no:kata.harness.plugin", "-p", "no:cacheprovider", "-o", "addopts=",
                   "--rootdir", str(self.project.root), "-c", str(self.project.root / "pyproject.toml"),
                   "-W", "ignore::pytest.PytestAssertRewriteWarning", *self.checks]
        self.spawner = Spawner(self.plan.zygote_prefix(self.work), env, self.work, collect)
        self.spawner.start()

    def stop(self) -> None:
        """Ctrl-C: end every running test process."""
        self.stopping = True
        with self.lock:
            running = list(self.active)
        for pid in running:
            _kill_group(pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _child_env(session: Session, sandbox_dir: str, token: str) -> dict[str, str]:
    threads = str(session.threads)
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": sandbox_dir, "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp" if session.plan.files == "bubblewrap" else f"{sandbox_dir}/tmp",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{sandbox_dir}/.config/matplotlib",
        "XDG_CACHE_HOME": f"{sandbox_dir}/.cache", "XDG_CONFIG_HOME": f"{sandbox_dir}/.config",
        "TORCH_HOME": f"{sandbox_dir}/.cache/torch", "KATA_DATA": f"{sandbox_dir}/data",
        "KATA_HOME": str(session.project.root), "NO_COLOR": "1", "COLUMNS": "100",
        "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
        "KATA_GRADE_RUN": token,
    }
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@dataclass
class Slot:
    """One submission's share of the sandbox: its folder, its user, its cgroup."""

    run_dir: Path
    uid: int | None = None
    group: object = None
    token: str = field(default_factory=lambda: secrets.token_hex(8))

    def prepare(self) -> None:
        """Hand the folder to the submission's user."""
        (self.run_dir / "tmp").mkdir(exist_ok=True)
        if self.uid is not None:
            for folder, dirs, files in os.walk(self.run_dir):
                for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                    os.lchown(name, self.uid, self.uid)

    def leftovers(self, child: int | None) -> list[int]:
        """Processes of this submission still there."""
        found = set(self.group.pids()) if self.group is not None else set()
        if self.uid is not None:
            found.update(procs.with_uid(self.uid))
        else:
            found.update(procs.with_marker(f"KATA_GRADE_RUN={self.token}".encode()))
            if child is not None:
                found.update(procs.descendants(child))
        found.discard(os.getpid())
        return sorted(found)

    def end_all(self, child: int | None) -> int:
        """End every process of this submission; returns how many could not be ended (0)."""
        if child is not None:
            _kill_group(child)
        if self.group is not None:
            self.group.kill()
        procs.end(lambda: self.leftovers(child))
        return len(self.leftovers(None))

    def memory(self) -> int:
        """Resident memory of all its processes together (where no cgroup counts it)."""
        return procs.memory_of(self.leftovers(None))


def _config(session: Session, slot: Slot, skip: list[str], strikes: dict[str, int], broken: dict[str, str],
            wall: float) -> dict:
    """What a test process needs to know (kata/grading/child.py)."""
    limits, plan = session.limits, session.plan
    inside = plan.sandbox_dir(slot.run_dir)
    args = [*session.checks, "--target", f"{inside}/exercises", "-p", "no:cacheprovider",
            "--rootdir", str(session.project.root), "-c", str(session.project.root / "pyproject.toml"),
            "--timeout", f"{limits.test_timeout:g}", "--timeout-method", "signal",
            "--basetemp", f"{inside}/tmp/pytest", "-q", "-s", "--tb=short", "--color=no",
            "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    if limits.slow:
        args.append("--slow")
    return {
        "mode": plan.files, "run_dir": inside, "host_run_dir": str(slot.run_dir.resolve()),
        "hide": plan.hidden(session.out, session.work.resolve()), "keep": plan.kept(),
        "pytest_args": args, "skip": skip,
        "strikes": strikes, "broken": broken, "max_strikes": MAX_STRIKES, "uid": slot.uid, "gid": slot.uid,
        "env": _child_env(session, inside, slot.token),
        "forbidden": [] if plan.files == "bubblewrap" else plan.hidden(session.out, session.work.resolve()),
        "limits": {"memory_mb": limits.memory_mb, "file_mb": limits.file_mb, "test_timeout": limits.test_timeout,
                   "processes": limits.processes if slot.uid is not None else 0,
                   # a backstop only (the wall clock is the limit): every thread's seconds count
                   "cpu_seconds": math.ceil(wall) * (session.threads + 1) + 30},
    }


def run_child(session: Session, slot: Slot, skip: list[str], strikes: dict[str, int], broken: dict[str, str],
              wall: float) -> ChildRun:
    """One test process over the checks not in ``skip``, for at most ``wall`` seconds."""
    config = _config(session, slot, skip, strikes, broken, wall)
    key = config["key"] = channel.new_key()
    results_path = session.private / f"results-{session.next_id()}.jsonl"
    results = os.open(results_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    out_r, out_w = os.pipe()
    go_r, go_w = os.pipe()
    output = OutputTail()
    start = time.monotonic()
    try:
        pid = session.spawner.spawn(config, results, out_w, go_r)
    finally:
        for fd in (results, out_w, go_r):
            os.close(fd)
    with session.lock:
        session.active.add(pid)
    killed_by, status = None, None
    try:
        if slot.group is not None:
            slot.group.add(pid)
        os.write(go_w, b"1")
        killed_by = _watch(session, slot, pid, out_r, output, RunningCheck(results_path, key), start, wall)
    finally:
        os.close(go_w)
        leftovers = slot.end_all(pid)
        status = session.spawner.wait(pid, timeout=10)
        _drain(out_r, output)
        with session.lock:
            session.active.discard(pid)
    returncode = None if status is None else (-os.WTERMSIG(status) if os.WIFSIGNALED(status)
                                              else os.WEXITSTATUS(status))
    events, forged = read_events(results_path, key)
    return ChildRun(events, output, returncode, killed_by, time.monotonic() - start, leftovers, forged)


def _watch(session: Session, slot: Slot, pid: int, stream: int, output: OutputTail, follow: RunningCheck,
           start: float, wall: float) -> str | None:
    """Read the process's output until it ends, or until a limit says to end it (returns which)."""
    limits = session.limits
    # The check's own limit is pytest-timeout's, inside the process; this watchdog ends the
    # process when that one fails (the time-out is caught, or the code is stuck where signals don't reach).
    watchdog = limits.test_timeout + max(3.0, limits.test_timeout / 2)
    ceiling = limits.memory_mb * 2**20
    os.set_blocking(stream, False)
    last_memory = 0.0
    oom_before = slot.group.oom_kills() if slot.group is not None else 0
    while True:
        ready, _, _ = select.select([stream], [], [], POLL)
        if ready:
            _read_some(stream, output)
        if session.spawner.exit_status(pid) is not None:
            return "memory" if slot.group is not None and slot.group.oom_kills() > oom_before else None
        now = time.monotonic()
        running, since = follow.poll()
        if now - start >= wall or session.stopping:
            return "wall"
        if running is not None and now - since > watchdog:
            return "watchdog"
        if slot.group is None and now - last_memory > 0.5:
            last_memory = now
            if slot.memory() > ceiling:
                return "memory"


def _read_some(stream: int, output: OutputTail, budget: int = 1 << 22) -> bool:
    """Read what is there (up to ``budget`` bytes); False at the end of the stream."""
    while budget > 0:
        try:
            chunk = os.read(stream, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        output.feed(chunk)
        budget -= len(chunk)
    return True


def _drain(stream: int, output: OutputTail) -> None:
    """What is left in the pipe, for half a second at most; then it is closed, from this thread."""
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.05)
        if ready and not _read_some(stream, output):
            break
    os.close(stream)


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def run_submission(session: Session, sub: Submission, timeout: float | None = None) -> Graded:
    """Grade one submission: take and vet its modules, run the checks (a fresh process after a
    crash), collect each check's outcome, and end every process it started."""
    limits, plan = session.limits, session.plan
    graded = Graded(sub.name, sub.path)
    start = time.monotonic()
    run_dir = session.work / f"run-{session.next_id()}"
    run_dir.mkdir(mode=0o700)
    graded.found, graded.problems = take_modules(sub.path, run_dir / "exercises")
    graded.flags = [str(f) for f in vet_folder(run_dir / "exercises", graded.found)]
    if not graded.found:
        graded.run_dir = run_dir
        graded.seconds = time.monotonic() - start
        graded.log = "(no exercise module: no test process was started; each check fails as its module is missing)"
        return graded
    slot = Slot(run_dir)
    try:
        if plan.uids is not None:
            slot.uid = plan.uids.acquire()
        if plan.cgroups is not None:
            slot.group = plan.cgroups.group(limits.memory_mb * 2**20, limits.processes)
        slot.prepare()
        _run_checks(session, slot, graded, start + (timeout or limits.timeout))
    finally:
        slot.end_all(None)
        if slot.group is not None:
            slot.group.remove()
        if slot.uid is not None:
            plan.uids.release(slot.uid)
    graded.seconds = time.monotonic() - start
    return graded


def _run_checks(session: Session, slot: Slot, graded: Graded, deadline: float) -> None:
    limits = session.limits
    names = curriculum.names()
    inside = session.plan.sandbox_dir(slot.run_dir)
    strikes: Counter = Counter()
    broken: dict[str, str] = {}   # module -> why: its import ended a test process
    logs, deaths = [], 0
    for attempt in range(MAX_ATTEMPTS):
        left = deadline - time.monotonic()
        if left < 1 or session.stopping:
            graded.timed_out = True
            break
        run = run_child(session, slot, sorted(graded.results), dict(strikes), broken, left)
        graded.output_bytes += run.output.total
        cpu = next((e for e in run.events if e["e"] == "cpu"), {})
        used = f", {cpu['seconds']} s of CPU ({cpu.get('system')} s in the system)" if cpu.get("seconds") else ""
        logs.append(f"--- test process {attempt + 1} ({run.seconds:.1f} s{used}"
                    + f", exit status {run.returncode}) ---\n" + run.output.text())
        if run.leftovers:
            graded.problems.append(f"{run.leftovers} of its processes could not be ended")
        if run.forged:
            flag = (f"the results channel: {run.forged} line{'s' if run.forged != 1 else ''} not signed by the test "
                    f"process's plugin (forged verdicts: not believed) (found by the grader)")
            if flag not in graded.flags:
                graded.flags.append(flag)
        graded.sandbox = graded.sandbox or next((e for e in run.events if e["e"] == "sandbox"), None)
        for event in run.events:
            if event["e"] == "flag":
                flag = f"{event.get('where')}: {event.get('what')} ({event.get('by')})"
                if flag not in graded.flags:
                    graded.flags.append(flag)
        collected = next((e["ids"] for e in run.events if e["e"] == "collected" and isinstance(e.get("ids"), list)),
                         None)
        if collected is None:
            error = next((e.get("message") for e in run.events if e["e"] == "error"), None)
            if run.killed_by == "wall":
                graded.timed_out = True
            else:
                graded.problems.append("the checks could not start: " + (
                    str(error) if error else _last_line(run.output.text()) or describe_end(run, limits.memory_mb)))
            break
        if graded.collected is None:
            graded.collected = [str(i) for i in collected]
        new, running = accept(run.events)
        for nodeid, result in new.items():
            for prefix in (f"{inside}/", f"{slot.run_dir}{os.sep}"):
                result["message"] = result["message"].replace(prefix, "")
            graded.results[nodeid] = result
            if result["kind"] == "timeout":
                exercise = curriculum.exercise_of(nodeid)
                strikes[exercise.name if exercise else None] += 1
        if all(i in graded.results for i in graded.collected):
            break
        if run.killed_by == "wall":
            graded.timed_out = True
            if running is not None:
                graded.results[running] = failed(
                    "timeout", f"not finished: the submission's time limit ({limits.timeout:g} s) ran out "
                               f"during this check")
            break
        module = importing_at_end(run.events, names)
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
            kind = "memory" if run.killed_by == "memory" else "crash"
            how = describe_end(run, limits.memory_mb)
            if module is not None:
                broken[module] = (f"exercises/{module}.py ended the test process while it was being imported: "
                                  f"it {how}. Keep a module's top level to definitions.")
            message = f"the test process {how}, during this check. The checks after it ran in a fresh process."
        if running is not None:
            deaths += 1
            exercise = curriculum.exercise_of(running)
            strikes[exercise.name if exercise else None] += 1
            graded.results[running] = failed(kind, broken[module] if module is not None else message)
        elif not new:
            graded.problems.append(f"the test process {describe_end(run, limits.memory_mb)}, and a new one "
                                   f"got no further")
            break
    else:
        graded.problems.append(f"the test process ended early {MAX_ATTEMPTS} times: gave up")
    graded.log = "\n".join(logs)
    if deaths:
        graded.problems.append(f"the test process ended early {_times(deaths)} (see the failed checks); "
                               f"the checks left were run in a fresh one")
