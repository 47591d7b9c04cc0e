"""Where the kata's time goes: every figure of its speed targets, in one run, as ratios to the import floor.

    python scripts/profile.py                         # everything; each pytest run 3 times (the median)
    python scripts/profile.py --repeat 1 --no-grade   # a quicker look: no grading, each run once
    python scripts/profile.py --watch devices         # kata watch timed on the first exercise only
    python scripts/profile.py --json FILE --check     # the figures as JSON too; exit 1 if one misses its target

It prints, measured on this machine in this run:

- the import floor: ``python -c "import torch, torchvision, matplotlib.pyplot"``, what any run of the
  checks pays before its first check;
- one exercise's run, as a learner types it (``pytest exercises/NAME.py``), on its untouched stub and
  on the reference solution, for each exercise (target: at most 1.3x the floor);
- ``pytest solutions`` (at most 2.0x the floor), and its ten slowest checks (from its report log);
- ``kata watch``: its first round, then a save to its verdict, on a stub and on the solution of each
  exercise, and how much of that is not the checks' own time (at most 1.5 s);
- ``kata grade``: N copies of solutions/ (default 8) graded, seconds per submission per core (wall time
  x cores / N, the servers' start and the reference's grading included), then 2N copies: what each
  submission costs per core past that start (at most 1.0x the CPU time of ``pytest solutions`` in this run:
  what it costs the cores, the second core's helper included, kata/harness/prefetch.py).

Each pytest figure is given in wall time (what a learner waits) and CPU time, each over the floor's:
the CPU ratios move less when the machine is busy (tests/selftest/test_profile.py holds them to a
recorded baseline, tests/selftest/profile-baseline.json, written with ``--json``). The stubs are the
pristine ones (kata.pristine), in a folder of their own, so a checkout whose exercises/ hold work is
measured as a fresh clone is. Python writes its bytecode caches as it does by default (a set
``PYTHONDONTWRITEBYTECODE`` is left out of the runs' environment, and each command runs once untimed
first, unless ``--no-warmup``). The CI target (``.ci/run`` in at most 20 minutes on 2 cores) is
measured by CI itself: it prints its time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kata import curriculum, pristine  # noqa: E402

FLOOR = [sys.executable, "-c", "import torch, torchvision, matplotlib.pyplot"]
# (what, the most it may cost, as a multiple of what): the targets of issue #26.
TARGETS = {
    "exercise": (1.3, "floor"),          # one exercise's run, stub or solution
    "solutions": (2.0, "floor"),         # pytest solutions
    "watch": (1.5, "seconds"),           # kata watch: a save to its verdict, past the checks' own time
    "grade": (1.0, "pytest solutions"),  # per correct submission per core, over its CPU time (#33)
}


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MPLBACKEND"] = "Agg"
    env.pop("KATA_LANG", None)
    return env


def timed(argv: list[str], cwd: Path, ok=(0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and the processes it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=environment())
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        sys.exit(f"{' '.join(argv[:6])} ... exited with {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def ratio(value: float, base: float) -> float:
    return value / base if base else float("nan")


# --- the pytest runs ----------------------------------------------------------------------------


def runs_named(names: list[str] | None = None) -> list[str]:
    """The pytest runs measured (of the exercises ``names``, default all), as a learner types them."""
    return [*(f"{folder}/{ex.name}.py" for ex in curriculum.exercises() if names is None or ex.name in names
              for folder in ("exercises", "solutions")), "solutions"]


def runs(stubs: Path, repeat: int, logs: Path, warmup: bool = True, names: list[str] | None = None) -> dict:
    """Medians of the floor, each exercise's run on its stub and solution, and pytest solutions, in wall
    and CPU seconds; the floor is measured between the others, so a machine that slows down moves both.
    Each run keeps its report log in ``logs`` (the checks' own time, the slowest checks)."""
    commands = {}
    for ex in (ex for ex in curriculum.exercises() if names is None or ex.name in names):
        # A stub fails its checks (pytest's exit code 1); the solution passes them.
        commands[f"exercises/{ex.name}.py"] = (pytest(f"exercises/{ex.name}.py",
                                                      f"--report-log={logs}/{ex.name}.stub.jsonl"), stubs.parent, (1,))
        commands[f"solutions/{ex.name}.py"] = (pytest(f"solutions/{ex.name}.py",
                                                      f"--report-log={logs}/{ex.name}.solution.jsonl"), ROOT, (0,))
    commands["solutions"] = (pytest("solutions", f"--report-log={logs}/solutions.jsonl"), ROOT, (0,))
    for argv, cwd, ok in commands.values() if warmup else ():   # the bytecode caches written, once
        timed(argv, cwd, ok)
    floor, seconds = [], {name: [] for name in commands}
    for k in range(repeat):
        for name, (argv, cwd, ok) in commands.items():
            if name.startswith("exercises/") or name == "solutions":
                floor.append(timed(FLOOR, ROOT))
            seconds[name].append(timed(argv, cwd, ok))
            print(f"  [{k + 1}/{repeat}] {name}: {seconds[name][-1][0]:.2f} s", file=sys.stderr, flush=True)

    def median(values: list, i: int) -> float:
        return statistics.median(v[i] for v in values)

    return {"floor": median(floor, 0), "floor_cpu": median(floor, 1),
            "runs": {name: median(values, 0) for name, values in seconds.items()},
            "cpu": {name: median(values, 1) for name, values in seconds.items()},
            "all_runs": {"floor": floor, **seconds}}


def durations(log: Path) -> dict[str, float]:
    """Each check's seconds in a report log (setup, call and teardown together)."""
    totals: dict[str, float] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("$report_type") == "TestReport":
            totals[entry["nodeid"]] = totals.get(entry["nodeid"], 0.0) + entry.get("duration", 0.0)
    return totals


def slowest(log: Path, count: int = 10) -> list[tuple[float, str]]:
    """The checks of a report log that took longest."""
    return sorted(((s, n) for n, s in durations(log).items()), reverse=True)[:count]


def checks_time(logs: Path) -> dict:
    """{exercise: {"stub": s, "solution": s}}: the checks' own seconds in one exercise's run."""
    return {ex.name: {kind: sum(durations(logs / f"{ex.name}.{kind}.jsonl").values()) for kind in ("stub", "solution")}
            for ex in curriculum.exercises() if (logs / f"{ex.name}.stub.jsonl").is_file()}


# --- kata watch ---------------------------------------------------------------------------------


# What the watcher prints when it waits for a save (kata/commands/watch.py), in English.
IDLE = ("Save ", "Still watching: ")


class Watch:
    """``kata watch`` on a folder, driven as a test would (its stdout a pipe: each screen after a
    line of ``=``, a line ``q`` on stdin to stop), with the time each screen arrived."""

    def __init__(self, folder: Path):
        self.screens: list[tuple[float, list[str]]] = []
        self.lock = threading.Condition()
        self.proc = subprocess.Popen([sys.executable, "-m", "kata", "watch", "--target", str(folder)], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=environment())
        self.started = time.monotonic()
        self.idle_since: float | None = None   # when the watcher was first seen waiting for a save
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        current = None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            with self.lock:
                if line == "=" * 70:
                    current = []
                    self.screens.append((time.monotonic(), current))
                elif current is not None:
                    current.append(line)
                self.lock.notify_all()

    def verdict(self, name: str, since: int, timeout: float = 300) -> float:
        """When the first screen after the ``since``-th that shows exercise ``name``'s verdict arrived."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for at, lines in self.screens[since:]:
                    heading = next((line for line in lines if line.startswith("kata watch: ")), "")
                    if f". {name}: " in heading and any(" checks pass" in line for line in lines):
                        return at
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    sys.exit(f"kata watch showed no verdict on {name}:\n" + "\n".join(
                        "\n".join(lines) for _, lines in self.screens[-2:]))
                self.lock.wait(min(left, 0.5))

    def save(self, path: Path, text: str, name: str, settle: float) -> float:
        """Wait until ``settle`` seconds have passed since the last screen (the next round's process
        warms up while a learner edits), write ``text`` to ``path``; return the seconds from the save
        to the exercise's verdict."""
        while True:
            with self.lock:
                seen = len(self.screens)
                idle = bool(seen) and self.screens[-1][1][-1:] != [] and self.screens[-1][1][-1].startswith(IDLE)
                if idle and self.idle_since is None:
                    self.idle_since = time.monotonic()
            if idle and time.monotonic() - self.idle_since >= settle:
                break
            if self.proc.poll() is not None:
                sys.exit("kata watch ended early:\n" + "\n".join(self.screens[-1][1] if self.screens else []))
            time.sleep(0.05)
        self.idle_since = None
        path.write_text(text, encoding="utf-8")
        saved = time.monotonic()
        return self.verdict(name, seen) - saved

    def close(self) -> None:
        try:
            self.proc.communicate("q\n", timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def watch(stubs: Path, settle: float, names: list[str]) -> dict:
    """kata watch from the stubs: the first round (the watcher's start included), then, for each
    exercise in order up to the last of ``names``, a save of its stub (a verdict of failures) and of
    its solution (done: the watcher moves on to the next exercise)."""
    w = Watch(stubs)
    try:
        first = curriculum.exercises()[0].name
        result = {"first round": w.verdict(first, 0) - w.started, "stub": {}, "solution": {}}
        last = max(curriculum.names().index(name) for name in names)
        for ex in curriculum.exercises()[:last + 1]:
            path = stubs / f"{ex.name}.py"
            if ex.name not in names:   # on the way to the next one measured: done, unmeasured
                w.save(path, (ROOT / "solutions" / f"{ex.name}.py").read_text(encoding="utf-8"), ex.name, settle)
                continue
            result["stub"][ex.name] = w.save(path, path.read_text(encoding="utf-8"), ex.name, settle)
            solution = (ROOT / "solutions" / f"{ex.name}.py").read_text(encoding="utf-8")
            result["solution"][ex.name] = w.save(path, solution, ex.name, settle)
            print(f"  kata watch, {ex.name}: a save to its verdict {result['stub'][ex.name]:.2f} s on the stub, "
                  f"{result['solution'][ex.name]:.2f} s on the solution", file=sys.stderr, flush=True)
        return result
    finally:
        w.close()


# --- kata grade ---------------------------------------------------------------------------------


def grading(folder: Path, submissions: int, jobs: int) -> dict:
    """Seconds per correct submission per core: N copies of solutions/ graded, then 2N copies: the
    difference is what each submission costs, without what every run pays once (the servers' start, the
    reference's grading)."""
    cores = os.cpu_count() or 1
    copies = []
    for i in range(2 * submissions):
        shutil.copytree(ROOT / "solutions", folder / "subs" / f"copy-{i + 1}")
        copies.append(str(folder / "subs" / f"copy-{i + 1}"))

    def grade(subs: list[str]) -> float:
        return timed([sys.executable, "-m", "kata", "grade", *subs, "--out", str(folder / "out"), "--jobs",
                      str(jobs), "--quiet"], ROOT)[0]

    result = {"submissions": submissions, "jobs": jobs, "cores": cores, "N": grade(copies[:submissions])}
    result["per submission per core"] = result["N"] * cores / submissions
    result["2N"] = grade(copies)
    result["one more submission per core"] = (result["2N"] - result["N"]) * cores / submissions
    return result


# --- the report ---------------------------------------------------------------------------------


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "MISSED"


def ratios(figures: dict) -> dict[str, dict]:
    """Each pytest run's ratio to the floor, in wall and in CPU seconds (what the self-test holds)."""
    return {name: {"wall": ratio(figures["runs"][name], figures["floor"]),
                   "cpu": ratio(figures["cpu"][name], figures["floor_cpu"])} for name in figures["runs"]}


def report(figures: dict) -> tuple[list[str], list[str]]:
    """The printed lines, and the targets missed."""
    floor, runs_, by = figures["floor"], figures["runs"], ratios(figures)
    lines = [f"device-kata profile: {figures['when']}, {figures['machine']}",
             f"(each pytest run the median of {figures['repeat']}, the import floor measured between them; "
             "'x floor' is wall time, 'cpu x' CPU time, each over the floor's)", "",
             f"{'':<44}{'seconds':>9}{'x floor':>9}{'cpu x':>7}   target"]
    missed = []

    def row(label: str, name: str | None, target: float | None) -> None:
        seconds, r, cpu = (floor, 1.0, 1.0) if name is None else (runs_[name], by[name]["wall"], by[name]["cpu"])
        mark = ""
        if target is not None:
            mark = f"<= {target:.1f}  {verdict(r, target)}"
            if r > target:
                missed.append(f"{label}: {r:.2f}x the floor, target {target:.1f}")
        lines.append(f"{label:<44}{seconds:>9.2f}{r:>9.2f}{cpu:>7.2f}   {mark}")

    row("import floor (torch, torchvision, pyplot)", None, None)
    limit = TARGETS["exercise"][0]
    for ex in (ex for ex in curriculum.exercises() if f"solutions/{ex.name}.py" in runs_):
        row(f"pytest exercises/{ex.name}.py (the stub)", f"exercises/{ex.name}.py", limit)
        row(f"pytest solutions/{ex.name}.py", f"solutions/{ex.name}.py", limit)
    row("pytest solutions", "solutions", TARGETS["solutions"][0])
    lines += ["", "The ten slowest checks of pytest solutions:"]
    lines += [f"  {seconds:6.2f} s  {nodeid}" for seconds, nodeid in figures["slowest"]]
    w = figures.get("watch")
    if w:
        limit = TARGETS["watch"][0]
        lines += ["", f"kata watch: its first round {w['first round']:.2f} s (the watcher's start included); then a "
                      "save to its verdict, and (in brackets) how much of that is not the checks' own time "
                      f"(target: at most {limit:.1f} s):"]
        for ex in (ex for ex in curriculum.exercises() if ex.name in w["stub"]):
            cells, worst = [], 0.0
            for kind in ("stub", "solution"):
                past = w[kind][ex.name] - figures["checks"][ex.name][kind]
                worst = max(worst, past)
                cells.append(f"the {kind} {w[kind][ex.name]:5.2f} s ({past:+5.2f})")
            lines.append(f"  {ex.label:<14} {', '.join(cells)}   {verdict(worst, limit)}")
            if worst > limit:
                missed.append(f"kata watch, {ex.name}: a save to its verdict {worst:.2f} s past its checks' own time, "
                              f"target {limit:.1f} s")
    g = figures.get("grade")
    if g:
        # per core: against what pytest solutions costs the cores (its CPU time: its helper's core included)
        solutions, limit = figures["cpu"]["solutions"], TARGETS["grade"][0]
        per = g["per submission per core"]
        lines += ["", f"kata grade, --jobs {g['jobs']}, {g['cores']} cores, correct submissions (copies of "
                      f"solutions/): {g['submissions']} in {g['N']:.1f} s, "
                      f"{per:.2f} s per submission per core = {ratio(per, solutions):.2f}x pytest solutions' CPU time "
                      "(the servers' start and the reference's grading included)"]
        more = g["one more submission per core"]
        r = ratio(more, solutions)
        lines.append(f"  {2 * g['submissions']} in {g['2N']:.1f} s: each submission costs {more:.2f} s per core = "
                     f"{r:.2f}x pytest solutions' CPU time (target <= {limit:.1f})   {verdict(r, limit)}")
        if r > limit:
            missed.append(f"kata grade: {r:.2f}x pytest solutions' CPU time per submission per core, "
                          f"target {limit:.1f}")
    lines += ["", "Missed: " + "; ".join(missed) if missed else "Every figure measured is within its target."]
    return lines, missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each pytest command (the median is kept)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="no untimed first run of each command (its bytecode caches are written already)")
    parser.add_argument("--runs", metavar="NAMES", default=",".join(curriculum.names()),
                        help="the exercises whose runs are timed (default: all), comma-separated")
    parser.add_argument("--watch", metavar="NAMES",
                        help="the exercises whose saves kata watch is timed on (default: those of --runs), "
                             "comma-separated")
    parser.add_argument("--no-watch", action="store_true", help="leave kata watch out")
    parser.add_argument("--no-grade", action="store_true", help="leave kata grade out")
    parser.add_argument("--submissions", type=int, default=8, help="copies of solutions/ to grade (default 8)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="kata grade --jobs (default: the cores)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure misses its target")
    args = parser.parse_args()
    import torch

    figures = {"when": time.strftime("%Y-%m-%d %H:%M"), "repeat": args.repeat,
               "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}"}
    folder = Path(tempfile.mkdtemp(prefix="kata-profile-"))
    try:
        stubs = folder / "copy" / "exercises"
        missing = pristine.write_stubs(stubs)
        if missing:
            sys.exit(f"no pristine stub found for {', '.join(missing)} (no git history, no .kata/pristine)")
        logs = folder / "logs"
        logs.mkdir()
        measured = [name for name in args.runs.split(",") if name]
        if set(measured) - set(curriculum.names()):
            sys.exit(f"--runs {args.runs}: the exercises are {', '.join(curriculum.names())}")
        args.watch = args.watch or ",".join(measured)
        if not args.no_watch and set(args.watch.split(",")) - set(measured):   # a save's time past its checks' own
            sys.exit(f"--watch {args.watch}: each exercise timed in kata watch must be in --runs too")
        figures.update(runs(stubs, args.repeat, logs, warmup=not args.no_warmup, names=measured))
        figures["slowest"] = slowest(logs / "solutions.jsonl")
        figures["checks"] = checks_time(logs)
        if not args.no_watch:
            # Time for the next round's process to start (it imports torch and collects the checks) while a
            # learner edits, as a learner takes it.
            names = [name for name in args.watch.split(",") if name]
            unknown = set(names) - set(curriculum.names())
            if unknown or not names:
                sys.exit(f"--watch {args.watch}: the exercises are {', '.join(curriculum.names())}")
            figures["watch"] = watch(stubs, settle=max(3.0, 1.6 * figures["floor"]), names=names)
        if not args.no_grade:
            figures["grade"] = grading(folder, args.submissions, args.jobs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines, missed = report(figures)
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({**figures, "ratios": ratios(figures), "missed": missed}, indent=1),
                                   encoding="utf-8")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
