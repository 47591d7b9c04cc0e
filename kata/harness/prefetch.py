"""Records asked ahead, on the machine's second core, in a learner's run of several exercises.

Most of a run of the checks is the records (kata/records: the learner's code on each scenario), and on two cores
one of them waits. Where a learner's run (``pytest exercises``, ``pytest solutions``) checks two exercises or more
with records, a helper forked when the checks are collected asks the records of the last exercises first, while
this process asks them from the first on; each record is asked once, by whichever claims it first (a file made
with ``O_EXCL``). A check that reads a record the helper answered reads its answer, as the wire carries it
(kata/records/wire.py: what a check reads in grading too), and what the learner's code printed and warned while
it was asked, printed and warned again in that check. An answer with an error in it is asked again here, so that
the error is raised with its own traceback, as ever; so is a record the helper could not answer (its time limit,
:data:`kata.records.RECORD_SECONDS` or a quarter of a check's, past; the helper gone).

The helper is forked only where that is safe and worth it: a run with a target that runs its checks, not one
reading answers from a file (``kata grade``'s), two exercises with records, two CPUs, Linux (macOS's own
libraries may not survive a fork), no GPU shown to the machine (CUDA can't be used after a fork), and a process
with no other Python thread that never installed the simulated accelerator (the kata's plugin installs it just
after: PyTorch refuses autograd in a child forked once its engine started a thread for a device), as
kata/records/elsewhere.py forks its laptops. Like the grader's records process (kata/grading/server.py), the
helper forks its own laptops' server first, then installs the simulated accelerator. ``-p no:kata-prefetch``
turns it off.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from kata import records as _records
from kata.harness import accelerator as _acc
from kata.harness import asking, forked
from kata.records import elsewhere

__all__ = ["NAME", "Prefetch", "start"]

NAME = "kata-prefetch"   # the plugin's name: -p no:kata-prefetch
_POLL = 0.005   # seconds between looks for an answer the helper is making


def start(config: pytest.Config, target, exercises: list[str]) -> None:
    """Fork the helper for ``exercises`` (the run's, in its order) of ``target``, where it is safe and worth it
    (see the module's text): called by the kata's plugin when the checks are collected, before it installs the
    simulated accelerator."""
    torch = sys.modules.get("torch")
    if not config.pluginmanager.has_plugin(NAME) or config.getoption("kata_records_from", None) \
            or any(config.getoption(o, False) for o in ("collectonly", "setuponly", "setupplan")) \
            or len(exercises) < 2 or not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2 \
            or not elsewhere.Forks.usable() \
            or torch is None or hasattr(torch, "simgpu") or _acc.accelerator_of(config).kind not in ("sim", None) \
            or threading.active_count() > 1:   # a fork copies only this thread (a notebook's kernel has others)
        return
    forked.warm_torch()   # once here, not in each process (the plugin installs the accelerator after)
    asking.celeba_folder(config)   # one folder for both (drawn there once, by the first to need it)
    folder = config._tmp_path_factory.mktemp("prefetch")
    # A record's time in the helper: a quarter of a check's at most, so that a check that waited for the helper to
    # give up on an endless loop still meets it itself, in its own time, and says where it was, as without a helper.
    check = float(config.getoption("timeout", None) or 0)
    seconds = min(_records.RECORD_SECONDS, check / 4) if check > 0 else _records.RECORD_SECONDS
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _helper(config, target, list(reversed(exercises)), folder, seconds)
    helper = Prefetch(folder, pid, seconds)
    config.stash[asking.AHEAD] = helper
    config.add_cleanup(helper.stop)


class Prefetch:
    """The helper's end in the run's process: its folder (claims, answers, what was printed) and its process."""

    def __init__(self, folder: Path, pid: int, seconds: float):
        self.folder, self.pid, self.seconds = folder, pid, seconds   # seconds: a record's time in the helper
        self.registries: dict[str, dict] = {}   # a warning's file's, as its module's __warningregistry__ would be

    def take(self, exercise: str, name: str) -> dict | None:
        """The helper's answers to record ``name`` of ``exercise`` (``{"inputs", "cases"}``), what the learner's
        code printed and warned meanwhile given again here; None where the run's process asks it (the helper did
        not claim it, could not answer it, or its answer holds an error)."""
        key = f"{exercise}.{name}"
        answer = self.folder / f"{key}.json"
        if self.pid is None or (not answer.exists() and _claim(self.folder, key)):
            return None
        deadline = time.monotonic() + self.seconds + 1   # the helper's own limit, and some slack
        while not answer.exists():
            if not self._alive() or time.monotonic() > deadline:
                self.stop()
                return None
            time.sleep(_POLL)
        got = json.loads(answer.read_text(encoding="utf-8"))
        if "cases" not in got or any("error" in case for case in got["cases"]):
            return None
        for stream, end in ((sys.stdout, "out"), (sys.stderr, "err")):
            text = (self.folder / f"{key}.{end}").read_text(encoding="utf-8", errors="replace")
            if text:
                stream.write(text)
        for warned in got.pop("warned", []):   # each as it was warned: this process's filters say which show
            warnings.warn_explicit(warned["text"], _category(warned["category"]), warned["file"], warned["line"],
                                   warned["module"], self.registries.setdefault(warned["file"], {}))
        return got

    def _alive(self) -> bool:
        try:
            return not os.waitpid(self.pid, os.WNOHANG)[0]
        except ChildProcessError:   # reaped already
            return False

    def stop(self) -> None:
        """End the helper (its laptops' server sees it gone) and remove its folder."""
        if self.pid is not None:
            forked.end(self.pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = None
        shutil.rmtree(self.folder, ignore_errors=True)


def _claim(folder: Path, key: str) -> bool:
    try:
        os.close(os.open(folder / f"{key}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def _category(name: str) -> type[Warning]:
    module, _dot, qualname = name.rpartition(".")
    with contextlib.suppress(Exception):
        found = getattr(importlib.import_module(module), qualname)
        if isinstance(found, type) and issubclass(found, Warning):
            return found
    return UserWarning


def _helper(config, target, exercises: list[str], folder: Path, seconds: float) -> None:
    """In the forked helper: the records of ``exercises``, in that order, each one this process claims, asked as
    the run's process would ask it, its answer written to the folder; never returns."""
    try:
        forked.end_with_parent()   # the run's process
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        forked.streams_to(os.open(os.devnull, os.O_WRONLY))   # none of the run's descriptors (the laptops' channel)
        laptops = elsewhere.serve_own_laptops()   # kept: its channel closes with it
        _records.few_threads()
        _acc.install_if_simulated(config)
        for exercise in exercises:
            handle = asking.asking_for(config, target, exercise)
            timeouts = 0
            for name, rec in reversed(handle.records.items()):   # from the end: the run meets it midway
                if rec.of_source or timeouts >= _records.EXERCISE_TIMEOUTS or not _claim(folder, f"{exercise}.{name}"):
                    continue
                found = _asked(handle, rec, folder / f"{exercise}.{name}", seconds)
                timeouts += found.get("timed_out", False)
                try:
                    text = json.dumps(found)
                except (TypeError, ValueError) as exc:   # not data: the run's process asks it again
                    text = json.dumps({"error": repr(exc)})
                part = folder / f"{exercise}.{name}.part"
                part.write_text(text, encoding="utf-8")
                os.replace(part, folder / f"{exercise}.{name}.json")
        if laptops is not None:
            laptops()
    except BaseException:  # noqa: BLE001 - the run's process asks what is left itself
        pass
    finally:
        os._exit(0)


def _asked(handle, rec, base: Path, seconds: float) -> dict:
    """Every case of ``rec`` asked through ``handle`` (kata.harness.asking.Asking), in at most ``seconds``, what
    the learner's code printed going to ``base``.out and .err, what it warned kept in the answer (``warned``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    ends = [os.open(f"{base}.{end}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for end in ("out", "err")]
    os.dup2(ends[0], 1)
    os.dup2(ends[1], 2)
    try:
        with warnings.catch_warnings(record=True) as warned, _records.timed(seconds):
            warnings.simplefilter("always")
            found = handle.asked_here(rec, keep=False)
    except _records.TimedOut:
        return {"error": "timed out", "timed_out": True}
    except Exception as exc:  # noqa: BLE001 - the run's process asks it again, and meets it itself
        return {"error": repr(exc)}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        quiet = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(quiet, fd)
        for end in (*ends, quiet):
            os.close(end)
    modules = {getattr(m, "__file__", None): name for name, m in list(sys.modules.items())} if warned else {}
    found["warned"] = [{"text": str(w.message), "category": f"{w.category.__module__}.{w.category.__qualname__}",
                        "file": w.filename, "line": w.lineno,
                        "module": modules.get(w.filename, w.filename.removesuffix(".py"))} for w in warned]
    return found
