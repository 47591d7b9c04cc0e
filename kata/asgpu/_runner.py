"""Running a script as ``python PATH ARGS`` would, on the one-GPU machine of :mod:`kata.asgpu._gpu`.

Nothing heavy is imported before the script asks for it: the machine is set up the moment the
script imports torch (:class:`_OnImport`), so a script that never does pays nothing, and one that
uses torch on the CPU only pays the simulator's install.
"""

from __future__ import annotations

import builtins
import json
import os
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kata.i18n import N_, say

__all__ = ["Options", "run_script", "verdict"]

FIGURES_SAVED = N_("kata run: figures saved: {paths}")
QUICK = N_("kata run: --quick {n}: every DataLoader yields at most {n} batches")
NOT_FOUND = N_("kata run: no such script: {path}")
NO_CUDA = N_("kata run --device cuda: there is no CUDA GPU here (torch.cuda.is_available() is False); without "
             "--device, the script runs on the simulated one")


@dataclass
class Options:
    """How to run: ``quick`` batches per DataLoader pass (None: all), ``celeba`` (a folder holding
    celeba/, None: the synthetic set), ``out`` (where figures go), ``report`` (print the syncs),
    ``device`` ("sim": the simulated GPU; "cuda": this machine's own, its syncs counted by CUDA's
    sync debug mode), ``json`` (a file for the run's verdict as data: :func:`verdict`)."""

    quick: int | None = None
    celeba: str | None = None
    out: str | None = None
    report: bool = True
    stream: object = None  # where the run's own lines go (default: sys.stderr)
    device: str = "sim"
    json: str | None = None


class _OnImport:
    """``builtins.__import__`` that calls ``then[name]()`` once the module ``name`` is imported, after
    the import statement that brought it finished (never inside it: torch's module lock is held
    while torch imports, and the simulator's autograd thread would wait on it)."""

    def __init__(self, then: dict):
        self.then = dict(then)
        self.depth = 0
        self.busy = False
        self.original = builtins.__import__

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):
        self.depth += 1
        try:
            return self.original(name, globals, locals, fromlist, level)
        finally:
            self.depth -= 1
            if self.depth == 0 and not self.busy:
                self.ready()

    def ready(self) -> None:
        self.busy = True
        try:
            for name in list(self.then):
                if name in sys.modules:
                    self.then.pop(name)()
        finally:
            self.busy = False
        if not self.then:
            self.remove()

    def install(self) -> None:
        builtins.__import__ = self

    def remove(self) -> None:
        if builtins.__import__ is self:
            builtins.__import__ = self.original


@dataclass
class _Run:
    script: Path
    options: Options
    syncs: object = None
    passes: object = None
    figures: object = None
    counting: object = None
    messages: list = field(default_factory=list)
    failed: dict | None = None   # kata.asgpu._report.failure of the script's error

    def on_torch(self) -> None:
        from kata import sim
        from kata.asgpu._data import refuse_hub_downloads
        from kata.asgpu._gpu import install
        from kata.asgpu._loops import Passes, watch_loaders

        if self.options.device == "cuda":
            self.counting = sim.count_cuda_syncs()
        else:
            install()
            self.counting = sim.count_syncs()
        self.syncs = self.counting.__enter__()
        self.passes = Passes()
        watch_loaders(self.passes, self.syncs.events, self.options.quick)
        refuse_hub_downloads()

    def on_pyplot(self) -> None:
        from kata.asgpu._loops import patch_pyplot

        patch_pyplot(self.figures)

    def on_torchvision(self) -> None:
        from kata.asgpu._data import serve_celeba

        serve_celeba(self.options.celeba)


def run_script(path, args=(), options: Options | None = None) -> int:
    """Run the script at ``path`` with ``args`` as ``python PATH ARGS`` would, on one simulated GPU;
    print the failure (in CUDA's words, with the kata's lesson) and the syncs; return the exit status."""
    from kata.asgpu._loops import Figures, figures_to_files
    from kata.asgpu._standins import TensorboardFinder

    options = options or Options()
    stream = options.stream or sys.stderr
    script = Path(path)
    if not script.is_file():
        print(say(NOT_FOUND, path=path), file=stream)
        return 2
    if options.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print(say(NO_CUDA), file=stream)
            return 2
    run = _Run(script, options)
    run.figures = Figures(Path(options.out or "kata-run"), script.stem)
    hooks = {"torch": run.on_torch}
    if options.quick is not None:
        figures_to_files(run.figures)
        hooks["matplotlib.pyplot"] = run.on_pyplot
        print(say(QUICK, n=options.quick), file=stream)
    hooks["torchvision"] = run.on_torchvision
    finder = _OnImport(hooks)
    finder.ready()  # what is already imported (run_script from Python, say) is set up now
    if finder.then:
        finder.install()
    standins = TensorboardFinder()
    sys.meta_path.insert(0, standins)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    status = 0
    try:
        if script.suffix == ".ipynb":
            from kata.asgpu._notebook import execute

            execute(script)
        else:
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=stream)
    except KeyboardInterrupt:
        status = 130
    except Exception as err:  # noqa: BLE001 - the script's error, whatever it is, explained
        from kata.asgpu._gpu import cuda_words
        from kata.asgpu._report import explain, failure

        words = cuda_words if run.syncs is not None else (lambda text: text)
        print(explain(err, script, words), file=stream)
        run.failed = failure(err, script, words)
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        finder.remove()
        if standins in sys.meta_path:
            sys.meta_path.remove(standins)
    _finish(run, stream)
    if options.json:
        Path(options.json).write_text(json.dumps(verdict(run, status), indent=1), encoding="utf-8")
    return status


def verdict(run: _Run, status: int) -> dict:
    """What a run found, as data (``--json``): the device, the exit status, the line that failed and PyTorch's
    message's first line (None where it did not fail on an error), how often the host waited for the GPU, and
    the lines that waited more than once per pass over a DataLoader. ``kata doctor --full`` compares a GPU's with
    the simulator's."""
    from kata.asgpu._report import per_batch_lines

    found = {"device": run.options.device, "status": status, **(run.failed or {"at": None, "error": None}),
             "syncs": None, "per_batch": []}
    if run.syncs is not None:
        found.update(syncs=run.syncs.total,
                     per_batch=per_batch_lines(run.syncs, run.passes, run.script.resolve().parent))
    return found


def _finish(run: _Run, stream) -> None:
    if run.options.quick is not None and "matplotlib.pyplot" in sys.modules:
        run.figures.save_all()
        if run.figures.saved:
            print(say(FIGURES_SAVED, paths=", ".join(os.fspath(p) for p in run.figures.saved)), file=stream)
    if run.syncs is None:
        return
    from kata.asgpu._gpu import cuda_words
    from kata.asgpu._report import sync_report

    run.passes.close_all(len(run.syncs.events))
    if run.options.report:
        print(cuda_words(sync_report(run.syncs, run.passes, run.script.resolve().parent)), file=stream)
    run.counting.__exit__(None, None, None)
