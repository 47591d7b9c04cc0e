"""The kata's pytest plugin (registered as a ``pytest11`` entry point).

It decides what a run checks:

* ``pytest exercises``, ``pytest solutions``, ``pytest PATH``: PATH is a folder of
  exercise modules (or holds one in ``exercises/``), so it becomes the *target*
  and the checks in ``tests/`` run against it. ``pytest exercises/data.py`` runs
  only the data checks.
* ``pytest --target PATH [tests/test_X.py ...]``: the same, with the checks named.
* plain ``pytest`` (no target): the project's self-check. Every check runs
  against ``solutions/`` (it must pass) and against the pristine stubs, which
  must fail it (a strict xfail: a check that passes on a stub is an error). The
  stubs are those :mod:`kata.pristine` gives (a checkout's ``exercises/NAME.py``
  while it is a stub, else the release's snapshot or git), copied to a
  temporary folder: the run never imports ``exercises/``, which in a learner's
  copy holds their work, and passes whatever it holds (its header says that
  ``pytest exercises`` checks that work). The harness's own tests in
  ``tests/selftest/`` run too.

From the curriculum it registers a marker per exercise (so ``-m data`` selects
the data checks) and a session fixture per exercise, named after it, holding
the target's module (a lazy handle: see :mod:`kata.harness.target`). It turns a
missing or broken module and an unwritten stub into one clear line instead of
a traceback, skips ``slow`` tests unless ``--slow`` (saying so), and ends a
learner's run with a table of exercises.

Everything stays inert in a pytest run that neither names a target nor collects
the kata's checks.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import types
from pathlib import Path

import pytest

from kata import curriculum, records
from kata.harness import accelerator as _accelerator
from kata.harness import asking, collector, failures, outcomes, prefetch, settings
from kata.harness.grouping import Recorder
from kata.harness.scoreboard import Scoreboard
from kata.harness.target import Target, find_target
from kata.i18n import N_, _, say
from kata.project import locate

__all__ = ["STRIKES", "STUB_MUST_FAIL", "GivenTarget", "kata_target", "run_target"]

_TARGET = pytest.StashKey["Target | None"]()      # the target of this run; None = self-check
_EXTRA_ARGS = pytest.StashKey[list]()             # positional args left once the target is taken out
_SELF_TARGETS = pytest.StashKey[list]()           # [solutions, the pristine stubs] in a self-check
_NO_STUB = pytest.StashKey[list]()                # exercises no pristine stub was found for (a self-check)
_INSTALL = pytest.StashKey[bool]()                # whether a check marked cuda was collected

# Checks of one exercise past their time limit before the rest of it is failed at once: an endless loop costs
# its exercise two time limits (two minutes in `pytest exercises`, one in kata watch), not one per check.
STRIKES = 2
STRUCK = N_("not run: {n} checks of this exercise ran out of time (an endless loop?)")
_THREADS = pytest.StashKey[types.FunctionType]()   # what sets torch's threads back when the run ends
_TIMEOUTS = pytest.StashKey[dict]()             # {exercise: checks of it that ran out of time}

STUB_MUST_FAIL = N_(
    "a pristine stub must fail every check (plain `pytest` is the project's self-check, on the stubs as "
    "handed out, whatever exercises/ holds; to check your own work in exercises/, run `pytest exercises`)"
)
STUBS = "stubs"   # the self-check's target of pristine stubs, and its checks' id: test_x[stubs]


class GivenTarget:
    """A plugin object that hands a run its target directly, for a target that is not
    a folder named on the command line (a notebook's functions, say):

        pytest.main([str(checks_file)], plugins=[GivenTarget(target)])
    """

    def __init__(self, target: Target):
        self.kata_given_target = target


def _given_target(config: pytest.Config) -> Target | None:
    for plugin in config.pluginmanager.get_plugins():
        target = getattr(plugin, "kata_given_target", None)
        if isinstance(target, Target):
            return target
    return None


def run_target(config: pytest.Config) -> Target | None:
    """The target this run checks; None for the project's self-check or an unrelated run."""
    return config.stash.get(_TARGET, None)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kata", "device-kata")
    group.addoption("--target", dest="kata_target", metavar="PATH", default=None,
                    help=_("folder of exercise modules to check (or one holding exercises/); "
                           "`pytest PATH` does the same when PATH is such a folder"))
    group.addoption("--records-from", dest="kata_records_from", metavar="FILE", default=None,
                    help=_("read the records' answers from FILE (kata grade) instead of asking the target's modules"))
    group.addoption("--slow", dest="kata_slow", action="store_true", default=False,
                    help=_("also run the checks marked slow (CI does)"))
    group.addoption("--accelerator", dest="kata_accelerator", default="auto", choices=list(_accelerator.CHOICES),
                    help=_("where the checks marked cuda run: auto (default) takes real CUDA, else MPS, "
                           "else the simulated accelerator (kata.sim)"))
    from kata.asgpu.pytest_plugin import HELP as AS_GPU

    group.addoption("--as-gpu", dest="kata_as_gpu", action="store_true", default=False, help=_(AS_GPU))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser, args) -> None:
    """Find the target among the positional arguments, before conftests load."""
    collector.pause(early_config)   # until the checks are collected (kata/harness/collector.py)
    ns = early_config.known_args_namespace
    given = _given_target(early_config)
    if given is not None:
        early_config.stash[_TARGET] = given
        early_config.stash[_EXTRA_ARGS] = list(ns.file_or_dir or [str(locate().checks)])
        return
    explicit = getattr(ns, "kata_target", None)
    target_path: Path | None = None
    if explicit:
        target_path = find_target(explicit)
        if target_path is None:
            where = Path(explicit).expanduser().resolve()
            if not where.exists():
                raise pytest.UsageError(say("--target {path}: no such file or folder ({where})", path=explicit,
                                            where=where))
            target_path = where if where.is_dir() else where.parent

    rest: list[str] = []
    found: list[tuple[str, Path]] = []
    for arg in ns.file_or_dir or []:
        folder = find_target(arg.split("::")[0])
        if folder is None:
            rest.append(arg)
        else:
            found.append((arg, folder))
    if not found and target_path is None:
        early_config.stash[_TARGET] = None
        return

    folders = {folder for _, folder in found} | ({target_path} if target_path else set())
    if len(folders) > 1:
        raise pytest.UsageError(say("one target at a time: {folders} (to grade a class, use `kata grade`)",
                                    folders=", ".join(sorted(map(str, folders)))))
    folder = folders.pop()
    checks = locate().checks
    # `pytest exercises/data.py` checks just that exercise.
    for arg, _folder in found:
        name = Path(arg.split("::")[0]).stem
        if arg.endswith(".py") and name in curriculum.names():
            rest.append(str(checks / f"test_{name}.py"))
    if not rest:
        benchmarks_only = getattr(ns, "benchmark_only", False)
        rest = [str(checks / "benchmarks" if benchmarks_only else checks)]
    early_config.stash[_TARGET] = Target(folder)
    early_config.stash[_EXTRA_ARGS] = rest
    ns.file_or_dir = rest
    # Load the checks' conftest files even when the target lies outside the project.
    root = locate().root
    if ns.confcutdir and not root.is_relative_to(Path(ns.confcutdir).resolve()):
        ns.confcutdir = str(root)


def _exercise_fixture(name: str):
    def fixture(kata_target: Target, request: pytest.FixtureRequest):
        return asking.asking_for(request.config, kata_target, name) or kata_target.module(name)

    fixture.__doc__ = (f"Exercise '{name}' in the folder under check: its records' answers (kata/harness/asking.py), "
                       "or its module (imported on first use) where it has no records.")
    return pytest.fixture(fixture, scope="session", name=name)


def _exercise_fixtures() -> types.ModuleType:
    """A plugin module holding one fixture per exercise, named after it (pytest reads
    fixtures from a plugin module's attributes)."""
    module = types.ModuleType("kata.harness.exercise_fixtures", "One fixture per exercise, made from the curriculum.")
    for ex in curriculum.exercises():
        setattr(module, f"kata_exercise_{ex.name}", _exercise_fixture(ex.name))
    return module


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # pytest reads a marker's name up to the colon: the name stays, its description is translated
    for ex in curriculum.exercises():
        config.addinivalue_line("markers", f"{ex.name}: " + say("the checks of exercise {label}", label=ex.label))
    config.addinivalue_line("markers", "cuda: " + _("needs an accelerator (real CUDA, MPS, or the simulated one)"))
    config.addinivalue_line("markers", "slow: " + _("takes more than a few seconds; runs only with --slow (CI runs "
                                                    "them)"))
    # The last of the run's clean-ups (they run last in, first out): after pytest's own collections at the end.
    config.add_cleanup(lambda: collector.thaw(config))
    config.pluginmanager.register(_exercise_fixtures(), "kata-exercise-fixtures")
    config.pluginmanager.register(_accelerator, "kata-accelerator")
    config.pluginmanager.register(prefetch, prefetch.NAME)   # blocked by -p no:kata-prefetch
    if config.getoption("kata_as_gpu", False):
        from kata.asgpu.pytest_plugin import AsGpu

        config.pluginmanager.register(AsGpu(config), "kata-as-gpu")
    if _TARGET not in config.stash:   # e.g. pytester runs that skip initial conftests
        config.stash[_TARGET] = None
    benchmarks_only = config.getoption("benchmark_only", False)
    if config.getoption("kata_slow") and not benchmarks_only:
        # The smoke pass: each benchmark runs once, untimed, so they never rot.
        config.option.benchmark_skip = False
        config.option.benchmark_disable = True
    target = run_target(config)
    settings.apply(config, learner=target is not None)
    if target is not None:
        config.args = list(config.stash[_EXTRA_ARGS])
        config.option.confcutdir = config.known_args_namespace.confcutdir
        if not benchmarks_only:
            recorder = next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Recorder)), None)
            if recorder is None:
                recorder = Recorder()
                config.pluginmanager.register(recorder, "kata-recorder")
            recorder.tracebacks = _tracebacks_asked(config)
            config.pluginmanager.register(Scoreboard(config, target, recorder), "kata-scoreboard")
    else:
        project = locate()
        stubs, config.stash[_NO_STUB] = _pristine_stubs(config)
        config.stash[_SELF_TARGETS] = [
            *([Target(project.solutions, "solutions")] if project.has_solutions else []),
            Target(stubs, STUBS),
        ]


def _pristine_stubs(config: pytest.Config) -> tuple[Path, list[str]]:
    """The stubs as handed out (kata.pristine), in a temporary folder removed when the run ends, and the
    exercises none was found for (a learner's copy without a snapshot or git history: the stubs'
    self-check leaves them out, and the header says so)."""
    from kata import pristine

    folder = Path(tempfile.mkdtemp(prefix="kata-stubs-"))
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    stubs = folder / STUBS
    return stubs, pristine.write_stubs(stubs)


def _in_project(path: Path) -> bool:
    return path.is_relative_to(locate().root)


@pytest.hookimpl(wrapper=True)
def pytest_report_header(config: pytest.Config):
    """The kata's header lines first (pytest prints the hooks' answers last first), then the other plugins'
    (without their settings in a learner's run)."""
    lines = yield
    if run_target(config) is not None:
        lines = settings.learner_header(lines)
    own = _header(config)
    return [*lines, own] if own else lines


def _header(config: pytest.Config) -> list[str] | None:
    """What is checked, and where the cuda-marked checks run (torch's version and the device)."""
    target = run_target(config)
    line = say("kata accelerator: {accelerator}", accelerator=_accelerator.accelerator_of(config).line)
    if target is not None:
        return [say("kata: checking {target} ({path})", target=target.display(), path=target.path), line]
    checks, root = locate().checks, locate().root
    paths = [(config.invocation_params.dir / a.split("::")[0]).resolve() for a in config.args]
    if any(p.is_relative_to(checks) or p == root for p in paths):
        lines = [_("kata: project self-check: solutions/ must pass every check, the pristine stubs must fail each"),
                 _("kata: your work in exercises/ is not checked here: `pytest exercises` checks it")]
        missing = config.stash.get(_NO_STUB, [])
        if missing:
            lines.append(say("kata: no pristine stub of {exercises} (no .kata/pristine/ snapshot, no git history): "
                             "the stubs' self-check leaves them out", exercises=", ".join(missing)))
        return [*lines, line]
    return None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A learner's run is the checks alone: not the harness's own tests, and the
    # benchmarks only when asked for (--benchmark-only, or --slow for a smoke pass).
    if run_target(config) is None:
        return None
    checks = locate().checks
    if collection_path == checks / "selftest":
        return True
    if collection_path == checks / "benchmarks":
        return not (config.getoption("benchmark_only", False) or config.getoption("kata_slow"))
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kata_target" not in metafunc.fixturenames or run_target(metafunc.config) is not None:
        return
    targets = []
    exercise = curriculum.exercise_of(metafunc.definition.path)
    missing = metafunc.config.stash.get(_NO_STUB, [])
    for target in metafunc.config.stash[_SELF_TARGETS]:
        if target.name == "solutions":
            targets.append(pytest.param(target, id="solutions"))
        elif exercise is not None and exercise.name not in missing:  # a learner's check: stubs fail it
            targets.append(pytest.param(target, id=STUBS,
                                        marks=pytest.mark.xfail(strict=True, reason=_(STUB_MUST_FAIL))))
    metafunc.parametrize("kata_target", targets, indirect=True, scope="session")


@pytest.fixture(scope="session")
def kata_target(request: pytest.FixtureRequest) -> Target:
    """The folder of exercise modules under test."""
    if hasattr(request, "param"):
        return request.param
    target = run_target(request.config)
    if target is None:
        raise pytest.UsageError(_("no kata target: run `pytest exercises`, `pytest solutions` or "
                                  "`pytest --target PATH`"))
    return target


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unbound = []
    chosen = None
    mine = [item for item in items if _in_project(item.path)]
    for item in mine:
        if item.get_closest_marker("slow") and not config.getoption("kata_slow"):
            item.add_marker(pytest.mark.skip(reason=_("slow: runs with --slow (CI runs it)")))
        if item.get_closest_marker("cuda"):
            chosen = chosen or _accelerator.accelerator_of(config)
            if not chosen.available:
                item.add_marker(pytest.mark.skip(reason=chosen.line))
        exercise = curriculum.exercise_of(item.path)
        if exercise is None:
            continue
        item.add_marker(getattr(pytest.mark, exercise.name))
        if "kata_target" not in getattr(item, "fixturenames", ()):
            unbound.append(item.nodeid)
    config.stash[_INSTALL] = chosen is not None   # installed once the checks are collected (after the helper's fork)
    if unbound:
        raise pytest.UsageError(
            "these checks never touch the target, so they could pass on a stub: " + ", ".join(unbound))


def _checks_run(session: pytest.Session) -> bool:
    """Whether this run checks a target or collected the kata's checks (not an unrelated run)."""
    return run_target(session.config) is not None or any(curriculum.exercise_of(item.path) for item in session.items)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    checks, target = _checks_run(session), run_target(session.config)
    ours = [ex.name for ex in map(curriculum.exercise_of, (item.path for item in session.items)) if ex is not None]
    if checks:
        collector.freeze_collected(session.config)
    if target is not None:   # records asked ahead on a second core, forked before the accelerator's install
        prefetch.start(session.config, target, [n for n in dict.fromkeys(ours)
                                                if locate().records_of(n).is_file() and target.file(n).is_file()])
    if session.config.stash.get(_INSTALL, False):
        _accelerator.install_if_simulated(session.config)
    if checks and ours:   # the checks (not the benchmarks)
        session.config.stash[_THREADS] = records.few_threads()   # set back at the end (a notebook's kernel goes on)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _checks_run(session):
        collector.freeze_at_exit()
    session.config.stash.get(_THREADS, lambda: None)()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In a run with a target, the rest of an exercise whose checks ran out of time STRIKES times fails at once."""
    exercise = curriculum.exercise_of(item.path)
    asking.reading(item if exercise is not None else None)
    if exercise is None or run_target(item.config) is None:
        return
    struck = item.config.stash.get(_TIMEOUTS, {}).get(exercise.name, 0)
    if struck >= STRIKES:
        pytest.fail(say(STRUCK, n=struck), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A Hypothesis check without shrinking in a learner's run and on the stubs (kata/harness/settings.py)."""
    on_stubs = getattr(_target_of(item), "name", None) == STUBS
    with settings.hypothesis_for_the_call(getattr(item, "obj", None), learner=run_target(item.config) is not None,
                                          must_fail=on_stubs):
        return (yield)


def _target_of(item: pytest.Item) -> Target | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "kata_target" in callspec.params:
        return callspec.params["kata_target"]
    return run_target(item.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A kata check's report: in a run with a target, the properties the outcome model reads
    (kata/harness/outcomes.py); for a failure, its message (kata/harness/failures.py), in place of
    pytest's traceback where that says more."""
    exercise = curriculum.exercise_of(item.path)
    if exercise is None:
        return (yield)
    learner = run_target(item.config) is not None
    target = _target_of(item)
    failure = replaced = None
    if call.excinfo is not None and target is not None and not isinstance(call.excinfo.value, pytest.skip.Exception):
        timeout = item.config.getoption("timeout", None) or settings.CHECK_TIMEOUT
        raised = [value for key, value in item.user_properties if key == asking.RAISED]
        failure = failures.describe(call.excinfo, target, timeout, raised)
        mine = failure.todo or failure.kind in ("TargetError", "Timeout")   # never a traceback worth reading
        if mine or (learner and not (failure.traceback and _tracebacks_asked(item.config))):
            replaced = failure.message
    with _no_traceback_made(item, replaced):
        report = yield
    if failure is not None and report.failed:
        if replaced is not None:
            report.longrepr = replaced
        report.kata_todo = failure.todo   # read by kata/grading/plugin.py until it reads the properties
        if failure.kind == "Timeout" and learner:
            timeouts = item.config.stash.setdefault(_TIMEOUTS, {})
            timeouts[exercise.name] = timeouts.get(exercise.name, 0) + 1
    if learner:
        report.user_properties += outcomes.properties(exercise.name, *_decided(report, exercise.name,
                                                                               failure if report.failed else None))
    return report


@contextlib.contextmanager
def _no_traceback_made(item: pytest.Item, message: str | None):
    """While pytest makes the report of a failure whose message replaces its traceback, the item gives that
    message as its failure's representation: pytest's own (every frame's source read and parsed) is never
    shown, and cost a stub's run of the devices checks 0.7 s."""
    if message is None:
        yield
        return
    item.repr_failure = item._repr_failure_py = lambda *args, **kwargs: message
    try:
        yield
    finally:
        del item.repr_failure, item._repr_failure_py


def _tracebacks_asked(config: pytest.Config) -> bool:
    """Whether the command line chose a traceback style (--tb=short, long, native...): pytest's tracebacks."""
    return config.option.tbstyle not in ("auto", None)


def _decided(report: pytest.TestReport, exercise: str, failure: failures.Failure | None):
    """(outcome, cause, message) of a report, for the outcome model (Nones where it decides nothing)."""
    if report.failed:
        failure = failure or failures.Failure(outcomes.clean(report.longreprtext) or "failed", "error")
        return ("todo" if failure.todo else "failed", outcomes.cause_key(exercise, failure.kind, failure.cause),
                failure.message)
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        return "skipped", None, outcomes.clean(str(reason).removeprefix("Skipped: "))
    return ("passed" if report.when == "call" else None), None, None
