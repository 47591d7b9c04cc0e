"""The grading child's pytest plugin: each check's outcome, as it ends.

Registered by kata/grade_child.py (never by an entry point, so ordinary runs
don't see it). It writes one JSON line per event to the results file the grader
opened for it, unbuffered, so a crash keeps everything that ran before it:

    {"e": "collected", "ids": [...]}                  the checks, before any submission code runs
    {"e": "start", "id": ...}                         a check begins
    {"e": "import", "module": ...}, {"e": "imported", ...}  a contract module's import begins, ends
    {"e": "result", "id": ..., "outcome": "passed" | "failed" | "skipped",
     "kind": ..., "message": ..., "duration": s}      a check ended
    {"e": "finish", "exitstatus": n}                  pytest ended normally

`kind` says why a check failed: "module" (missing or broken module: the kata
plugin's one-line message), "todo" (a stub: "`name` is not written yet"),
"assert" (the check's teaching message), "error" (an exception in the
submission's code, with file and line), "timeout", "memory", "struck" (not run:
two checks of its exercise had already timed out or ended the test process).

Besides reporting, it contains the damage one broken exercise can do to the
others: a module whose import runs out of time is marked broken (its other
checks then fail at once with that message), an exercise whose checks time out
`max_strikes` times has its remaining checks not run, and after a check that
ran out of memory what it held is let go.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import traceback
from collections import Counter
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from kata.pytest_plugin import TARGET, _check_exercise
from kata.target import PROJECT_ROOT, Target, TargetError, learner_error

MESSAGE_LIMIT = 4000


def kata_plugin_registered() -> bool:
    """Whether pytest will load the kata's plugin by itself (pip-installed project)."""
    return any(ep.value == "kata.pytest_plugin" for ep in entry_points(group="pytest11"))


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = text.strip("\n")
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit:,} more characters cut)"


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, pytest.fail.Exception) and str(exc).startswith("Timeout")


def _is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


class Struck(Exception):
    """This check's exercise already timed out or crashed too often."""


class GradePlugin:
    def __init__(self, config: dict):
        self.fd = config["results_fd"]
        self.skip = set(config.get("skip", ()))
        self.strikes = Counter(config.get("strikes", {}))
        self.max_strikes = config.get("max_strikes", 2)
        self.test_timeout = config["limits"]["test_timeout"]
        self.memory_mb = config["limits"]["memory_mb"]
        self.struck = {ex for ex, n in self.strikes.items() if n >= self.max_strikes}
        self.broken: dict[str, str] = dict(config.get("broken", {}))
        self.exercise: dict[str, str | None] = {}
        self.records: dict[str, dict] = {}
        self.target: Target | None = None
        self._watch_imports()

    def _watch_imports(self) -> None:
        """Say which contract module is being imported, so that if the import
        ends the process the grader knows whose fault it was."""
        original = Target._import
        plugin = self

        def _import(target, name):
            plugin.emit({"e": "import", "module": name})
            try:
                return original(target, name)
            finally:
                plugin.emit({"e": "imported", "module": name})

        Target._import = _import

    # --- the results file ---------------------------------------------------

    def emit(self, event: dict) -> None:
        try:
            os.write(self.fd, (json.dumps(event) + "\n").encode())
        except OSError:
            pass

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config) -> None:
        """Hypothesis's "explain" phase reruns a failing check many times to annotate
        its report; grading reads only the failure's message, so skip it (it can
        take seconds per failing check). Examples, shrinking and results are unchanged."""
        try:
            from hypothesis import Phase, settings
        except ImportError:
            return
        explain = getattr(Phase, "explain", None)
        current = settings.default
        if explain is not None and explain in current.phases:
            settings.register_profile("kata-grade", parent=current,
                                      phases=[p for p in current.phases if p is not explain])
            settings.load_profile("kata-grade")

    # --- collection -----------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        self.target = config.stash.get(TARGET, None)
        if self.target is not None:
            for module, message in self.broken.items():  # it ended an earlier test process
                self.target._loaded[module] = TargetError(message)
        self.exercise = {item.nodeid: _check_exercise(item.path) for item in items}
        self.emit({"e": "collected", "ids": [item.nodeid for item in items]})
        deselected = [item for item in items if item.nodeid in self.skip]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if item.nodeid not in self.skip]

    # --- running --------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.emit({"e": "start", "id": nodeid})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        """A check of a struck exercise fails in its setup, before any fixture
        (so the fixtures of the checks before it are still torn down in order)."""
        exercise = self.exercise.get(item.nodeid)
        broken = self.target is not None and isinstance(self.target._loaded.get(exercise), TargetError)
        if exercise in self.struck and not broken:  # a broken module fails fast, with a better message
            raise Struck(f"not run: {self.strikes[exercise]} checks of exercise '{exercise}' had already run "
                         f"out of time or ended the test process, so its remaining checks were not run "
                         f"(each counts as not passed)")

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield  # the kata plugin (an inner wrapper) has already shortened its messages
        if report.failed and call.excinfo is not None:
            try:
                report.kata_grade = self.classify(item, call.excinfo, report)
            except Exception as exc:  # noqa: BLE001 - never let the grader's own helper break a run
                report.kata_grade = ("error", f"{report.longreprtext}\n(grader: {exc!r})")
        return report

    def pytest_runtest_logreport(self, report) -> None:
        record = self.records.setdefault(
            report.nodeid, {"outcome": "passed", "kind": None, "message": "", "duration": 0.0})
        record["duration"] += report.duration
        if report.failed and record["outcome"] != "failed":
            kind, message = getattr(report, "kata_grade", None) or ("error", report.longreprtext)
            if report.when == "teardown":
                message = "failed while cleaning up after the check:\n" + message
            record.update(outcome="failed", kind=kind, message=message)
        elif report.skipped and record["outcome"] == "passed":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            record.update(outcome="skipped", kind="skipped", message=reason.removeprefix("Skipped: "))
        if report.when == "teardown":
            self.emit({"e": "result", "id": report.nodeid, "outcome": record["outcome"],
                       "kind": record["kind"], "message": clip(record["message"]),
                       "duration": round(record["duration"], 3)})
            self.let_go(record["kind"] == "memory")

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.emit({"e": "finish", "exitstatus": int(exitstatus)})

    # --- what went wrong, in words --------------------------------------------

    def classify(self, item, excinfo, report) -> tuple[str, str]:
        exc = excinfo.value
        if isinstance(exc, Struck):
            return "struck", str(exc)
        if isinstance(exc, TargetError):
            return "module", str(exc)
        if getattr(report, "kata_todo", False):
            return "todo", str(report.longrepr)
        where = self.where(exc)
        if _is_timeout(exc):
            return "timeout", self.timed_out(item, exc, where)
        if _is_out_of_memory(exc):
            return "memory", (f"ran out of memory (the limit is {self.memory_mb:,} MB){where}:\n  "
                              f"{type(exc).__name__}: {exc}")
        if isinstance(exc, AssertionError) and not where:
            return "assert", str(exc) or report.longreprtext
        if self.target is not None:
            message = learner_error(exc, self.target)
            if message is not None:
                return "error", message
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if Path(f.filename).resolve().is_relative_to(PROJECT_ROOT / "tests")]
        at = f" (in the check, {Path(frames[-1].filename).name} line {frames[-1].lineno})" if frames else ""
        return "error", f"{excinfo.exconly()}{at}"

    def where(self, exc: BaseException) -> str:
        """', at exercises/data.py line 4, in load_splits' when the submission's code raised it."""
        if self.target is None:
            return ""
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if Path(f.filename).resolve().is_relative_to(self.target.path)]
        if not frames:
            return ""
        last = frames[-1]
        name = "its top level" if last.name == "<module>" else last.name
        return f", at {self.target.display(Path(last.filename).stem)} line {last.lineno}, in {name}"

    def timed_out(self, item, exc: BaseException, where: str) -> str:
        exercise = self.exercise.get(item.nodeid)
        if exercise is not None:
            self.strikes[exercise] += 1
            if self.strikes[exercise] >= self.max_strikes:
                self.struck.add(exercise)
        seconds = f"{self.test_timeout:g} s"
        module = self.importing(exc)
        if module is not None and self.target is not None:
            message = (f"{self.target.display(module)} did not finish importing within {seconds} (the time "
                       f"limit of one check){where}: does it run an endless loop or long work at its top "
                       f"level? Keep the top level to definitions.")
            self.target._loaded[module] = TargetError(message)  # its other checks fail at once
            sys.modules.pop(f"{self.target.package}.{module}", None)
            return message
        return (f"did not finish within {seconds} (the time limit of one check){where}: an endless loop, "
                f"or work far slower than it needs to be?")

    @staticmethod
    def importing(exc: BaseException) -> str | None:
        """The contract module being imported when ``exc`` was raised, if any."""
        for frame, _ in traceback.walk_tb(exc.__traceback__):
            if frame.f_code.co_name == "_import" and frame.f_code.co_filename.endswith(
                    os.path.join("kata", "target.py")):
                return frame.f_locals.get("name")
        return None

    def let_go(self, collect: bool) -> None:
        """Drop what a failure holds on to (its frames, and what they hold)."""
        for attr in ("last_type", "last_value", "last_traceback", "last_exc"):
            if hasattr(sys, attr):
                setattr(sys, attr, None)
        if self.target is not None:
            for value in self.target._loaded.values():
                if isinstance(value, TargetError):
                    value.__context__ = value.__cause__ = None
                    value.__traceback__ = None
        if collect:
            gc.collect()
