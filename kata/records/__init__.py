"""Records: the one place a scenario is written (what to ask a learner's module, on what), answered as data.

Exercise NAME's records live in ``records/NAME.py`` beside ``tests/``: functions decorated with
:func:`record`. Each says what to ask the module (``ask(module, *args)``), on which inputs (``cases``: a
list, or a function of a seeded :class:`Draw`, Hypothesis-backed where a rule holds over many inputs), and
what its answers rest on (:data:`RESTS`). A check in ``tests/test_NAME.py`` asks the exercise's fixture for
a record's cases and asserts its one rule on them (:mod:`kata.harness.asking`).

A record's answer is plain data (:mod:`kata.records.wire`): in a learner's run the cases are asked in the
checks' own process and their answers go through the wire and back, as in grading, where the sandbox asks
them and the checks, in a process that never imports the hand-in, read the answers while drawing the same
inputs themselves from the same seed (an answer never brings its own inputs).

The records import neither pytest nor ``kata.checks`` (the book's answers): the sandbox that asks them has
neither.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import linecache
import random
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kata.i18n import say
from kata.records.wire import typed

__all__ = ["BEHAVIOUR", "CELEBA", "CONSTANT", "DATA", "EXAMPLES", "EXERCISE_TIMEOUTS", "PROCESS", "PROPERTY",
           "RECORD_SECONDS", "RESTS", "SHAPE", "SOURCE", "WORK", "Context", "Draw", "Record", "TimedOut", "answer",
           "ask_all", "ask_exercise", "ask_source", "caught", "context", "digest", "error_text", "few_threads",
           "line_of", "load", "module_of", "placed", "raised_at", "raised_within", "record", "small_celeba", "timed",
           "using"]

# What an answer rests on: what a hand-in must do to give the right one.
WORK = "work"             # compute the function's answer on inputs drawn for this hand-in
SOURCE = "source"         # declare it in its source, read outside its process (kata/records/declared.py)
CONSTANT = "constant"     # nothing: a value of the contract, the same for every input
SHAPE = "shape"           # nothing: a type, shape or structure the inputs already tell
PROPERTY = "property"     # nothing: a property any made-up value can have
BEHAVIOUR = "behaviour"   # nothing its output shows: what the process did, as the process reports it
PROCESS = (CONSTANT, SHAPE, PROPERTY, BEHAVIOUR)   # the answers that rest on the graded process
RESTS = (WORK, SOURCE, *PROCESS)

RECORD_SECONDS = 10.0   # one record's time, where a hand-in is asked (correct code takes well under a second)
EXERCISE_TIMEOUTS = 2   # records of one exercise that ran out of time before the rest of it is not asked
# torch's CPU threads while records are asked and checked: their work is tiny (batches of a few 64x64 images),
# where a second thread costs more than it gains (on a busy 2-core machine, OpenMP's waiting threads spin: pytest
# solutions took 11-12 s on two threads, 8.3-8.9 s on one), and one thread computes the same floats in every process.
THREADS = 1
EXAMPLES = 20   # the inputs a Hypothesis-backed draw gives a record (the same in every process that draws them)
# The records' CelebA (Context.celeba): small, drawn from one seed, the same wherever it is drawn (two batches of 8
# in each split).
CELEBA = dict(n_train=40, n_valid=12, n_test=12, seed=1234)
DATA = "records-celeba"   # where the grader's data folder (one per run, read-only in every sandbox) holds it


class Draw:
    """A record's own randomness: the same inputs wherever the same seed draws them."""

    def __init__(self, seed: int, name: str):
        self.rng = random.Random(f"{seed}:{name}")

    def int(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options):
        return self.rng.choice(list(options))

    def shuffled(self, options) -> list:
        items = list(options)
        self.rng.shuffle(items)
        return items

    def seed(self) -> int:
        return self.rng.getrandbits(48)

    def generator(self):
        import torch

        return torch.Generator().manual_seed(self.seed())

    def examples(self, strategy, n: int = EXAMPLES, explicit=()) -> list:
        """``explicit`` first, then up to ``n`` values of a Hypothesis ``strategy``, drawn from this draw's seed
        (Hypothesis's own generation, never shrunk: nothing fails while drawing)."""
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as seeded

        found = list(explicit)

        @seeded(self.seed())
        @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate], derandomize=False,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def collect(value):
            if len(found) < n + len(explicit):
                found.append(value)

        with _no_local_constants():
            collect()
        return found


@contextlib.contextmanager
def _no_local_constants():
    """Hypothesis mixes into what it draws the constants of the modules this process has loaded (the checks', a
    hand-in's): two processes would draw other inputs from one seed. Only its global constants, while drawing.
    (Private names of Hypothesis, in this one place; where they are gone, the inputs' fingerprints still tell.)"""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        yield
        return
    get, cache_ = getattr(providers, "_get_local_constants", None), getattr(providers, "CONSTANTS_CACHE", None)
    if get is None or cache_ is None or not hasattr(providers, "Constants"):
        yield
        return
    empty = providers.Constants()
    providers._get_local_constants, providers.CONSTANTS_CACHE = (lambda: empty), {}
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = get, cache_


@dataclass
class Context:
    """What records may use besides their inputs: where things are in this process."""

    accelerator: Any = None          # a torch.device other than the CPU (simgpu, CUDA, MPS), or None
    tmp: Path | None = None          # a folder records may write into
    where: Any = None                # the records' CelebA: its folder, or a function giving it when first used

    @property
    def celeba(self) -> Path:
        """The records' synthetic CelebA (:data:`CELEBA`; the folder above celeba/), drawn when first used."""
        if callable(self.where):
            self.where = self.where()
        if self.where is None:
            raise RuntimeError("these records were asked without a CelebA")
        return Path(self.where)


def small_celeba(root: Path) -> Path:
    """Draw the records' CelebA (:data:`CELEBA`) under ``root`` (the folder above celeba/), unless it is there; two
    processes of one run (kata/harness/prefetch.py's helper and the run's) draw it once, the other waiting."""
    from kata.data.synth import generate

    with _drawing(Path(root)):
        if not (Path(root) / "celeba" / "list_eval_partition.txt").is_file():
            generate(root, **CELEBA, workers=1, progress=False)
    return Path(root)


@contextlib.contextmanager
def _drawing(root: Path):
    """An exclusive lock on ``root``'s ``.drawing`` while it is held (none where there are no locks, or the folder
    is only read: the grader's data folder, drawn already)."""
    try:
        import fcntl

        root.mkdir(parents=True, exist_ok=True)
        lock = open(root / ".drawing", "w")  # noqa: SIM115 - held for the with below
    except (ImportError, OSError):
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def few_threads() -> Callable[[], None]:
    """torch on :data:`THREADS` CPU threads (where this process has imported it); returns what sets them back."""
    torch = sys.modules.get("torch")
    if torch is None:
        return lambda: None
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    return lambda: torch.set_num_threads(before)


_CONTEXT = [Context()]


def context() -> Context:
    """The context the records are asked in."""
    return _CONTEXT[-1]


@contextlib.contextmanager
def using(ctx: Context) -> Iterator[Context]:
    _CONTEXT.append(ctx)
    try:
        yield ctx
    finally:
        _CONTEXT.pop()


@dataclass(frozen=True)
class Record:
    """One question to an exercise's module: ``ask(module, *case)`` for each case."""

    name: str
    ask: Callable
    cases: Callable[[Draw], list] | list | None = None
    rests: tuple[str, ...] = (WORK,)   # what its answers rest on (one of RESTS each: more where parts differ)
    about: str = ""
    accelerator: bool = False   # asked only where there is an accelerator (context().accelerator)

    @property
    def of_source(self) -> bool:
        """Whether it is asked of the hand-in's source (its files, name -> text: ``ask(files, *case)``), read where
        the hand-in never runs, instead of its module: a record resting on the source alone."""
        return self.rests == (SOURCE,)

    def inputs(self, seed: int, exercise: str) -> list[tuple]:
        """The cases drawn from ``seed``: each a tuple of arguments after the module."""
        if self.cases is None:
            return [()]
        found = self.cases(Draw(seed, f"{exercise}.{self.name}")) if callable(self.cases) else list(self.cases)
        return [(c,) if _one_argument(self.ask) or not isinstance(c, tuple) else c for c in found]


@cache
def _one_argument(ask: Callable) -> bool:
    """Whether ``ask`` takes one argument after the module (each case is then that argument, a tuple or not)."""
    import inspect

    params = list(inspect.signature(ask).parameters.values())[1:]
    return len(params) == 1 and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)


def record(cases=None, *, rests: str | tuple[str, ...] = WORK, name: str | None = None,
           accelerator: bool = False) -> Callable[[Callable], Record]:
    """Make ``ask(module, *args)`` a record, asked once per case (``cases``: a list, or a function of a
    :class:`Draw` giving one; None: once, without arguments); ``accelerator``: it uses context().accelerator."""
    rests = (rests,) if isinstance(rests, str) else tuple(rests)
    if not rests or any(r not in RESTS for r in rests):
        raise ValueError(f"a record rests on one or more of {RESTS}, not {rests!r}")

    def made(ask: Callable) -> Record:
        doc = (ask.__doc__ or "").strip().splitlines()
        return Record(name or ask.__name__, ask, cases, rests, doc[0] if doc else "", accelerator)
    return made


def load(path: Path) -> dict[str, Record]:
    """The records of one ``records/NAME.py``, {} when there is none (see :func:`module_of`)."""
    module = module_of(path)
    return {r.name: r for r in vars(module).values() if isinstance(r, Record)} if module else {}


def module_of(path: Path):
    """The module ``records/NAME.py`` (by path: it is no package on sys.path), None when there is none; imported
    once, and again only where sys.modules has lost it (the classes it draws must be the checks')."""
    path = Path(path)
    if not path.is_file():
        return None
    name = f"kata_records_{path.stem}"
    module = sys.modules.get(name)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return module


def error_text(exc: BaseException) -> str:
    """An exception as an answer says it: its type and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def _folder_of(module) -> Path | None:
    """The folder of the learner's code ``module`` is (a target's handle, or a module with a file), or None."""
    target = getattr(module, "_target", None)   # kata.harness.target.TargetModule, read without importing it
    if target is not None and getattr(target, "path", None) is not None:
        return Path(target.path).resolve()
    file = getattr(module, "__file__", None) if not isinstance(module, dict) else None
    return Path(file).resolve().parent if isinstance(file, str) else None


def _learner_frame(exc: BaseException, folder):
    """The last frame of ``exc``'s traceback in a file under ``folder`` and its line, or (None, None)."""
    found = (None, None)
    if folder is not None:
        root = Path(folder).resolve()
        for frame, line in traceback.walk_tb(exc.__traceback__):
            if Path(frame.f_code.co_filename).resolve().is_relative_to(root):
                found = (frame, line)
    return found


def raised_at(exc: BaseException, module) -> list | None:
    """Where the learner's code (the folder of ``module``) raised ``exc``: the last frame of its traceback there,
    as ``[file, line, function, source]``; None where none is there."""
    return raised_within(exc, _folder_of(module))


def raised_within(exc: BaseException, folder) -> list | None:
    """:func:`raised_at` for the learner's code in ``folder``."""
    frame, line = _learner_frame(exc, folder)
    return None if frame is None else line_of(frame, line)


def line_of(frame, line: int) -> list:
    """A line of the learner's code as :func:`raised_at` says it: ``[file, line, function, source]``."""
    return [str(Path(frame.f_code.co_filename).resolve()), line, frame.f_code.co_name,
            linecache.getline(frame.f_code.co_filename, line).strip()]


def placed(exc: BaseException, folder) -> dict:
    """Where the tensors and modules of the learner's frame that raised ``exc`` were (the last frame of its
    traceback under ``folder``: the one :func:`raised_at` names), as data: name -> ``{"kind": "tensor" or "module",
    "class": its class's name, "device": its device (a module's: its first parameter's; None where it has none)}``;
    {} where no frame of the learner's is there. What a check says of an error in two devices reads this, in the
    learner's process or from the wire alike."""
    torch = sys.modules.get("torch")
    frame, _line = _learner_frame(exc, folder) if torch is not None else (None, None)
    found = {}
    for name, value in (frame.f_locals.items() if frame is not None else ()):
        try:   # the learner's objects: one that can't say where it is is left out, never the answer
            if isinstance(value, torch.Tensor):
                found[name] = {"kind": "tensor", "class": type(value).__name__, "device": str(value.device)}
            elif isinstance(value, torch.nn.Module):
                first = next(iter(value.parameters()), None)
                found[name] = {"kind": "module", "class": type(value).__name__,
                               "device": None if first is None else str(first.device)}
        except Exception:  # noqa: BLE001 - a learner's object that raises is left out
            continue
    return found


def caught(exc: BaseException, module) -> dict:
    """An error the learner's code (``module``) raised, caught by a record, as its answer holds it: its kind, its
    text and where it was raised (``raised_at``). A check that reads it names that line when it fails
    (kata.harness.asking and kata.harness.failures: one rule for every error a check's run meets)."""
    return {"kind": type(exc).__name__, "text": str(exc), "raised_at": raised_at(exc, module)}


def digest(inputs: list[tuple]) -> str:
    """A fingerprint of a record's inputs: the checks draw them again and compare."""
    raw = json.dumps(typed(list(inputs), values="digest"), sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def answer(rec: Record, module, args: tuple) -> dict:
    """One case asked: ``{"data": ...}`` or ``{"error": "Kind: first line", "kind": "Kind", "raised_at": ...,
    "placed": ...}`` (where the learner's code raised it: :func:`raised_at`, and where that frame's tensors were:
    :func:`placed`; and, in this process only, the exception itself under ``"exc"``)."""
    try:
        return {"data": typed(rec.ask(module, *args))}
    except Exception as exc:  # noqa: BLE001 - the module's error is the answer
        if getattr(type(exc), "met_elsewhere", False):   # in another process (a rank): where it was, as it saw it
            at, where = exc.kata_raised_at, exc.kata_placed
        else:
            at, where = raised_at(exc, module), placed(exc, _folder_of(module))
        return {"error": error_text(exc), "kind": type(exc).__name__, "raised_at": at, "placed": where, "exc": exc}
    except SystemExit as exc:
        return {"error": f"SystemExit({exc.code!r})", "kind": "SystemExit"}


def ask_all(rec: Record, module, seed: int, exercise: str, keep: bool = False) -> dict:
    """Every case of ``rec`` asked of ``module``: ``{"inputs": digest, "cases": [answer, ...]}``; the exceptions
    kept only with ``keep`` (never across the wire)."""
    inputs = rec.inputs(seed, exercise)
    found = {"inputs": digest(inputs), "cases": []}
    for args in inputs:
        one = answer(rec, module, args)
        exc = one.pop("exc", None)
        if keep and exc is not None:
            one["exc"] = exc
        elif exc is not None:
            traceback.clear_frames(exc.__traceback__)
        found["cases"].append(one)
    return found


class TimedOut(BaseException):
    """A record (or an import) that did not finish in its time (no ``except Exception`` of a case's takes it)."""


def _alarm(*_):
    raise TimedOut


@contextlib.contextmanager
def timed(seconds: float):
    """:class:`TimedOut` raised in the main thread after ``seconds`` (where the platform has interval timers;
    elsewhere, and off the main thread, no limit)."""
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)


def ask_exercise(exercise: str, importing: Callable, seed: int, path: Path, skip=()) -> Iterator[tuple[str, dict]]:
    """Every record of ``path`` (an exercise's records) asked of the module ``importing()`` imports, as the grader's
    sandbox asks them: the import in at most ``2 * RECORD_SECONDS`` (an import that never ends is the exercise's),
    each record in at most ``RECORD_SECONDS``, and none after :data:`EXERCISE_TIMEOUTS` ran out of time:
    ``(name, {"inputs", "cases"} or {"error"})``; where the import failed, first ``("import", {"error"})``."""
    found = load(path)
    names = [n for n in found if n not in skip and not found[n].of_source]   # the source is read elsewhere
    if not names:
        return   # nothing left to ask: the module is not imported again
    try:
        with timed(2 * RECORD_SECONDS):
            module = importing()
    except (Exception, TimedOut, SystemExit) as exc:  # noqa: BLE001 - the submission's error is every record's
        why = say("its import did not finish within {seconds:g} s", seconds=2 * RECORD_SECONDS) \
            if isinstance(exc, TimedOut) else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        yield "import", {"error": why}   # no record's name: "import" is a keyword
        yield from ((name, {"error": why}) for name in names)
        return
    timeouts = 0
    for name in names:
        if timeouts >= EXERCISE_TIMEOUTS:
            yield name, {"error": say("not asked: {n} records of this exercise ran out of time", n=timeouts)}
            continue
        try:
            with timed(RECORD_SECONDS):
                result = ask_all(found[name], module, seed, exercise)
        except TimedOut:
            timeouts += 1
            result = {"error": say("did not finish within {seconds:g} s", seconds=RECORD_SECONDS)}
        yield name, result


def ask_source(exercise: str, files: dict[str, str], seed: int, path: Path) -> Iterator[tuple[str, dict]]:
    """The records of ``path`` that rest on the source alone, asked of the hand-in's ``files`` (name -> text) where
    it never runs (the grader's process): ``(name, {"inputs", "cases"})``."""
    for name, rec in load(path).items():
        if rec.of_source:
            yield name, ask_all(rec, files, seed, exercise)
