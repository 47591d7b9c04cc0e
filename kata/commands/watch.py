"""``kata watch``: recheck the next unfinished exercise every time a file is saved.

It starts with the first exercise (in curriculum order) that the recorded
progress does not show as done (an exercise whose module was saved after its
last check is not known to be done: kata/progress.py), runs its checks, clears
the screen and shows the failures, one block per cause, and the table of all
exercises; then it waits. Each save of a ``.py`` file in the folder runs the
checks again; when they all pass it moves on to the next exercise. When every
exercise is done it keeps watching: the next save rechecks what was saved.
``q`` (or Ctrl-C) stops it.

Each round runs ``pytest --target FOLDER tests/test_NAME.py --report-log FILE``
in a process of its own (a new import of the learner's code every time), with a
time limit per check and per round: a syntax error, a crash or an endless loop
in the learner's code ends that round with a message, never the watcher. Each
round's process is started as the round before it ends, and has imported torch
and collected the checks by the time a file is saved (:func:`serve_round`), so a
save costs the checks' own time and little more. The
round's report log (pytest-reportlog's, kept when a round is stopped early) is
what the screen is made from, with the outcome model that every other view of
a run uses (kata/harness/outcomes.py): the blocks and the row are those of
``pytest exercises/NAME.py``.

Saves are found with watchfiles; without it (a machine it is not installed on)
by comparing the files' modification times twice a second, saying so once.
Without a terminal (stdin or stdout a pipe: a test, an editor's task) the
screen is not cleared: each round is printed after a line of ``=``, and a line
``q`` on stdin stops it.
"""

from __future__ import annotations

import importlib.util
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

from kata import curriculum, progress
from kata.commands.list import table
from kata.commands.next import add_target_option, first_unfinished, learner_folder
from kata.curriculum import Exercise
from kata.harness import outcomes
from kata.harness.tracebacks import display
from kata.i18n import N_, _, say
from kata.project import locate

__all__ = ["HELP", "Checker", "Keys", "Round", "add_parser", "render", "run", "saves", "serve_round"]

HELP = N_("recheck the next exercise each time you save a file")
CLEAR = "\x1b[2J\x1b[3J\x1b[H"


def add_parser(sub):
    p = sub.add_parser("watch", help=_(HELP),
                       description=_("Check the first unfinished exercise, and again each time a file in "
                                     "exercises/ is saved; move on when it passes. q or Ctrl-C stops."))
    add_target_option(p)
    p.add_argument("--timeout", type=float, default=120, metavar="SECONDS",
                   help=_("stop a round of checks that runs longer than this (default 120)"))
    p.add_argument("--check-timeout", type=float, default=30, metavar="SECONDS",
                   help=_("fail one check that runs longer than this (default 30)"))
    return p


# --- a round -------------------------------------------------------------------------------


@dataclass
class Round:
    """What one run of an exercise's checks said: its records (kata/harness/outcomes.py)."""

    exercise: Exercise
    records: list = field(default_factory=list)     # outcomes.Record, in run order
    seconds: float = 0.0
    stopped: str = ""                               # why the round was cut short ("" if it was not)
    output: str = ""                                # the round's own output (for a round that reported nothing)

    @property
    def summary(self) -> outcomes.Summary:
        return outcomes.summarize(self.records)

    @property
    def table_row(self) -> outcomes.Row:
        return self.summary.row(self.exercise.name) or outcomes.Row(self.exercise)

    @property
    def done(self) -> bool:
        return not self.stopped and self.table_row.done

    @property
    def row(self) -> str:
        """The exercise's row of the table, as the check run's own table words it."""
        return outcomes.render_row(self.table_row, _("; stopped early") if self.stopped else "")


def _kill(proc: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


# A round's process (serve_round) is started as soon as the round before it ends, so a save
# is checked without waiting for torch to import or the checks to be collected.
_ROUND = "from kata.commands.watch import serve_round; serve_round()"


def serve_round() -> None:
    """A round's process: first what every round needs and no learner's code (torch and the other
    libraries, the checks imported and collected, their asserts rewritten, as the grader's servers
    do it: kata/grading/server.py), then the round's pytest arguments, read from stdin, run.

    The collection runs without the kata's plugin: no target and no accelerator yet (the simulated
    one is installed by the round's own run, before its first backward pass). What it leaves is
    frozen for the collector (kata/harness/collector.py): the round's run need not walk it."""
    import contextlib
    import io

    import pytest

    from kata.harness import collector

    project = locate()
    checks = [str(project.checks_of(name)) for name in curriculum.names() if project.checks_of(name).is_file()]
    with collector.preloading(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main([*checks, "--collect-only", "-qq", "-p", "no:kata", "-p", "no:cacheprovider", "-o", "addopts="])
    args = json.loads(sys.stdin.readline() or "null")
    sys.exit(0 if args is None else pytest.main(args))


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
                                stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
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
                f"--report-log={report}", f"--timeout={self.check_timeout:g}"]
        start, stopped = time.perf_counter(), ""
        try:
            output, _errors = proc.communicate(json.dumps(args) + "\n", timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            output, stopped = "", say("the checks ran past {seconds:g} s and were stopped", seconds=self.timeout)
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
    """A round from its report log (pytest-reportlog's lines, kept when the round was stopped)."""
    entries = [json.loads(line) for line in lines if line.strip()]
    finished = any(e.get("$report_type") == "SessionFinish" for e in entries)
    running = None
    for e in entries:
        if e.get("$report_type") == "TestReport":
            running = e["nodeid"] if e.get("when") != "teardown" else None
    if stopped and running:
        stopped = say("{stopped}, while `{check}` ran: does some code loop forever, or wait?", stopped=stopped,
                      check=running.split("::")[-1])
    elif not finished and not stopped:
        stopped = say("the checks' process ended early (exit code {code})", code=code)
    return Round(ex, outcomes.records(entries), seconds, stopped, output)


def render(rnd: Round, folder: Path, banner: str = "") -> str:
    """The screen after a round: the failures one block per cause, then the table."""
    ex, file, row = rnd.exercise, display(folder / f"{rnd.exercise.name}.py"), rnd.table_row
    lines = [banner] if banner else []
    checked = say(N_("{file}, checked at {time} ({seconds:.1f} s): {passed}/{counted} checks pass, done") if rnd.done
                  else N_("{file}, checked at {time} ({seconds:.1f} s): {passed}/{counted} checks pass"), file=file,
                  time=time.strftime("%H:%M:%S"), seconds=rnd.seconds, passed=row.passed, counted=row.counted)
    lines += [f"kata watch: {ex.label}: {ex.title}", checked, ""]
    if rnd.stopped:
        lines += [f"! {rnd.stopped}", ""]
    for block in rnd.summary.blocks:
        lines += [outcomes.heading(block), outcomes.render_block(block)]
    if rnd.summary.blocks:
        lines.append("")
    elif not rnd.records:
        lines += [_("No check reported; the checks' output ends with:"),
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
            readable, _w, _x = select.select([self.stream], [], [], 0)
            if not readable:
                return False
            text = os.read(self.stream.fileno(), 1024).decode(errors="replace")
        except (OSError, ValueError):
            self.open = False
            return False
        if not text:              # end of input: no more keys will come
            self.open = False
        return "q" in text.lower()


POLL_SECONDS = 0.5


def saves(folder: Path, tell=print):
    """Yield, again and again, the set of ``.py`` files in ``folder`` saved since the last yield (an
    empty set when none was, at least every half second). With watchfiles the system tells; without
    it, the files' modification times are compared every half second (saying so once)."""
    try:
        import watchfiles
    except ImportError:
        tell(say("kata watch: watchfiles is not installed, so saves are found by looking every {seconds:g} s "
                 "(`pip install watchfiles` to be told at once).", seconds=POLL_SECONDS))
        yield from _polled(folder)
        return

    def wanted(change, path: str) -> bool:
        p = Path(path)
        return p.suffix == ".py" and p.resolve().parent == folder

    changes = watchfiles.watch(folder, watch_filter=wanted, debounce=300, step=50, rust_timeout=250,
                               yield_on_timeout=True)
    try:
        for found in changes:
            yield {Path(path).resolve() for _, path in found}
    finally:
        changes.close()


def _polled(folder: Path):
    def times() -> dict[Path, int]:
        found = {}
        for path in folder.glob("*.py"):
            try:
                found[path.resolve()] = path.stat().st_mtime_ns
            except OSError:
                continue
        return found

    last = times()
    while True:
        time.sleep(POLL_SECONDS)
        now = times()
        yield {p for p in now.keys() | last.keys() if now.get(p) != last.get(p)}
        last = now


def _to_check(folder: Path, saved: set[Path], last: Exercise | None) -> Exercise | None:
    """After a save: the first exercise not known to be done (a save makes its exercise's record
    stale), else the first exercise saved, else the one checked last."""
    following = first_unfinished(progress.read(folder))
    if following is not None:
        return following
    names = {p.stem for p in saved if p.parent == folder}
    return next((ex for ex in curriculum.exercises() if ex.name in names), last)


def run(args) -> int:
    locate()   # outside a checkout: ProjectError, saying where it looked
    folder = learner_folder(args.target)
    if not folder.is_dir():
        print(say("kata watch: {folder} is not a folder", folder=folder), file=sys.stderr)
        return 2
    if importlib.util.find_spec("pytest_reportlog") is None:
        print(_("kata watch: its rounds report through pytest-reportlog, a dependency of the kata that is not "
                "installed here: pip install pytest-reportlog"), file=sys.stderr)
        return 1
    tty = sys.stdout.isatty()

    def show(text: str) -> None:
        print((CLEAR if tty else "=" * 70 + "\n") + text, flush=True)

    quit_hint = _("q to quit") if sys.stdin.isatty() else _("a line q (or Ctrl-C) to quit")
    changes = saves(folder)
    check = Checker(folder, args.timeout, args.check_timeout)
    with Keys() as keys:
        try:
            next(changes)   # start watching now: saves during the first round count
            current = first_unfinished(progress.read(folder))
            checked, banner = None, ""
            if current is None:
                show("\n".join(table(folder)) + "\n\n" + say("Every exercise is done (by the progress recorded in "
                                                             "{folder}).", folder=display(folder)))
            while True:
                if current is not None:
                    print(say("checking {file} ...", file=display(folder / f"{current.name}.py")), flush=True)
                    rnd = check(current)
                    show(render(rnd, folder, banner))
                    checked, banner = current, ""
                    if rnd.done:
                        standings = progress.read(folder)   # the round recorded itself; a read-only folder did not
                        standings[current.name] = progress.Standing.of(rnd.table_row)
                        following = first_unfinished(standings)
                        if following is not None:
                            banner = say("{done} is done: on to {next}.", done=current.label,
                                         next=following.label) + "\n"
                            current = following
                            continue
                        print("\n" + say("Every exercise is done. `kata train --target {folder} --device sim` "
                                         "trains your code on the simulated accelerator.", folder=display(folder)),
                              flush=True)
                if current is None or rnd.done:
                    print(say("Still watching: save a file in {folder} to check it again; {quit}.",
                              folder=display(folder), quit=quit_hint), flush=True)
                else:
                    print("\n" + say("Save {file} (or any file in {folder}) to check again; `kata hint {name}` for a "
                                     "hint; {quit}.", file=display(folder / f"{current.name}.py"),
                                     folder=display(folder), name=current.name, quit=quit_hint), flush=True)
                saved = next(changes)
                while not saved:
                    if keys.quit():
                        print(_("kata watch: stopped."))
                        return 0
                    saved = next(changes)
                if keys.quit():
                    print(_("kata watch: stopped."))
                    return 0
                current = _to_check(folder, saved, checked)
        except (KeyboardInterrupt, StopIteration):
            print("\n" + _("kata watch: stopped."))
            return 0
        finally:
            check.close()
            changes.close()
