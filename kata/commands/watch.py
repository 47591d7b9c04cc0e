"""``kata watch``: recheck the next unfinished exercise every time a file is saved.

It starts with the first exercise (in curriculum order) that the recorded
progress does not show as done, runs its checks, clears the screen and shows
the failures, one message per cause, and the table of all exercises; then it
waits. Each save of a ``.py`` file in the folder runs the checks again; when they
all pass it moves on to the next exercise. ``q`` (or Ctrl-C) stops it.

Each round runs ``python -m pytest --target FOLDER tests/test_NAME.py`` in a
process of its own (a new import of the learner's code every time), with a time
limit per check and per round: a syntax error, a crash or an endless loop in the
learner's code ends that round with a message, never the watcher. The round's
process loads this module as a pytest plugin (``-p kata.commands.watch``), which
writes each check's outcome and message as a JSON line to the file named by
``$KATA_WATCH_REPORT`` (kept when a round is stopped early).

Without a terminal (stdin or stdout a pipe: a test, an editor's task) the
screen is not cleared: each round is printed after a line of ``=``, and a line
``q`` on stdin stops it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kata import progress
from kata.commands.list import table
from kata.commands.next import add_target_option, first_unfinished, learner_folder
from kata.curriculum import Exercise
from kata.harness.tracebacks import display
from kata.project import locate

__all__ = ["HELP", "REPORT_ENV", "Checker", "Keys", "Round", "add_parser", "pytest_configure", "render", "run"]

HELP = "recheck the next exercise each time you save a file"
REPORT_ENV = "KATA_WATCH_REPORT"
CLEAR = "\x1b[2J\x1b[3J\x1b[H"


def add_parser(sub):
    p = sub.add_parser("watch", help=HELP,
                       description="Check the first unfinished exercise, and again each time a file in "
                                   "exercises/ is saved; move on when it passes. q or Ctrl-C stops.")
    add_target_option(p)
    p.add_argument("--timeout", type=float, default=120, metavar="SECONDS",
                   help="stop a round of checks that runs longer than this (default 120)")
    p.add_argument("--check-timeout", type=float, default=30, metavar="SECONDS",
                   help="fail one check that runs longer than this (default 30)")
    return p


# --- in the round's pytest process -------------------------------------------------------


def pytest_configure(config) -> None:
    """Loaded with ``-p kata.commands.watch``: report each check to $KATA_WATCH_REPORT."""
    path = os.environ.get(REPORT_ENV)
    if not path or config.pluginmanager.has_plugin("kata-watch-report"):
        return
    from dataclasses import asdict

    from kata.harness.plugin import run_target
    from kata.notebook import Collector

    def mine(filename: str) -> bool:
        target = run_target(config)
        return target is not None and Path(filename).resolve().is_relative_to(target.path)

    class Reporter(Collector):
        def __init__(self):
            super().__init__(mine)
            self.file = open(path, "a", encoding="utf-8")  # closed in pytest_unconfigure

        def _write(self, entry: dict) -> None:
            self.file.write(json.dumps(entry) + "\n")
            self.file.flush()

        def pytest_runtest_logstart(self, nodeid, location) -> None:
            self._write({"started": nodeid})

        def pytest_runtest_logfinish(self, nodeid, location) -> None:
            if nodeid in self.outcomes:
                self._write({"outcome": asdict(self.outcomes[nodeid])})

        def pytest_unconfigure(self, config) -> None:
            self._write({"finished": True})
            self.file.close()

    config.pluginmanager.register(Reporter(), "kata-watch-report")


# --- in the watcher ------------------------------------------------------------------------


@dataclass
class Round:
    """What one run of an exercise's checks said."""

    exercise: Exercise
    outcomes: list = field(default_factory=list)   # kata.notebook.Outcome, in run order
    seconds: float = 0.0
    stopped: str = ""                               # why the round was cut short ("" if it was not)
    output: str = ""                                # the round's own output (for a round that reported nothing)

    def count(self, kind: str) -> int:
        return sum(o.outcome == kind for o in self.outcomes)

    @property
    def passed(self) -> int:
        return self.count("passed")

    @property
    def total(self) -> int:
        return len(self.outcomes) - self.count("skipped")

    @property
    def done(self) -> bool:
        return not self.stopped and self.total > 0 and self.passed == self.total

    @property
    def row(self) -> str:
        """The exercise's row of the table, as the check run's own table words it."""
        ex, failing, todo = self.exercise, self.count("failed"), self.count("todo")
        if self.done:
            status = "done"
        elif todo and not failing and not self.passed:
            status = "not started: every check stops at the stub"
        else:
            status = ", ".join(f"{n} {label}" for n, label in ((failing, "failing"), (todo, "at a stub"),
                                                               (self.count("skipped"), "skipped")) if n)
            status = (status + "; " if status else "") + ("stopped early" if self.stopped else "")
        return f"  {ex.number}. {ex.name:<9} {self.passed:>3}/{len(self.outcomes):<3} passed   {status.strip('; ')}"


def _kill(proc: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


# A round's process imports the slow libraries first, then waits for its pytest arguments:
# the watcher starts the next round's process as soon as a round ends, so a save is
# checked without waiting for torch to import.
_ROUND = ("import json, sys\n"
          "import torch, torchvision, matplotlib, hypothesis, pytest\n"
          "args = json.loads(sys.stdin.readline() or 'null')\n"
          "sys.exit(0 if args is None else pytest.main(args))\n")


class Checker:
    """Runs an exercise's checks against ``folder``, one process per round, each within
    ``timeout`` seconds (``check_timeout`` per check), keeping the next round's process warm."""

    def __init__(self, folder: Path, timeout: float = 120, check_timeout: float = 30):
        self.folder, self.timeout, self.check_timeout = folder, timeout, check_timeout
        self.spare: tuple[subprocess.Popen, str] | None = None

    def _spawn(self) -> tuple[subprocess.Popen, str]:
        fd, report = tempfile.mkstemp(prefix="kata-watch-", suffix=".jsonl")
        os.close(fd)
        proc = subprocess.Popen([sys.executable, "-c", _ROUND], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env={**os.environ, REPORT_ENV: report}, text=True,
                                errors="replace", start_new_session=True)
        return proc, report

    def close(self) -> None:
        if self.spare is not None:
            proc, report = self.spare
            self.spare = None
            _kill(proc)
            Path(report).unlink(missing_ok=True)

    def __call__(self, ex: Exercise) -> Round:
        proc, report = self.spare or self._spawn()
        self.spare = None
        args = ["--target", str(self.folder), str(ex.checks()), "-q", "-p", "no:cacheprovider",
                "-p", "kata.commands.watch", f"--timeout={self.check_timeout:g}"]
        start, stopped = time.perf_counter(), ""
        try:
            output, _ = proc.communicate(json.dumps(args) + "\n", timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            output, stopped = "", f"the checks ran past {self.timeout:g} s and were stopped"
        except BaseException:
            _kill(proc)
            Path(report).unlink(missing_ok=True)
            raise
        try:
            lines = Path(report).read_text(encoding="utf-8").splitlines()
        finally:
            Path(report).unlink(missing_ok=True)
        self.spare = self._spawn()
        return _round(ex, lines, time.perf_counter() - start, stopped, output, proc.returncode)


def _round(ex: Exercise, lines: list[str], seconds: float, stopped: str, output: str, code) -> Round:
    from kata.notebook import Outcome

    outcomes: dict[str, Outcome] = {}
    running, finished = None, False
    for line in lines:
        entry = json.loads(line)
        if "started" in entry:
            running = entry["started"]
        elif "outcome" in entry:
            outcomes[entry["outcome"]["nodeid"]] = Outcome(**entry["outcome"])
            running = None
        finished = finished or "finished" in entry
    if stopped and running:
        stopped += f", while `{running.split('::')[-1]}` ran: does some code loop forever, or wait?"
    elif not finished and not stopped:
        stopped = f"the checks' process ended early (exit code {code})"
    return Round(ex, list(outcomes.values()), seconds, stopped, output)


def render(rnd: Round, folder: Path, banner: str = "") -> str:
    """The screen after a round."""
    from kata.notebook import format_problems, problems

    ex, file = rnd.exercise, display(folder / f"{rnd.exercise.name}.py")
    lines = [banner] if banner else []
    lines += [f"kata watch: {ex.label}: {ex.title}",
              f"{file}, checked at {time.strftime('%H:%M:%S')} ({rnd.seconds:.1f} s): "
              f"{rnd.passed}/{rnd.total} checks pass" + (", done" if rnd.done else ""), ""]
    if rnd.stopped:
        lines += [f"! {rnd.stopped}", ""]
    found = problems(rnd.outcomes)
    if found:
        lines += [f"{len(found)} problem{'s' if len(found) > 1 else ''}:", *format_problems(found), ""]
    elif not rnd.outcomes:
        lines += ["No check reported; the checks' output ends with:",
                  *[f"  {line}" for line in rnd.output.strip().splitlines()[-15:]], ""]
    lines += table(folder, {ex.name: rnd.row})
    return "\n".join(lines)


class Keys:
    """``q`` from the keyboard (cbreak mode on a terminal) or a line ``q`` on a piped stdin."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdin
        self.saved = None
        self.open = self.stream is not None and not self.stream.closed

    def __enter__(self):
        if self.open and self.stream.isatty():
            try:
                import termios
                import tty

                self.saved = termios.tcgetattr(self.stream.fileno())
                tty.setcbreak(self.stream.fileno())
            except (ImportError, OSError, ValueError):
                self.saved = None
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self.saved)

    def quit(self) -> bool:
        """Whether q was pressed (or a line q sent) since the last call."""
        if not self.open:
            return False
        try:
            if os.name == "nt":
                import msvcrt

                keys = ""
                while msvcrt.kbhit():
                    keys += msvcrt.getwch()
                return "q" in keys.lower()
            readable, _, _ = select.select([self.stream], [], [], 0)
            if not readable:
                return False
            text = os.read(self.stream.fileno(), 1024).decode(errors="replace")
        except (OSError, ValueError):
            self.open = False
            return False
        if not text:              # end of input: no more keys will come
            self.open = False
        return "q" in text.lower()


def _saved(folder: Path):
    def wanted(change, path: str) -> bool:
        p = Path(path)
        return p.suffix == ".py" and p.resolve().parent == folder
    return wanted


def run(args) -> int:
    locate()   # outside a checkout: ProjectError, saying where it looked
    folder = learner_folder(args.target)
    if not folder.is_dir():
        print(f"kata watch: {folder} is not a folder", file=sys.stderr)
        return 2
    try:
        import watchfiles
    except ImportError:
        print("kata watch needs the watchfiles package: pip install watchfiles", file=sys.stderr)
        return 1
    tty = sys.stdout.isatty()

    def show(text: str) -> None:
        print((CLEAR if tty else "=" * 70 + "\n") + text, flush=True)

    quit_hint = "q to quit" if sys.stdin.isatty() else "a line q (or Ctrl-C) to quit"
    changes = watchfiles.watch(folder, watch_filter=_saved(folder), debounce=300, step=50,
                               rust_timeout=250, yield_on_timeout=True)
    check = Checker(folder, args.timeout, args.check_timeout)
    with Keys() as keys:
        try:
            next(changes)   # start watching now: saves during the first round count
            current = first_unfinished(progress.read(folder))
            if current is None:
                print("\n".join(table(folder)) + f"\n\nEvery exercise is done (by the progress recorded in "
                      f"{display(folder)}). `pytest {display(folder)}` checks them all again.")
                return 0
            banner = ""
            while current is not None:
                print(f"checking {display(folder / f'{current.name}.py')} ...", flush=True)
                rnd = check(current)
                show(render(rnd, folder, banner))
                banner = ""
                if rnd.done:
                    standings = progress.read(folder)
                    standings[current.name] = progress.Standing(rnd.passed, rnd.total)
                    following = first_unfinished(standings)
                    if following is None:
                        print(f"\nEvery exercise is done. `kata train --target {display(folder)} --device sim` "
                              "trains your code on the simulated accelerator.", flush=True)
                        return 0
                    banner = f"{current.label} is done: on to {following.label}.\n"
                    current = following
                    continue
                print(f"\nSave {display(folder / f'{current.name}.py')} (or any file in {display(folder)}) to "
                      f"check again; `kata hint {current.name}` for a hint; {quit_hint}.", flush=True)
                while not next(changes):
                    if keys.quit():
                        print("kata watch: stopped.")
                        return 0
                if keys.quit():
                    print("kata watch: stopped.")
                    return 0
        except (KeyboardInterrupt, StopIteration):
            print("\nkata watch: stopped.")
            return 0
        finally:
            check.close()
            changes.close()
    return 0
