"""Records of exercise 5, plotting: plot_history and LivePlot on histories, each figure read back as data (the checks
say how), and what the learner's code raised (its error, its line, a call refused)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np

from kata.records import BEHAVIOUR, CONSTANT, PROPERTY, WORK, context, raised_at, record
from kata.records.history import History
from kata.records.snapshots import change, snapshot
from kata.records.strategies import histories, make_history

# Five epochs of a run like the book's, float32-exact: every kind of entry (float32 tensors too) holds them exactly.
VALUES = tuple([float(np.float32(v)) for v in h] for h in ([0.693, 0.618, 0.552, 0.497, 0.441],
    [0.671, 0.604, 0.571, 0.523, 0.502], [0.552, 0.663, 0.718, 0.764, 0.789], [0.581, 0.652, 0.702, 0.713, 0.741]))
TWO, THREE = (tuple(v[:n] for v in VALUES) for n in (2, 3))
# The seed's history: loss.item() floats, and accuracies summed from is_correct.sum(): 0-d tensors without grad.
SEED = ["float", "float", "tensor", "tensor"]
# Kinds mixed in every list, a different one first in each (the first entry tells nothing about the rest).
MIXED = [["float", "tensor", "numpy.float32", "tensor with grad_fn", "numpy.float64"],
         ["numpy.float64", "float", "tensor.float64", "tensor with requires_grad", "tensor"],
         ["numpy.float32", "tensor with grad_fn", "float", "tensor", "tensor.float64"],
         ["tensor", "numpy.float64", "tensor with requires_grad", "float", "numpy.float32"]]
# plot_history's cases, by the checks' ids: what each list of the history holds ("Python floats": the book's, whose
# figure the checks of the layout read; "kept": one it must leave as it was; "render": the seed's, rendered to PNG).
PLOTS = {"Python floats": "float", "NumPy float64 scalars": "numpy.float64", "NumPy float32 scalars": "numpy.float32",
         "0-d tensors": "tensor", "0-d float64 tensors": "tensor.float64",
         "0-d tensors with requires_grad": "tensor with requires_grad",
         "0-d tensors with a grad_fn": "tensor with grad_fn", "the seed's: loss floats, accuracy tensors": SEED,
         "a mix in each list": MIXED, "named tuple": "float",
         "kept": ["float", "numpy.float32", "tensor with requires_grad", "tensor.float64"], "render": SEED}
# LivePlot's cases: (epochs, kinds, a named tuple?). Given a path (a keyword str, a positional Path), it saves: two
# epochs hold every case of that (a file at each update, one that changes, saved after the redraw).
LIVES = {"floats": (THREE, "float", False), "seed": (THREE, SEED, False), "seed, named": (THREE, SEED, True),
         "keyword str": (TWO, SEED, False), "positional Path": (TWO, SEED, False)}


class Refused(Exception):
    """A call that opens a window and waits, refused (args: its name)."""


@contextlib.contextmanager
def guarded(obj, found):
    """Agg, each blocking call refused (where ``obj``'s module imported it too) and logged, new figures closed after;
    yields ``attempt(call, ...)``: what it raised goes to found[into] (a stub's NotImplementedError goes on)."""
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.figure import Figure

    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    matplotlib.use("Agg", force=True)
    found.update(calls=[], failed=None)
    before, interactive = set(plt.get_fignums()), matplotlib.is_interactive()

    def refuse(name):
        def blocked(*args, **kwargs):
            called = f"{name}(block=False)" if name == "plt.show" and kwargs.get("block") is False else f"{name}()"
            found["calls"].append(called)   # plt.show(block=False) opens a window without waiting
            raise Refused(called)
        return blocked

    def attempt(call, *args, into="failed", **kwargs):
        try:
            return call(*args, **kwargs)
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's error is the answer
            base = next((c.__name__ for c in (TypeError, RuntimeError, AttributeError) if isinstance(exc, c)), "")
            place, refused = raised_at(exc, module), isinstance(exc, Refused)
            found[into] = {"kind": type(exc).__name__, "base": base or "Exception", "text": str(exc), "where": place,
                           "raised_at": None if refused else place, "blocked": refused and exc.args[0]}

    with contextlib.ExitStack() as patched:
        for owner, attr, name in [*((plt, a, f"plt.{a}") for a in ("show", "pause", "ginput", "waitforbuttonpress")),
                                  *((Figure, a, f"Figure.{a}") for a in ("show", "ginput", "waitforbuttonpress")),
                                  (FigureCanvasBase, "start_event_loop", "canvas.start_event_loop")]:
            original = getattr(owner, attr)
            for where, var in [(owner, attr), *((module, v) for v, value in (vars(module) if module else {}).items()
                                                if value is original)]:
                patched.enter_context(mock.patch.object(where, var, refuse(name)))
        try:
            yield attempt
        finally:
            for num in set(plt.get_fignums()) - before:
                plt.close(num)
            matplotlib.interactive(interactive)


def holds_tensors(data) -> bool:
    import torch

    if isinstance(data, np.ndarray):
        data = data.ravel() if data.dtype == object else ()
    try:
        return isinstance(data, torch.Tensor) or any(isinstance(v, torch.Tensor) for v in data)
    except TypeError:
        return False


def figure(fig):
    """A figure as the checks read it ({"class": ...} alone: not a Figure)."""
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        return {"class": type(fig).__name__}
    axes = []
    for ax in sorted(fig.axes, key=lambda ax: ax.get_position().x0):
        where, legend, lines = ax.get_position(), ax.get_legend(), []
        for line in ax.get_lines():
            x, y = (np.asarray(d, dtype=float).ravel().tolist() for d in (line.get_xdata(False), line.get_ydata(False)))
            lines.append({"label": line.get_label(), "style": line.get_linestyle(), "marker": line.get_marker(),
                          "x": x, "y": y, "tensors": [holds_tensors(d) for d in line.get_data(orig=True)]})
        axes.append({"x0": float(where.x0), "x1": float(where.x1), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                     "legend": None if legend is None else [t.get_text() for t in legend.get_texts()], "lines": lines})
    return {"class": "Figure", "axes": axes}


def unchanged(before, history):
    """The first change in ``history`` since ``before``, as data (None: none); ``now``: the list it changed, now."""
    found = change(before, history, "history")
    return None if found is None else {"path": found.path, "keys": list(found.keys), "kind": found.kind,
                                       "before": str(found.before), "after": str(found.after),
                                       "now": list(history[found.keys[0]]) if found.keys else None}


def image(data: bytes):
    """A PNG's [width, height, darkest, lightest] grey, or why it can't be read."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as picture:
            return [*picture.size, *picture.convert("L").getextrema()]
    except Exception as exc:  # noqa: BLE001 - an unreadable file is the answer
        return f"{type(exc).__name__}: {exc}"


def plotted(plotting, key, values, history):
    """plot_history(history): the figure, what it raised, the calls refused, what it did to the history (given its
    kinds instead, made here on the accelerator)"""
    if not isinstance(history, tuple):
        history = make_history(values, history, context().accelerator)
    found, before = {}, snapshot(history)
    with guarded(plotting.plot_history, found) as attempt:
        fig = attempt(plotting.plot_history, history)
        found["figure"] = figure(fig)
        if key == "render" and found["failed"] is None:
            buffer, found["render"] = io.BytesIO(), None
            attempt(lambda: fig.savefig(buffer, format="png"), into="render")
            found["png"] = list(buffer.getvalue()[:8])
    found["input"] = unchanged(before, history)
    return found


def driven(plotting, key, values, full):
    """A LivePlot driven over ``full`` as train(..., on_epoch=live.update) does (given its kinds instead, made here on
    the accelerator, named): after each update its figure, the history, the points drawn at each savefig, the PNG"""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if not isinstance(full, tuple):
        full = make_history(values, full, context().accelerator, named=True)
    where = Path(tempfile.mkdtemp(dir=context().tmp))
    path = where / "curves.png"
    found, points, savefig, first, last = {"steps": [], "saves": [], "path": str(path)}, [], Figure.savefig, None, None
    history = History([], [], [], []) if isinstance(full, History) else ([], [], [], [])
    args, kwargs = {"keyword str": ((), {"path": str(path)}), "positional Path": ((path,), {})}.get(key, ((), {}))

    def spy(self, *args, **kwargs):
        points.append(max((len(line.get_xdata()) for ax in self.axes for line in ax.get_lines()), default=0))
        fname = args[0] if args else kwargs.get("fname")
        found["saves"] += [str(fname)] if isinstance(fname, (str, os.PathLike)) else []
        return savefig(self, *args, **kwargs)

    with contextlib.chdir(where), mock.patch.object(Figure, "savefig", spy), \
            guarded(plotting.LivePlot, found) as attempt:
        live = attempt(plotting.LivePlot, *args, **kwargs)
        for epoch in range(len(full[0]) if found["failed"] is None else 0):
            for lst, entries in zip(history, full):
                lst.append(entries[epoch])
            before = snapshot(history)
            attempt(lambda: live.update(epoch, history))  # noqa: B023 - called at once
            if found["failed"] is not None:
                found["failed"]["epoch"] = epoch
                break
            fig = getattr(live, "figure", None)
            first = fig if epoch == 0 else first
            step = {"figure": None if fig is None else figure(fig), "same": fig is first, "saved": points[:],
                    "input": unchanged(before, history), "open": len(plt.get_fignums())}
            points.clear()
            if key in ("keyword str", "positional Path"):
                data = path.read_bytes() if path.is_file() else None
                step["files"], step["png"] = sorted(os.listdir(where)), data if data is None else {
                    "start": list(data[:8]), "image": image(data), "changed": data != last}
                last = data
            found["steps"].append(step)
    found["written"] = sorted(os.listdir(where))
    return found


# Drawn histories come after the seed's and a mixed one (a case: a draw, about 35 ms; a LivePlot's, about 75 ms).
EVERY = (WORK, CONSTANT, PROPERTY, BEHAVIOUR)
plot = record(lambda draw: [(key, VALUES, make_history(VALUES, kinds, named=key == "named tuple"))
                            for key, kinds in PLOTS.items()], rests=EVERY, name="plot")(plotted)
plot_any = record(lambda draw: [(None, *drawn) for drawn in draw.examples(histories(), 11, explicit=[
    (VALUES, make_history(VALUES, SEED)), (VALUES, make_history(VALUES, MIXED, named=True))])],
    rests=(WORK, PROPERTY), name="plot_any")(plotted)
live = record(lambda draw: [(key, values, make_history(values, kinds, named=named))
                            for key, (values, kinds, named) in LIVES.items()], rests=EVERY, name="live")(driven)
live_any = record(lambda draw: [(None, *drawn) for drawn in draw.examples(histories(max_epochs=4), 5, explicit=[
    (TWO, make_history(TWO, SEED)), (THREE, make_history(THREE, MIXED, named=True))])],
    rests=(WORK, PROPERTY), name="live_any")(driven)
plot_accelerator = record([("the seed's history", VALUES, SEED), ("all device tensors", VALUES, "tensor"),
                           ("mixed", VALUES, MIXED)], accelerator=True, name="plot_accelerator")(plotted)
live_accelerator = record([("seed, named", THREE, SEED)], rests=(WORK, PROPERTY), accelerator=True,
                          name="live_accelerator")(driven)
