"""The kata's pytest plugin (registered as a ``pytest11`` entry point).

It decides what a run checks:

* ``pytest exercises``, ``pytest solutions``, ``pytest PATH``: PATH is a folder of
  contract modules (or holds one in ``exercises/``), so it becomes the *target*
  and the checks in ``tests/`` run against it. ``pytest exercises/data.py`` runs
  only the data checks.
* ``pytest --target PATH [tests/test_X.py ...]``: the same, with the checks named.
* plain ``pytest`` (no target): the project's self-check. Every check runs
  against ``solutions/`` (it must pass) and against ``exercises/``, whose
  untouched stubs must fail it (a strict xfail: a check that passes on a stub is
  an error). The harness's own tests in ``tests/selftest/`` run too.

It also registers the markers, marks each check with its exercise (so ``-m data``
selects the data checks), turns a missing or broken module and an unwritten stub
into one clear line instead of a traceback, skips ``slow`` tests unless
``--slow`` says otherwise (saying so), and ends a learner's run with a table of
exercises.

Everything stays inert in a pytest run that neither names a target nor collects
the kata's checks.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kata.target import (CHECKS_DIR, CONTRACT, PROJECT_ROOT, Target, TargetError, curriculum,
                         find_target, learner_error)

TARGET = pytest.StashKey["Target | None"]()      # the target of this run; None = self-check
EXTRA_ARGS = pytest.StashKey[list]()             # positional args left once the target is taken out
SELF_TARGETS = pytest.StashKey[list]()           # [solutions, exercises] in a self-check
ACCELERATOR = pytest.StashKey[tuple]()           # (device type or None, the header line saying why)

STUB_MUST_FAIL = (
    "an untouched stub in exercises/ must fail every check (plain `pytest` is the project's "
    "self-check; to check your own work in exercises/, run `pytest exercises`)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kata", "device-kata")
    group.addoption("--target", dest="kata_target", metavar="PATH", default=None,
                    help="folder of contract modules to check (or one holding exercises/); "
                         "`pytest PATH` does the same when PATH is such a folder")
    group.addoption("--slow", dest="kata_slow", action="store_true", default=False,
                    help="also run the checks marked slow (CI does)")
    group.addoption("--accelerator", dest="kata_accelerator", default="auto",
                    choices=["auto", "cuda", "mps", "sim"],
                    help="where the checks marked cuda run: auto (default) takes real CUDA, else MPS, "
                         "else the simulated accelerator (kata/simulator.py)")


def _check_exercise(path: Path) -> str | None:
    """'data' for tests/test_data.py, None for anything that is not a learner's check."""
    if path.parent == CHECKS_DIR and path.name.startswith("test_") and path.stem[5:] in CONTRACT:
        return path.stem[5:]
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser, args) -> None:
    """Find the target among the positional arguments, before conftests load."""
    ns = early_config.known_args_namespace
    explicit = getattr(ns, "kata_target", None)
    target_path: Path | None = None
    if explicit:
        target_path = find_target(explicit)
        if target_path is None:
            where = Path(explicit).expanduser().resolve()
            if not where.exists():
                raise pytest.UsageError(f"--target {explicit}: no such file or folder ({where})")
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
        early_config.stash[TARGET] = None
        return

    folders = {folder for _, folder in found} | ({target_path} if target_path else set())
    if len(folders) > 1:
        raise pytest.UsageError(
            "one target at a time: " + ", ".join(sorted(map(str, folders)))
            + " (to grade a class, use `kata grade`)")
    folder = folders.pop()
    # `pytest exercises/data.py` checks just that exercise.
    for arg, _ in found:
        name = Path(arg.split("::")[0]).stem
        if arg.endswith(".py") and name in CONTRACT:
            rest.append(str(CHECKS_DIR / f"test_{name}.py"))
    if not rest:
        benchmarks_only = getattr(ns, "benchmark_only", False)
        rest = [str(CHECKS_DIR / "benchmarks" if benchmarks_only else CHECKS_DIR)]
    early_config.stash[TARGET] = Target(folder)
    early_config.stash[EXTRA_ARGS] = rest
    ns.file_or_dir = rest
    # Load the checks' conftest files even when the target lies outside the project.
    if ns.confcutdir and not PROJECT_ROOT.is_relative_to(Path(ns.confcutdir).resolve()):
        ns.confcutdir = str(PROJECT_ROOT)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for ex in curriculum():
        config.addinivalue_line("markers", f"{ex['name']}: the checks of exercise '{ex['name']}'")
    config.addinivalue_line("markers", "cuda: needs an accelerator")
    config.addinivalue_line("markers", "slow: runs only with --slow")
    if TARGET not in config.stash:   # e.g. pytester runs that skip initial conftests
        config.stash[TARGET] = None
    benchmarks_only = config.getoption("benchmark_only", False)
    if config.getoption("kata_slow") and not benchmarks_only:
        # The smoke pass: each benchmark runs once, untimed, so they never rot.
        config.option.benchmark_skip = False
        config.option.benchmark_disable = True
    if config.stash[TARGET] is not None:
        config.args = list(config.stash[EXTRA_ARGS])
        config.option.confcutdir = config.known_args_namespace.confcutdir
        if not benchmarks_only:
            config.pluginmanager.register(_Scoreboard(config, config.stash[TARGET]), "kata-scoreboard")
    else:
        config.stash[SELF_TARGETS] = [
            Target(PROJECT_ROOT / "solutions", "solutions"),
            Target(PROJECT_ROOT / "exercises", "exercises"),
        ]


def accelerator_choice(config: pytest.Config) -> tuple[str | None, str]:
    """(device type to run the cuda-marked checks on, or None; a line saying which and why).

    Worked out on first use only (it imports torch), so unrelated pytest runs stay fast."""
    if ACCELERATOR not in config.stash:
        config.stash[ACCELERATOR] = _choose_accelerator(config.getoption("kata_accelerator", "auto"))
    return config.stash[ACCELERATOR]


def _choose_accelerator(choice: str) -> tuple[str | None, str]:
    import torch

    cuda, mps = torch.cuda.is_available(), torch.backends.mps.is_available()
    if choice == "auto":
        choice = "cuda" if cuda else "mps" if mps else "sim"
        why = {"cuda": f"real CUDA: {torch.cuda.get_device_name(0)}" if cuda else "",
               "mps": "Apple MPS", "sim": "simulated (no CUDA or MPS found)"}[choice]
        return choice, f"accelerator: {why}"
    if choice == "cuda" and not cuda:
        return None, "accelerator: --accelerator cuda, but no CUDA device here: the cuda checks are skipped"
    if choice == "mps" and not mps:
        return None, "accelerator: --accelerator mps, but MPS is not available here: the cuda checks are skipped"
    return choice, {"cuda": "accelerator: real CUDA (forced)", "mps": "accelerator: Apple MPS (forced)",
                    "sim": "accelerator: simulated (forced with --accelerator sim)"}[choice]


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    target = config.stash.get(TARGET, None)
    if target is not None:
        return [f"kata: checking {target.display()} ({target.path})", f"kata {accelerator_choice(config)[1]}"]
    paths = [(config.invocation_params.dir / a.split("::")[0]).resolve() for a in config.args]
    if any(p.is_relative_to(CHECKS_DIR) or p == PROJECT_ROOT for p in paths):
        return ["kata: project self-check: solutions/ must pass every check, exercises/ (stubs) must fail each",
                f"kata {accelerator_choice(config)[1]}"]
    return None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A learner's run is the checks alone: not the harness's own tests, and the
    # benchmarks only when asked for (--benchmark-only, or --slow for a smoke pass).
    if config.stash.get(TARGET, None) is None:
        return None
    if collection_path == CHECKS_DIR / "selftest":
        return True
    if collection_path == CHECKS_DIR / "benchmarks":
        return not (config.getoption("benchmark_only", False) or config.getoption("kata_slow"))
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kata_target" not in metafunc.fixturenames:
        return
    config = metafunc.config
    if config.stash.get(TARGET, None) is not None:
        return
    solutions, exercises = config.stash[SELF_TARGETS]
    targets = [pytest.param(solutions, id="solutions")]
    if _check_exercise(metafunc.definition.path) is not None:  # a learner's check: stubs must fail it
        targets.append(pytest.param(exercises, id="exercises",
                                    marks=pytest.mark.xfail(strict=True, reason=STUB_MUST_FAIL)))
    metafunc.parametrize("kata_target", targets, indirect=True, scope="session")


@pytest.fixture(scope="session")
def kata_target(request: pytest.FixtureRequest) -> Target:
    """The folder of contract modules under test."""
    if hasattr(request, "param"):
        return request.param
    target = request.config.stash.get(TARGET, None)
    if target is None:
        raise pytest.UsageError("no kata target: run `pytest exercises`, `pytest solutions` or `pytest --target PATH`")
    return target


@pytest.fixture(scope="session")
def accelerator(request: pytest.FixtureRequest):
    """The device the checks marked cuda run on: real CUDA, MPS, or the simulated one."""
    import torch

    kind, why = accelerator_choice(request.config)
    if kind is None:
        pytest.skip(why)
    if kind == "sim":
        from kata import simulator

        return simulator.install()
    return torch.device(kind)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unbound = []
    for item in items:
        if not item.path.is_relative_to(PROJECT_ROOT):
            continue
        if item.get_closest_marker("slow") and not config.getoption("kata_slow"):
            item.add_marker(pytest.mark.skip(reason="slow: runs with --slow (CI runs it)"))
        if item.get_closest_marker("cuda") and accelerator_choice(config)[0] is None:
            item.add_marker(pytest.mark.skip(reason=accelerator_choice(config)[1].removeprefix("accelerator: ")))
        exercise = _check_exercise(item.path)
        if exercise is None:
            continue
        item.add_marker(getattr(pytest.mark, exercise))
        if "kata_target" not in getattr(item, "fixturenames", ()):
            unbound.append(item.nodeid)
    # The simulated accelerator must be installed before autograd's first backward pass
    # (the engine sizes its per-device queues then), so install it before any test runs.
    if any(item.get_closest_marker("cuda") for item in items if item.path.is_relative_to(PROJECT_ROOT)):
        if accelerator_choice(config)[0] == "sim":
            from kata import simulator

            simulator.install()
    if unbound:
        raise pytest.UsageError(
            "these checks never touch the target, so they could pass on a stub: " + ", ".join(unbound))


def _target_of(item: pytest.Item) -> Target | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "kata_target" in callspec.params:
        return callspec.params["kata_target"]
    return item.config.stash.get(TARGET, None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    excinfo = call.excinfo
    if excinfo is None or not report.failed or _check_exercise(item.path) is None:
        return report
    target = _target_of(item)
    if excinfo.errisinstance(TargetError):
        report.longrepr = str(excinfo.value)
    elif excinfo.errisinstance(NotImplementedError) and target is not None:
        message = learner_error(excinfo.value, target)
        if message is not None:
            report.longrepr = message
            report.kata_todo = True
    return report


class _Scoreboard:
    """Collects each check's outcome and ends a learner's run with a table."""

    def __init__(self, config: pytest.Config, target: Target):
        self.config = config
        self.target = target
        self.exercise_of: dict[str, str] = {}
        self.outcome: dict[str, str] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            exercise = _check_exercise(item.path)
            if exercise is not None:
                self.exercise_of[item.nodeid] = exercise

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.outcome[report.nodeid] = "todo" if getattr(report, "kata_todo", False) else "failed"
        elif report.skipped:
            self.outcome.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcome.setdefault(report.nodeid, "passed")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """One line per exercise, in curriculum order, then what to do next."""
        if not self.exercise_of:
            return
        counts: dict[str, Counter] = defaultdict(Counter)
        for nodeid, exercise in self.exercise_of.items():
            counts[exercise][self.outcome.get(nodeid, "not run")] += 1
        tr, target = terminalreporter, self.target
        tr.write_sep("=", f"kata: {target.display()}")
        next_up = None
        for number, ex in enumerate(curriculum(), 1):
            c = counts.get(ex["name"])
            if not c:
                continue
            total, done = sum(c.values()), c["passed"]
            if done == total:
                status = "done"
            elif c["todo"] and not done and c["todo"] + c["skipped"] == total:
                status = "not started: every check stops at the stub"
            else:
                status = ", ".join(f"{c[k]} {label}" for k, label in (
                    ("failed", "failing"), ("todo", "at a stub"), ("skipped", "skipped"),
                    ("not run", "not run")) if c[k])
            unfinished = done < total - c["skipped"]
            if unfinished and next_up is None:
                next_up = (number, ex)
            tr.write_line(f"  {number}. {ex['name']:<9} {done:>3}/{total:<3} passed   {status}",
                          green=not unfinished, red=unfinished)
        if next_up is None:
            tr.write_line("  Every exercise checked here passes.", green=True, bold=True)
            return
        number, ex = next_up
        tr.write_line("")
        tr.write_line(f"  Next: {number}. {ex['name']}: {ex['title']}", bold=True)
        tr.write_line(f"  Edit {target.display(ex['name'])}, check it alone with "
                      f"`pytest {target.display(ex['name'])}`, and see `kata hint {ex['name']}`.")
