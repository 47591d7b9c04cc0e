"""Checks from a Jupyter notebook: ``kata.check("NAME")``; and what a check run said, check by check.

In a notebook (or Colab), define an exercise's functions in cells, then::

    import kata
    result = kata.check("devices")        # the caller's globals; namespace=... to pass others
    result.ok, result.passed, result.failed

It runs the exercise's checks (``tests/test_NAME.py``) in this process with
``pytest.main``, against a :class:`NamespaceTarget`: a target
(kata/harness/target.py) whose ``load(name)`` gives a module made from the
namespace, so the checks see the notebook's functions exactly as they would
see ``exercises/NAME.py``. The module's attributes are the namespace's at the
time of the call; a check that patches one (``monkeypatch.setattr(module,
"CelebA", spy)``) patches the namespace too, for the check's duration, because
the notebook's functions read their globals from there. The run prints the
failures one block per cause and the exercise's row of the table, exactly as
``pytest exercises/NAME.py`` shows them (both read the outcome model,
kata/harness/outcomes.py, from the same records; an error in a cell names the
cell), and records progress in the current folder (the notebook's), as a run
on a folder does.

The checks marked ``cuda`` run on CUDA where there is one (Colab), else on MPS,
else on the simulated accelerator, which must be installed before the
process's first backward pass: ``kata.check`` installs it at its first call;
if the notebook trained something before that, those checks are left out and
the result says why (restart the kernel and check first).

``python -m kata.notebook run NOTEBOOK...``
executes notebooks with nbclient (CI does, so the notebooks can't rot);
``run --save`` writes each back with the outputs of that run, as the notebooks
are kept in the repository (tests/selftest/test_notebook.py holds them to it).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kata import curriculum
from kata.harness import outcomes
from kata.harness.grouping import Recorder
from kata.harness.plugin import GivenTarget
from kata.harness.target import Target
from kata.harness.tracebacks import Place, display
from kata.i18n import N_, _, say

__all__ = ["SECONDS", "CheckResult", "NamespaceTarget", "check", "execute", "main", "outputs"]


def _cell_label(filename: str) -> str:
    """``Cell In[5]`` for a notebook cell's code, else the file as a short path."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        with contextlib.suppress(Exception):
            named = shell.compile.format_code_name(filename)
            if named:
                return " ".join(named)
    return filename if filename.startswith("<") else display(filename)


# --- a notebook's namespace as a target ----------------------------------------------


class _NamespaceModule(types.ModuleType):
    """A module whose attributes are a copy of a namespace; setting or deleting one
    (a check's monkeypatch) does the same in the namespace, where the notebook's
    functions look their globals up."""

    _kata_namespace: dict = {}

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if not name.startswith("__"):
            type(self)._kata_namespace[name] = value

    def __delattr__(self, name):
        super().__delattr__(name)
        if not name.startswith("__"):
            type(self)._kata_namespace.pop(name, None)


class NamespaceTarget(Target):
    """A target whose modules are made from one namespace (a notebook's globals).

    ``folder`` receives the progress record; ``label`` is how messages name it."""

    def __init__(self, namespace: dict, folder: str | Path = ".", label: str = N_("the notebook")):
        label = _(label)
        super().__init__(folder, name=label)
        self.path = Path(folder).expanduser().resolve()
        self.namespace, self.label = namespace, label

    def display(self, module: str | None = None) -> str:
        return self.label

    def load(self, name: str) -> types.ModuleType:
        if name not in self._loaded:
            cls = type("NotebookModule", (_NamespaceModule,), {"_kata_namespace": self.namespace})
            module = cls(f"{self.package}.{name}", f"exercise {name}, from {self.label}")
            module.__dict__.update({k: v for k, v in self.namespace.items() if not k.startswith("__")})
            self._loaded[name] = module
        return self._loaded[name]

    def place_of(self, exc: BaseException) -> Place | None:
        """The last line of the namespace's own code (its cells) in ``exc``'s traceback, or None."""
        files, found = self.code_files(), None
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename in files:
                found = Place(Path(frame.filename), frame.lineno, frame.name, (frame.line or "").strip(),
                              label=_cell_label(frame.filename))
        return found

    def code_files(self) -> set[str]:
        """The files the namespace's own functions and classes were compiled from (its cells)."""
        files = set()
        for value in list(self.namespace.values()):
            functions = [value] if isinstance(value, types.FunctionType) else []
            if isinstance(value, type) and value.__module__ == self.namespace.get("__name__"):
                functions = [getattr(v, "__func__", v) for v in vars(value).values()]
            files |= {f.__code__.co_filename for f in functions
                      if isinstance(f, types.FunctionType) and f.__globals__ is self.namespace}
        return files


# --- kata.check ------------------------------------------------------------------------


@dataclass
class CheckResult:
    """What ``kata.check(NAME)`` found."""

    exercise: str
    passed: int
    failed: int                        # the failing checks, those at a stub included
    skipped: int
    missing: list[str]                 # the exercise's names the namespace does not define
    blocks: list[outcomes.Block]       # one per cause, as `pytest exercises/NAME.py` shows them
    row: str                           # the exercise's row of the table
    notes: list[str] = field(default_factory=list)
    records: list[outcomes.Record] = field(default_factory=list, repr=False)
    complete: bool = True              # every check of the exercise ran (False: the cuda ones were left out)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped

    @property
    def ok(self) -> bool:
        """Every check that ran passed (and some did)."""
        return self.failed == 0 and self.passed > 0

    @property
    def done(self) -> bool:
        """The exercise is done: ok, with all of its checks run."""
        return self.ok and self.complete

    def __repr__(self) -> str:
        if self.ok:
            return say("<kata.check {exercise!r}: {passed}/{total} passed, ok>", exercise=self.exercise,
                       passed=self.passed, total=self.total)
        return say("<kata.check {exercise!r}: {passed}/{total} passed, {failed} failing>", exercise=self.exercise,
                   passed=self.passed, total=self.total, failed=self.failed)


def _simulator_note() -> str | None:
    """Make sure the cuda checks can run here; a note when they can't (they are then left out)."""
    import torch

    if torch.cuda.is_available() or torch.backends.mps.is_available():
        return None
    from kata import sim

    ok, _why = sim.support()
    if not ok:
        return None   # the plugin skips the cuda checks and says why
    try:
        sim.install()
    except RuntimeError as err:
        return say("the checks marked cuda were left out: the simulated accelerator can't be installed now ({error}). "
                   "It must come before the kernel's first backward pass: restart the kernel and call kata.check "
                   "before training anything.", error=err)
    return None


@contextlib.contextmanager
def _no_side_effects(args: list[str]):
    """Leave the notebook's folder and settings as they were: pytest-benchmark's and
    Hypothesis's folders go to a temporary one, and the checks' conftest's
    MPLBACKEND=Agg is undone afterwards (the notebook keeps its inline plots)."""
    import tempfile

    import hypothesis.configuration as hypothesis_config

    scratch = Path(tempfile.gettempdir()) / "kata-check"
    args += [f"--benchmark-storage=file://{scratch / 'benchmarks'}"]
    backend = os.environ.get("MPLBACKEND")
    home = vars(hypothesis_config).get("__hypothesis_home_directory")
    hypothesis_config.set_hypothesis_home_dir(scratch / "hypothesis")
    try:
        yield
    finally:
        hypothesis_config.set_hypothesis_home_dir(home)
        if backend is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = backend


def check(name: str, namespace: dict | None = None, *, folder: str | Path | None = None,
          quiet: bool = False) -> CheckResult:
    """Run exercise ``name``'s checks on the functions defined in ``namespace`` (default:
    the caller's globals: the notebook's); print the failures and the table row; return
    a :class:`CheckResult` (``.ok``, ``.passed``, ``.failed``). Progress is recorded in
    ``folder`` (default: the current folder). An unknown name raises
    :class:`kata.curriculum.UnknownExercise`, listing the exercises."""
    exercise = curriculum.get(name)
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    show = (lambda *a: None) if quiet else print
    target = NamespaceTarget(namespace, folder if folder is not None else Path.cwd())
    missing = [n for n in exercise.names if n not in namespace]
    notes = []
    if missing:
        notes.append(say("{notebook} defines no {missing}: exercise {exercise} asks for {names}",
                         notebook=target.label, missing=", ".join(f"`{n}`" for n in missing),
                         exercise=exercise.label, names=", ".join(exercise.names)))
    args = [str(exercise.checks()), "-q", "--color=no", "-p", "no:cacheprovider", "-p", "no:faulthandler",
            "--capture=sys"]
    note = _simulator_note()
    if note:
        notes.append(note)
        args += ["--accelerator", "cuda", "-m", "not cuda"]   # no install attempt, and those checks left out
    recorder = Recorder()
    out = io.StringIO()
    start = time.perf_counter()
    with _no_side_effects(args), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = pytest.main(args, plugins=[GivenTarget(target), recorder])
    records = recorder.records
    if not records and code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(say("kata.check({name!r}) could not run the checks (pytest exit {code}):", name=name,
                               code=code) + "\n" + out.getvalue()[-3000:])
    summary = outcomes.summarize(records, partial=[name] if note else ())
    row = summary.row(name) or outcomes.Row(exercise)
    result = CheckResult(name, row.passed, row.failed + row.todo, row.skipped, missing, list(summary.blocks),
                         outcomes.render_row(row, _("; restart the kernel to run them all") if row.partial else ""),
                         notes, records, complete=not note)
    show(f"kata.check({name!r}): {exercise.label}: {exercise.title}  ({time.perf_counter() - start:.1f} s)")
    for line in notes:
        show(say("note: {note}", note=line))
    for block in result.blocks:
        show(f"{outcomes.heading(block)}\n{outcomes.render_block(block)}")
    show("\n" + result.row)
    if result.done:
        show("\n  " + say("Exercise {exercise} is done.", exercise=exercise.label))
    elif result.ok:
        show("\n  " + _("Every check that ran passes; the ones marked cuda did not run (see the note)."))
    else:
        show("\n  " + say("Fix what the messages say, run the cells again, then kata.check({name!r}); "
                          "`kata hint {name}` gives a hint.", name=name))
    return result


# --- executing notebooks (CI) ----------------------------------------------------------


SECONDS = re.compile(r"\(\d+(?:\.\d+)? s\)")   # how long a run took, as kata.check's first line says it


def outputs(notebook) -> list[list[dict]]:
    """Each code cell's outputs (an ``nbformat`` notebook's), their seconds masked: what two runs of an unchanged
    notebook may differ in."""
    return [json.loads(SECONDS.sub("(- s)", json.dumps(cell.get("outputs", []), sort_keys=True)))
            for cell in notebook.cells if cell.cell_type == "code"]


def execute(path: str | Path, timeout: int = 600, save: bool = False) -> list[str]:
    """Run every cell of the notebook at ``path`` in a fresh kernel, in the notebook's
    folder (nbclient); return the text its cells printed. A cell that raises raises
    ``nbclient.exceptions.CellExecutionError``.

    ``save``: write the notebook back with this run's outputs, its own metadata kept (not the kernel's
    versions) and no timings recorded; left as it is when its outputs differ from the new ones in
    seconds only (:func:`outputs`), so that saving an unchanged notebook changes nothing."""
    import nbclient
    import nbformat

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    before = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent.resolve())}}).execute()
    if save and outputs(notebook) != outputs(before):
        notebook.metadata = before.metadata
        path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    return [out.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "stream"]


def main(argv: list[str] | None = None) -> int:
    """``python -m kata.notebook run [--save] NOTEBOOK...``: execute each notebook (``--save``: and write it back
    with its outputs); exit 1 if a cell fails."""
    argv = sys.argv[1:] if argv is None else argv
    save = "--save" in argv[1:2]
    paths = argv[2:] if save else argv[1:]
    if not argv or argv[0] != "run" or not paths:
        print("usage: python -m kata.notebook run [--save] NOTEBOOK.ipynb...", file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        start = time.perf_counter()
        try:
            printed = execute(path, save=save)
        except Exception as err:   # a cell failed, or the kernel could not start: say which
            failed += 1
            print(f"{path}: FAILED\n{err}", file=sys.stderr)
            continue
        print("".join(printed).rstrip())
        print(f"{path}: every cell ran ({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
