"""The grading child's pytest plugin: each check's outcome, written as the check ends.

Registered by kata/grading/child.py (never by an entry point: ordinary runs
don't see it). It writes one JSON line per event to the results descriptor the
grader opened for it, unbuffered, so a crash keeps everything that ran before:

    {"e": "collected", "ids": [...]}                 the checks, before any submission code runs
    {"e": "start", "id": ...}                        a check begins
    {"e": "import", "module": ...} / {"e": "imported", ...}   a submission module's import begins, ends
    {"e": "result", "id": ..., "outcome": "passed" | "failed" | "skipped",
     "kind": ..., "message": ..., "duration": s}     a check ended
    {"e": "flag", "where": ..., "what": ..., "by": ...}     the tripwire refused something, or a check
                                                     found what the verdict rests on changed
    {"e": "finish", "exitstatus": n}                 pytest ended normally

``kind`` says why a check failed: "module" (missing or broken module), "todo"
(a stub), "assert" (the check's message), "error" (an exception in the
submission's code, with file and line), "timeout", "memory", "struck" (not
run: its exercise had already timed out or ended the test process too often).

It also contains the damage one exercise can do to the others: a module whose
import runs out of time is marked broken (its other checks then fail at once),
an exercise whose checks time out ``max_strikes`` times has the rest not run,
and what a check that ran out of memory held is let go. Once the checks are
collected, and before the submission's first module is imported, it arms the
tripwire (kata/grading/tripwire.py).
"""

from __future__ import annotations

import gc
import sys
import traceback
from collections import Counter
from pathlib import Path

import pytest

from kata import curriculum
from kata.grading.tripwire import Tripwire
from kata.harness.plugin import run_target
from kata.harness.target import Target, TargetError
from kata.harness.tracebacks import learner_error, place_in
from kata.project import locate

__all__ = ["GradePlugin", "Struck", "verdict_modules", "without_explain"]

MESSAGE_LIMIT = 4000

# The modules and classes the verdict depends on (the tripwire records them; see verdict_modules).
VERDICT_MODULES = (
    "_pytest.reports", "_pytest.runner", "_pytest.main", "_pytest.python", "_pytest.nodes", "_pytest.outcomes",
    "_pytest.skipping", "_pytest.fixtures", "_pytest.python_api", "_pytest.raises", "_pytest.recwarn",
    "_pytest.assertion.rewrite", "_pytest.assertion.util", "_pytest.monkeypatch", "pytest", "pluggy._hooks",
    "pluggy._callers", "pluggy._manager", "pluggy._result", "pytest_timeout", "os", "posix", "json",
    "json.encoder", "math", "operator", "torch", "torch.testing", "torch.testing._comparison", "numpy.testing",
    "torch.nn.functional", "torch.functional",
)
VERDICT_CLASSES = (
    ("torch", "Tensor"), ("torch.nn", "Module"), ("torch.nn", "Sequential"), ("torch.nn", "Parameter"),
    ("torch.nn", "BCELoss"), ("torch.optim", "Optimizer"), ("torch.optim", "Adam"),
    ("torch.utils.data", "DataLoader"), ("torch.utils.data", "Dataset"), ("torch.utils.data", "Subset"),
    ("matplotlib.figure", "Figure"), ("matplotlib.axes", "Axes"), ("matplotlib.lines", "Line2D"),
)


# Entries the libraries themselves change while checks run (not the submission's doing).
VOLATILE = frozenset({("module _pytest.assertion.util", "_config"), ("module _pytest.assertion.util", "_reprcompare"),
                      ("module _pytest.assertion.util", "_assertion_pass")})


def _settle() -> None:
    """Let the libraries make the changes they make on first use, before the record is taken:
    torch wraps an optimizer class's ``step`` when its first optimizer is made."""
    torch = sys.modules.get("torch")
    if torch is not None:
        parameter = torch.nn.Parameter(torch.zeros(1))
        for name in ("Adam", "SGD", "AdamW", "RMSprop"):
            cls = getattr(torch.optim, name, None)
            if cls is not None:
                cls([parameter])


def without_explain() -> None:
    """Hypothesis's "explain" phase reruns a failing check many times, tracing every line, to annotate its
    report; grading reads only the failure's message, so it is skipped (examples and results are unchanged).
    The zygote calls this before the checks are imported (their @settings take the default then)."""
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    explain = getattr(Phase, "explain", None)
    current = settings.default
    if explain is not None and explain in current.phases:
        settings.register_profile("kata-grade", parent=current, phases=[p for p in current.phases if p is not explain])
        settings.load_profile("kata-grade")


def _clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = text.strip("\n")
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit:,} more characters cut)"


def verdict_modules(checks: Path) -> tuple[list, list]:
    """The loaded modules and classes a verdict depends on: pytest's and pluggy's machinery, the
    kata, the checks (and their conftest files), and the library functions and classes they compare with."""
    modules = [sys.modules[name] for name in VERDICT_MODULES if name in sys.modules]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if name == "kata" or name.startswith("kata.") or (file and Path(file).is_relative_to(checks)):
            modules.append(module)
    classes = []
    for module_name, attr in VERDICT_CLASSES:
        cls = getattr(sys.modules.get(module_name), attr, None)
        if isinstance(cls, type):
            classes.append(cls)
    return modules, classes


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, pytest.fail.Exception) and str(exc).startswith("Timeout")


def _is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


class Struck(Exception):
    """This check's exercise already timed out or ended the test process too often."""


class GradePlugin:
    def __init__(self, config: dict, emit):
        self.emit = emit   # kata/grading/channel.py: signed events on the results channel
        self.skip = set(config.get("skip", ()))
        self.strikes = Counter(config.get("strikes", {}))
        self.max_strikes = config.get("max_strikes", 2)
        self.test_timeout = config["limits"]["test_timeout"]
        self.memory_mb = config["limits"]["memory_mb"]
        self.struck = {ex for ex, n in self.strikes.items() if n >= self.max_strikes}
        self.broken: dict[str, str] = dict(config.get("broken", {}))
        self.forbidden = list(config.get("forbidden", ()))
        self.exercise: dict[str, str | None] = {}
        self.records: dict[str, dict] = {}
        self.target: Target | None = None
        self.tripwire: Tripwire | None = None
        self.importing: str | None = None
        self.running: str | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config) -> None:
        without_explain()

    # --- collection, then the tripwire --------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        self.target = run_target(config)
        if self.target is not None:
            for module, message in self.broken.items():  # it ended an earlier test process
                self.target.mark_broken(module, message)
            self.target.on_import.append(self.on_import)
        for item in items:
            exercise = curriculum.exercise_of(item.path)
            self.exercise[item.nodeid] = exercise.name if exercise else None
        self.emit({"e": "collected", "ids": [item.nodeid for item in items]})
        deselected = [item for item in items if item.nodeid in self.skip]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if item.nodeid not in self.skip]
        if self.target is not None:
            self.arm(self.target)

    def arm(self, target: Target) -> None:
        """The tripwire, before the submission's first module is imported."""
        _settle()
        self.tripwire = Tripwire(str(target.path), self.forbidden, self.emit, ignore=VOLATILE)
        modules, classes = verdict_modules(locate().checks)
        self.tripwire.remember(modules, classes, own=("kata", "_pytest", "pluggy", "pytest", "test_", "conftest"))
        self.tripwire.guard_modules()
        self.tripwire.install(target.package)

    def on_import(self, module: str, stage: str) -> None:
        self.importing = module if stage == "start" else None
        self.emit({"e": "import" if stage == "start" else "imported", "module": module})

    # --- running --------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.running = nodeid
        self.emit({"e": "start", "id": nodeid})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        """A check of a struck exercise fails in its setup, before any fixture."""
        exercise = self.exercise.get(item.nodeid)
        broken = self.target is not None and exercise is not None and self.target.failure(exercise) is not None
        if exercise in self.struck and not broken:  # a broken module fails fast, with a better message
            raise Struck(f"not run: {self.strikes[exercise]} checks of exercise '{exercise}' had already run "
                         f"out of time or ended the test process, so its remaining checks were not run "
                         f"(each counts as not passed)")

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield  # the kata plugin (an inner wrapper) has already shortened its messages
        # The outcome as this plugin sees it, from the call itself (not from the report's properties).
        excinfo = call.excinfo
        report.kata_outcome = ("passed" if excinfo is None else
                               "skipped" if isinstance(excinfo.value, pytest.skip.Exception) else "failed")
        if report.kata_outcome == "failed":
            try:
                report.kata_grade = self.classify(item, call.excinfo, report)
            except Exception as exc:  # noqa: BLE001 - the grader's own helper must never break a run
                report.kata_grade = ("error", f"{report.longreprtext}\n(grader: {exc!r})")
        return report

    def pytest_runtest_logreport(self, report) -> None:
        record = self.records.setdefault(
            report.nodeid, {"outcome": "passed", "kind": None, "message": "", "duration": 0.0})
        record["duration"] += report.duration
        outcome = getattr(report, "kata_outcome", None) or report.outcome
        if outcome == "failed" and record["outcome"] != "failed":
            kind, message = getattr(report, "kata_grade", None) or ("error", report.longreprtext)
            if report.when == "teardown":
                message = "failed while cleaning up after the check:\n" + message
            record.update(outcome="failed", kind=kind, message=message)
        elif outcome == "skipped" and record["outcome"] == "passed":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            record.update(outcome="skipped", kind="skipped", message=reason.removeprefix("Skipped: "))
        if report.when == "teardown":
            self.check_integrity(report.nodeid)
            self.emit({"e": "result", "id": report.nodeid, "outcome": record["outcome"],
                       "kind": record["kind"], "message": _clip(record["message"]),
                       "duration": round(record["duration"], 3)})
            self.running = None
            self.let_go(record["kind"] == "memory")

    def check_integrity(self, nodeid: str) -> None:
        if self.tripwire is None:
            return
        for change in self.tripwire.changed():
            self.emit({"e": "flag", "where": f"while {nodeid} ran", "by": "found by the test process's integrity check",
                       "what": f"something changed what the checks rely on: {change}"})

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.emit({"e": "finish", "exitstatus": int(exitstatus)})

    # --- what went wrong, in words ----------------------------------------------------------

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
            return "timeout", self.timed_out(item, where)
        if _is_out_of_memory(exc):
            return "memory", (f"ran out of memory (the limit is {self.memory_mb:,} MB){where}:\n  "
                              f"{type(exc).__name__}: {exc}")
        if isinstance(exc, AssertionError) and not where:
            return "assert", str(exc) or report.longreprtext
        if self.target is not None:
            message = learner_error(exc, self.target.path)
            if message is not None:
                return "error", message
        checks = locate().checks
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if Path(f.filename).resolve().is_relative_to(checks)]
        at = f" (in the check, {Path(frames[-1].filename).name} line {frames[-1].lineno})" if frames else ""
        return "error", f"{excinfo.exconly()}{at}"

    def where(self, exc: BaseException) -> str:
        """', at exercises/data.py, line 4, in load_splits' when the submission's code raised it."""
        if self.target is None:
            return ""
        place = place_in(exc, self.target.path)
        return f", at {place.where}" if place is not None else ""

    def timed_out(self, item, where: str) -> str:
        exercise = self.exercise.get(item.nodeid)
        if exercise is not None:
            self.strikes[exercise] += 1
            if self.strikes[exercise] >= self.max_strikes:
                self.struck.add(exercise)
        seconds = f"{self.test_timeout:g} s"
        module = self.importing
        if module is not None and self.target is not None:
            message = (f"{self.target.display(module)} did not finish importing within {seconds} (the time "
                       f"limit of one check){where}: does it run an endless loop or long work at its top "
                       f"level? Keep the top level to definitions.")
            self.target.mark_broken(module, message)  # its other checks fail at once
            self.importing = None
            return message
        return (f"did not finish within {seconds} (the time limit of one check){where}: an endless loop, "
                f"or work far slower than it needs to be?")

    def let_go(self, collect: bool) -> None:
        """Drop what a failure holds on to (its frames, and what they hold)."""
        for attr in ("last_type", "last_value", "last_traceback", "last_exc"):
            if hasattr(sys, attr):
                setattr(sys, attr, None)
        if self.target is not None:
            self.target.forget_tracebacks()
        if collect:
            gc.collect()
