"""Records of exercise 5, plotting: the figures drawn from drawn histories, read back as data.

A figure is recorded as the checks read it: its panels left to right (where
they sit), each panel's lines (label, line style, marker, the x and y values,
whether the line still holds tensors), its axis labels and its legend. A
LivePlot is driven as ``train(..., on_epoch=live.update)`` drives it; whether
it keeps one figure is in the data (the first figure it showed, read again at
the end), and so is what each saved PNG shows.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from kata.audit import BEHAVIOUR, CONSTANT, PROPERTY, Facet, close, project, typed
from kata.i18n import _, say

__all__ = ["FACETS", "RECORDS"]

KINDS = ("float", "numpy.float64", "numpy.float32", "tensor", "tensor.float64", "tensor with requires_grad",
         "tensor with grad_fn")
BOOK = ("Train loss", "Validation loss", "Train acc.", "Validation acc.")
BLOCKING = ("show", "pause", "ginput", "waitforbuttonpress")


def _entry(kind: str, value: float, device):
    import numpy as np
    import torch

    if kind == "float":
        return float(value)
    if kind.startswith("numpy"):
        return getattr(np, kind.split(".")[1])(value)
    dtype = torch.float64 if kind == "tensor.float64" else torch.float32
    t = torch.tensor(value, dtype=dtype, device=device or "cpu", requires_grad="grad" in kind)
    return t * 1 if kind == "tensor with grad_fn" else t


def _values(draw, epochs: int) -> list[list[float]]:
    import numpy as np

    return [[float(np.float32(draw.int(1, 999) / 1000)) for _ in range(epochs)] for _ in range(4)]


SEED = ["float", "float", "tensor", "tensor"]
MIXED = [["float", "tensor", "numpy.float32", "tensor with grad_fn", "numpy.float64"],
         ["numpy.float64", "float", "tensor.float64", "tensor with requires_grad", "tensor"],
         ["numpy.float32", "tensor with grad_fn", "float", "tensor", "tensor.float64"],
         ["tensor", "numpy.float64", "tensor with requires_grad", "float", "numpy.float32"]]
# The checks' cases, by their ids (tests/test_plotting.py): what each list of the history holds.
ENTRIES = {"Python floats": "float", "NumPy float64 scalars": "numpy.float64", "NumPy float32 scalars": "numpy.float32",
           "0-d tensors": "tensor", "0-d float64 tensors": "tensor.float64",
           "0-d tensors with requires_grad": "tensor with requires_grad",
           "0-d tensors with a grad_fn": "tensor with grad_fn", "the seed's: loss floats, accuracy tensors": SEED,
           "a mix in each list": MIXED}
ON_DEVICE = {"the seed's history": SEED, "all device tensors": "tensor", "mixed": MIXED}


def _history(draw, values, kinds=None, device=None, named=False):
    """A history of ``values``; ``kinds``: one kind for every entry, or per list (a kind, or one per entry)."""
    from collections import namedtuple

    def kind_of(i, j):
        if kinds is None:
            return draw.choice(KINDS[:5] if device else KINDS)
        spec = kinds if isinstance(kinds, str) else kinds[i]
        return spec if isinstance(spec, str) else spec[j % len(spec)]

    lists = [[_entry(kind_of(i, j), v, device) for j, v in enumerate(h)] for i, h in enumerate(values)]
    if named:
        return namedtuple("History", ["loss_hist_train", "loss_hist_valid", "accuracy_hist_train",
                                      "accuracy_hist_valid"])(*lists)
    return tuple(lists)


def _holds_tensors(data) -> bool:
    import torch

    try:
        return isinstance(data, torch.Tensor) or any(isinstance(v, torch.Tensor) for v in data)
    except TypeError:
        return False


def _figure(fig):
    import numpy as np
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        return {"figure": False, "class": type(fig).__name__}
    axes = []
    for ax in sorted(fig.axes, key=lambda ax: ax.get_position().x0):
        legend = ax.get_legend()
        lines = [{"label": line.get_label(), "style": line.get_linestyle(), "marker": str(line.get_marker()),
                  "x": np.asarray(line.get_xdata(orig=False), dtype=float).ravel().tolist(),
                  "y": np.asarray(line.get_ydata(orig=False), dtype=float).ravel().tolist(),
                  "tensors": _holds_tensors(line.get_xdata(orig=True)) or _holds_tensors(line.get_ydata(orig=True))}
                 for line in ax.get_lines()]
        position = ax.get_position()
        axes.append({"x0": float(position.x0), "x1": float(position.x1), "lines": lines, "xlabel": ax.get_xlabel(),
                     "ylabel": ax.get_ylabel(),
                     "legend": sorted(t.get_text() for t in legend.get_texts()) if legend is not None else None})
    return {"figure": True, "axes": axes}


class _Refused(Exception):
    pass


def _guarded(call, *args):
    """Run ``call(*args)`` with every blocking call of matplotlib refused (raised at once): (result, refused)."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    refused, saved = [], []
    for owner in (plt, Figure):
        for name in BLOCKING:
            if hasattr(owner, name):
                saved.append((owner, name, getattr(owner, name)))

                def refuse(*_, _name=name, **__):
                    refused.append(_name)
                    raise _Refused(f"{_name}() opens a window and waits")
                setattr(owner, name, refuse)
    before = set(plt.get_fignums())
    try:
        return call(*args), refused
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
        for num in set(plt.get_fignums()) - before:
            plt.close(num)


def _plot_values(mod, draw, ctx, kinds="float"):
    """plot_history on a history of floats (the checks of its layout draw those), or of ``kinds=None``: any."""
    values = _values(draw, draw.int(1, 6))
    history = _history(draw, values, kinds)
    before = typed([list(h) for h in history])
    fig, _ = _guarded(lambda: mod.plot_history(history))
    return {"figure": _figure(fig), "history_after": typed([list(h) for h in history]), "history_before": before}


def _plots(mod, draw, cases, device=None):
    found = {}
    for case, kinds in cases.items():
        values = _values(draw, draw.int(2, 5))
        found[case] = _drawn(mod.plot_history, _history(draw, values, kinds, device, named=draw.int(0, 1) == 1))
    return found


def _drawn(call, *args) -> dict:
    """The figure ``call(*args)`` returns, described; or what it raised (in this case's record only: the checks
    of the other cases may pass)."""
    try:
        return _figure(_guarded(call, *args)[0])
    except Exception as exc:  # noqa: BLE001 - the submission's error is this case's record
        return {"figure": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def _plot_kinds(mod, draw, ctx):
    return _plots(mod, draw, ENTRIES)


def _plot_named(mod, draw, ctx):
    found = {}
    for named in (False, True):
        values = _values(draw, draw.int(2, 5))
        found[str(named)] = _drawn(mod.plot_history, _history(draw, values, "float", named=named))
    return found


def _plot_accelerator(mod, draw, ctx):
    return _plots(mod, draw, ON_DEVICE, ctx.accelerator)


def _plot_render(mod, draw, ctx):
    values = _values(draw, draw.int(2, 5))
    fig, refused = _guarded(lambda: mod.plot_history(_history(draw, values, SEED)))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return {"refused": refused, "png": buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"}


def _thumbnail(data: bytes) -> list[int] | None:
    """A 16x8 greyscale thumbnail of a PNG file's bytes (None when they are not a readable PNG)."""
    from PIL import Image

    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:
            return list(image.convert("L").resize((16, 8)).tobytes())
    except Exception:  # noqa: BLE001 - an unreadable file is the record
        return None


def _live(mod, draw, ctx, how: str = "keyword str"):
    """A LivePlot(path) driven epoch by epoch: each figure, the first figure again at the end, each PNG."""
    import matplotlib

    values = _values(draw, 2 if how == "keyword str" else 1)
    path = Path(tempfile.mkdtemp(dir=ctx.tmp)) / "curves.png"
    lists = ([], [], [], [])
    found = {"updates": [], "pngs": []}

    def run():
        plot = mod.LivePlot(path=str(path)) if how == "keyword str" else mod.LivePlot(path)
        first = None
        for epoch in range(len(values[0])):
            for lst, h in zip(lists, _history(draw, values, SEED)):
                lst.append(h[epoch])
            plot.update(epoch, lists)
            first = plot.figure if first is None else first
            found["updates"].append(_figure(plot.figure))
            found["pngs"].append(_thumbnail(path.read_bytes()) if path.is_file() else None)
        found["first_at_end"] = _figure(first)
        found["open"] = len(matplotlib.pyplot.get_fignums())

    _, found["refused"] = _guarded(run)
    return found


def _live_curves(mod, draw, ctx):
    """A LivePlot() driven epoch by epoch with drawn values: each update's figure (no file: the drawing alone)."""
    values = _values(draw, draw.int(2, 3))
    lists = ([], [], [], [])

    def run():
        plot, found = mod.LivePlot(), []
        for epoch in range(len(values[0])):
            for lst, h in zip(lists, _history(draw, values, SEED)):
                lst.append(h[epoch])
            plot.update(epoch, lists)
            found.append(_figure(plot.figure))
        return found

    return _guarded(run)[0]


def _live_no_path(mod, draw, ctx):
    import contextlib
    import os

    folder = Path(tempfile.mkdtemp(dir=ctx.tmp))
    values = _values(draw, 2)
    with contextlib.chdir(folder):
        plot = _guarded(lambda: mod.LivePlot())[0]
        for epoch in range(2):
            _guarded(lambda epoch=epoch: plot.update(epoch, tuple(h[:epoch + 1] for h in values)))
    return sorted(os.listdir(folder))


def _live_seed(mod, draw, ctx, device=None):
    """A LivePlot driven with the seed's history on ``device``, a named tuple as train() hands it (as its checks
    do): the last figure."""
    values = _values(draw, draw.int(2, 3))
    history = _history(draw, values, SEED, device=device, named=True)

    def run():
        plot = mod.LivePlot()
        for epoch in range(len(values[0])):
            plot.update(epoch, type(history)(*(h[:epoch + 1] for h in history)))
        return _figure(plot.figure)

    return _guarded(run)[0]


def _live_accelerator(mod, draw, ctx):
    return _live_seed(mod, draw, ctx, ctx.accelerator)


def _plot_any(mod, draw, ctx):
    return _plot_values(mod, draw, ctx, kinds=None)


RECORDS = {"plot": _plot_values, "plot.any": _plot_any, "plot.kinds": _plot_kinds, "plot.named": _plot_named,
           "plot.accelerator": _plot_accelerator, "plot.render": _plot_render, "live": _live,
           "live.positional": lambda mod, draw, ctx: _live(mod, draw, ctx, "positional Path"),
           "live.curves": _live_curves, "live.no_path": _live_no_path, "live.seed": _live_seed,
           "live.accelerator": _live_accelerator}


# --- how a figure is read ---------------------------------------------------------------------


def _panels(fig):
    if not fig.get("figure"):
        return {"figure": False}
    axes = fig["axes"]
    side = all(a["x1"] <= b["x0"] + 1e-6 for a, b in zip(axes, axes[1:]))
    return {"figure": True, "panels": len(axes), "side_by_side": side}


def _by_label(fig):
    """The book's four curves: where each is (panel), how often, its points, whether it holds tensors."""
    if not fig.get("figure"):
        return {"figure": False}
    found = {}
    for i, ax in enumerate(fig["axes"]):
        for line in ax["lines"]:
            if line["label"] in BOOK:
                found.setdefault(line["label"], []).append([i, line["x"], line["y"], line["tensors"]])
    return {label: found.get(label) for label in BOOK}


def _curves(fig):
    return {"t": "list", "v": [_node(v) for v in _by_label(fig).values()]} if fig.get("figure") else \
        {"t": "str", "v": "not a figure"}


def _node(value):
    """Plain data as described values, so that its floats are compared to a tolerance."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return {"t": type(value).__name__, "v": value}
    if isinstance(value, float):
        return {"t": "float", "v": value}
    return {"t": "list", "v": [_node(v) for v in value]}


def _styles(fig):
    if not fig.get("figure"):
        return None
    return sorted({(line["label"], line["style"], line["marker"]) for ax in fig["axes"] for line in ax["lines"]
                   if line["label"] in BOOK})


def _labels(fig):
    return [[ax["xlabel"], ax["ylabel"]] for ax in fig["axes"]] if fig.get("figure") else None


def _legends(fig):
    return [ax["legend"] for ax in fig["axes"]] if fig.get("figure") else None


CURVES = close(1e-6, 1e-12)


def _live_first(mine, _ref):
    return None if mine["first_at_end"] == mine["updates"][-1] else _("a new figure at each update")


def _live_saved(mine, ref):
    pngs = mine["pngs"]
    if len(pngs) != len(ref["pngs"]):
        return say("{n} updates, the reference's {ref}", n=len(pngs), ref=len(ref["pngs"]))
    if any(p is None for p in pngs):
        return _("no readable PNG at the path after an update")
    if any(min(p) == max(p) for p in pngs):
        return _("a saved PNG is blank")
    return None if all(a != b for a, b in zip(pngs, pngs[1:])) else _("the PNG did not change at an update")


FACETS = {
    "panels": Facet("a Figure of two panels side by side", project(lambda f: _panels(f["figure"])), record="plot",
                    rests=CONSTANT),
    "sides": Facet("which curve is in which panel", project(lambda f: {k: v and [p[0] for p in v]
                                                                      for k, v in _by_label(f["figure"]).items()}),
                   record="plot", rests=CONSTANT),
    "curves": Facet("each curve holds its list at epochs 1..N, as host values",
                    project(lambda f: _curves(f["figure"]), CURVES), record="plot"),
    "styles": Facet("'-o' for training, '--<' for validation", project(lambda f: _styles(f["figure"])),
                    record="plot", rests=CONSTANT),
    "axis_labels": Facet("the axis labels", project(lambda f: _labels(f["figure"])), record="plot", rests=CONSTANT),
    "legends": Facet("a legend on each panel naming its curves", project(lambda f: _legends(f["figure"])),
                     record="plot", rests=CONSTANT),
    "any": Facet("each curve holds its list at epochs 1..N, whatever its entries are",
                 project(lambda f: _curves(f["figure"]), CURVES), record="plot.any"),
    "history": Facet("plot_history leaves the history as it was", project(lambda f: f["history_after"]),
                     record="plot.any", rests=PROPERTY),
    **{f"kinds[{case}]": Facet(f"a history of {case} is drawn", project(lambda f, c=case: _curves(f[c]), CURVES),
                               record="plot.kinds") for case in ENTRIES},
    **{f"named[{named}]": Facet("a history in a " + ("named tuple" if named else "plain tuple") + " is drawn",
                                project(lambda f, n=str(named): _curves(f[n]), CURVES), record="plot.named")
       for named in (False, True)},
    **{f"accelerator[{case}]": Facet(f"a history of accelerator tensors ({case}) is drawn",
                                     project(lambda f, c=case: _curves(f[c]), CURVES), record="plot.accelerator")
       for case in ON_DEVICE},
    "render": Facet("plot_history never shows or pauses, and renders to PNG", record="plot.render",
                    rests=BEHAVIOUR),
    "live.curves": Facet("LivePlot redraws the history so far at each update",
                         project(lambda found: {"t": "list", "v": [_curves(u) for u in found]}, CURVES)),
    "live.panels": Facet("LivePlot keeps two panels",
                         project(lambda f: [_panels(u) for u in f["updates"]]), record="live", rests=CONSTANT),
    "live.one_figure": Facet("LivePlot keeps one figure", _live_first, record="live", rests=PROPERTY),
    "live.saved[keyword str]": Facet("LivePlot(path=str) saves a PNG of the figure at every update", _live_saved,
                                     record="live", rests=PROPERTY),
    "live.saved[positional Path]": Facet("LivePlot(Path) saves a PNG of the figure at every update", _live_saved,
                                         record="live.positional", rests=PROPERTY),
    "live.refused": Facet("LivePlot never shows or pauses", project(lambda f: f["refused"]), record="live",
                          rests=BEHAVIOUR),
    "live.no_path": Facet("LivePlot() without a path writes no file", rests=BEHAVIOUR),
    "live.seed": Facet("LivePlot draws the seed's history (accuracy tensors, in a named tuple)",
                       project(_curves, CURVES)),
    "live.accelerator": Facet("LivePlot draws accelerator tensors", project(_curves, CURVES)),
}
