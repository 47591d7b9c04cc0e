"""Checks for exercise 5, plotting: learning curves from any history, without blocking.

The seed's crash happened here: the book's `ax.plot(x_arr, hist[2], ...)` with
an accuracy history of GPU tensors. matplotlib turns what it draws into NumPy
arrays, and NumPy can only read host memory (nor a tensor that requires grad).
These checks draw histories of Python floats, NumPy scalars and 0-d tensors
(with `requires_grad=True`, which NumPy refuses just as it refuses a device
tensor; the tensors are made by kata.strategies.make_history, which takes a
device), read the figure back under the Agg backend, and refuse every call that
would open a window and wait (`plt.show()`, `plt.pause()`, ...).

The book's figure: two panels side by side, the loss on the left ('Train loss'
'-o', 'Validation loss' '--<'), the accuracy on the right ('Train acc.' '-o',
'Validation acc.' '--<'), x = epochs 1..N, axis labels 'Epoch', 'Loss',
'Accuracy', and a legend on each panel. `LivePlot` redraws it after every epoch,
as `train(..., on_epoch=live.update)` would drive it.
"""

import contextlib
import io
import os
import tempfile
import traceback
from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=True)  # off-screen, whatever MPLBACKEND says

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import example, given, settings  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from PIL import Image  # noqa: E402

from kata.strategies import History, histories, make_history  # noqa: E402
from kata.target import TargetError, display  # noqa: E402

# The device the histories' tensors live on (None: kata.strategies.HISTORY_DEVICE,
# the CPU, with requires_grad=True). Checks on an accelerator pass another.
DEVICE = None

PANELS = {"loss": ("Train loss", "Validation loss"), "accuracy": ("Train acc.", "Validation acc.")}
SIDE = {"loss": "left", "accuracy": "right"}
Y_LABEL = {"loss": "Loss", "accuracy": "Accuracy"}
INDEX = {"Train loss": 0, "Validation loss": 1, "Train acc.": 2, "Validation acc.": 3}
LIST_NAME = ["history[0], the training loss", "history[1], the validation loss",
             "history[2], the training accuracy", "history[3], the validation accuracy"]
# (linestyle, marker) as Line2D reports them, and the format string that draws them.
STYLE = {"Train": ("-", "o", "'-o' (a solid line with circles)"),
         "Validation": ("--", "<", "'--<' (a dashed line with left-pointing triangles)")}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def f32(values):
    """Values that every kind of entry (float32 tensors too) holds exactly."""
    return [float(np.float32(v)) for v in values]


# Five epochs of a run like the book's.
VALUES = (f32([0.693, 0.618, 0.552, 0.497, 0.441]), f32([0.671, 0.604, 0.571, 0.523, 0.502]),
          f32([0.552, 0.663, 0.718, 0.764, 0.789]), f32([0.581, 0.652, 0.702, 0.713, 0.741]))
SEED_KINDS = ["float", "float", "tensor", "tensor"]  # loss.item() floats, is_correct.sum() tensors
# Every kind in every list, a different one first in each (the first entry tells nothing about the rest).
MIXED_KINDS = [["float", "tensor", "numpy.float32", "tensor with grad_fn", "numpy.float64"],
               ["numpy.float64", "float", "tensor.float64", "numpy.float32", "tensor"],
               ["numpy.float32", "tensor with grad_fn", "float", "tensor", "tensor.float64"],
               ["tensor", "numpy.float64", "tensor with grad_fn", "float", "numpy.float32"]]


# --- helpers: run the learner's code safely --------------------------------


class BlockingCall(AssertionError):
    """A call that opens a window or waits for the user: refused in these checks."""


BLOCKING = [(plt, "show", "plt.show"), (plt, "pause", "plt.pause"), (plt, "ginput", "plt.ginput"),
            (plt, "waitforbuttonpress", "plt.waitforbuttonpress"), (Figure, "show", "Figure.show"),
            (Figure, "ginput", "Figure.ginput"), (Figure, "waitforbuttonpress", "Figure.waitforbuttonpress"),
            (FigureCanvasBase, "start_event_loop", "canvas.start_event_loop")]


@contextlib.contextmanager
def sandbox(plotting, who):
    """Run the learner's code with every blocking call refused (it raises at once,
    so nothing can hang), and leave pyplot as it was: figures opened inside are
    closed afterwards, interactive mode is restored."""
    module = plotting._load()
    calls = []

    def refuse(name):
        def blocked(*args, **kwargs):
            __tracebackhide__ = True
            calls.append(name)
            raise BlockingCall(
                f"{who} called {name}(): that opens a window and waits (plt.pause for its interval, "
                "plt.show until the window is closed), so a training run would stall at every epoch and "
                "a test would hang. Draw on the Figure and hand it back (or save it with fig.savefig); "
                "never call plt.show() or plt.pause() in code that must not block")
        return blocked

    patches = []
    for owner, attr, name in BLOCKING:
        original = getattr(owner, attr)
        patches.append((owner, attr, original, name))
        # ... also where the learner imported it by name: `from matplotlib.pyplot import pause`
        patches += [(module, var, value, name) for var, value in vars(module).items() if value is original]
    figures_before = set(plt.get_fignums())
    interactive = matplotlib.is_interactive()
    try:
        for owner, attr, _, name in patches:
            setattr(owner, attr, refuse(name))
        yield
        assert not calls, (
            f"{who} called {', '.join(sorted(set(calls)))}() (and carried on when it was refused): these "
            "calls open a window and wait; never call plt.show() or plt.pause() in code that must not block")
    finally:
        for owner, attr, original, _ in reversed(patches):
            setattr(owner, attr, original)
        for num in set(plt.get_fignums()) - figures_before:
            plt.close(num)
        matplotlib.interactive(interactive)


def kinds_in(history) -> str:
    """What each list of a history holds, in words."""
    def kind(v):
        if isinstance(v, torch.Tensor):
            grad = ", requires_grad=True" if v.requires_grad else ""
            return f"{v.dim()}-d {str(v.dtype).removeprefix('torch.')} tensors on {v.device}{grad}"
        if isinstance(v, np.generic):
            return f"NumPy {type(v).__name__} scalars"
        return f"Python {type(v).__name__}s"

    lines = []
    for name, lst in zip(LIST_NAME, history):
        found = list(dict.fromkeys(kind(v) for v in lst))
        lines.append(f"{name.split(',')[0]}: {' and '.join(found) if found else 'nothing'}")
    return "\n  ".join(lines)


def epochs(n) -> str:
    return f"{n} epoch{'' if n == 1 else 's'}"


def has_tensors(history) -> bool:
    return any(isinstance(v, torch.Tensor) for lst in history for v in lst)


def learner_line(exc, plotting) -> str:
    """Where in the target's code `exc` was raised, as one line (or '')."""
    root = plotting._target.path
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if Path(f.filename).resolve().is_relative_to(root)]
    if not frames:
        return ""
    f = frames[-1]
    return f" at {display(Path(f.filename).resolve())}, line {f.lineno}, in {f.name}: {f.line}\n"


def call(plotting, fn, who, history):
    """Call the learner's code; a crash becomes a message that says what went in."""
    __tracebackhide__ = True
    try:
        return fn()
    except (NotImplementedError, TargetError, BlockingCall):
        raise
    except Exception as exc:
        message = (f"{who} failed with {type(exc).__name__}: {exc}\n{learner_line(exc, plotting)}"
                   f"on a history of {epochs(len(history[0]))} ({type(history).__name__}) holding\n  "
                   f"{kinds_in(history)}\n")
        if has_tensors(history):
            message += (
                "matplotlib can only plot host values: it turns what it draws into NumPy arrays, and NumPy "
                "can't read a tensor on a device (the seed's crash) or one that requires grad. Convert each "
                "entry first: .item() or float(t.detach().cpu()) (.float() only changes the dtype, and "
                ".cpu() alone keeps requires_grad)")
        else:
            message += ("every entry here is a plain number, so the mistake is elsewhere: see the line above. "
                        "The history is a tuple of four lists: (loss_train, loss_valid, acc_train, acc_valid)")
        raise AssertionError(message) from None


def draw(plotting, history):
    """plot_history(history), safely."""
    __tracebackhide__ = True
    with sandbox(plotting, "plot_history(history)"):
        return call(plotting, lambda: plotting.plot_history(history), "plot_history(history)", history)


# --- helpers: the caller's history must stay as it was ----------------------


def snapshot(history):
    lists = [list(lst) for lst in history]
    tensors = [(v, v.requires_grad, v.device, v.detach().clone())
               for lst in history for v in lst if isinstance(v, torch.Tensor)]
    return type(history), lists, tensors


def short(values, limit=6) -> str:
    def one(v):
        if isinstance(v, torch.Tensor):
            return f"tensor({v.detach().cpu().item():.4g}{', requires_grad=True' if v.requires_grad else ''})"
        if isinstance(v, np.generic):
            return f"np.{type(v).__name__}({float(v):.4g})"
        return f"{v:.4g}" if isinstance(v, float) else repr(v)
    text = ", ".join(one(v) for v in list(values)[:limit])
    return f"[{text}{f', ... ({len(values)} in all)' if len(values) > limit else ''}]"


def assert_unchanged(history, snap, who):
    __tracebackhide__ = True
    kind, lists, tensors = snap
    assert type(history) is kind and len(history) == 4, f"{who} replaced the history's container"
    for name, before, lst in zip(LIST_NAME, lists, history):
        assert len(lst) == len(before) and all(a is b for a, b in zip(lst, before)), (
            f"{who} changed the history it was given: {name} was {short(before)} and is now {short(lst)}. "
            "The history belongs to the caller (train keeps appending to these very lists): read it, and "
            "convert into a new list, e.g. [float(v) for v in hist[2]]; never assign into the caller's lists")
    for t, grad, device, value in tensors:
        assert t.requires_grad == grad, (
            f"{who} turned off requires_grad on the caller's tensors: .requires_grad_(False) and .detach_() "
            "change the tensor itself. Use .detach(), which returns a new tensor and leaves the original "
            "alone (and .cpu() / .item() to get a host value)")
        assert t.device == device and torch.equal(t.detach().cpu(), value.cpu()), (
            f"{who} changed a tensor of the caller's history in place (an in-place op, one ending in _): "
            "read the history, don't modify it")


# --- helpers: read the figure back ------------------------------------------


def panels(fig, who, live=False):
    """(left axes, right axes) of a figure of two panels side by side."""
    __tracebackhide__ = True
    assert isinstance(fig, Figure), (
        f"{who} is {type(fig).__name__}, not a matplotlib.figure.Figure: "
        + ("keep the figure in self.figure" if live else
           "return the figure itself (`return fig`), not its axes or a (fig, ax) pair"))
    axes = fig.axes
    assert len(axes) == 2, (
        f"{who} has {len(axes)} axes; the book draws two panels side by side: fig.add_subplot(1, 2, 1) for "
        "the loss and fig.add_subplot(1, 2, 2) for the accuracy"
        + ("; each update must replace the panels, not add more: clear the figure first (fig.clear()), or "
           "keep the two axes and update their lines" if live and len(axes) > 2 else ""))
    left, right = sorted(axes, key=lambda ax: ax.get_position().x0)
    assert left.get_position().x1 <= right.get_position().x0 + 1e-6, (
        f"the two panels of {who} are not side by side (one is above the other, or they overlap): "
        "the book uses one row of two, fig.add_subplot(1, 2, 1) and fig.add_subplot(1, 2, 2)")
    return left, right


def panel_lines(fig, who, live=False):
    """{label: Line2D} for the four curves, each found once, in the right panel."""
    __tracebackhide__ = True
    found = {}
    for ax, (panel, labels) in zip(panels(fig, who, live), PANELS.items()):
        side, other = SIDE[panel], ("accuracy" if panel == "loss" else "loss")
        lines = {}
        for line in ax.get_lines():
            lines.setdefault(line.get_label(), []).append(line)
        strays = [label for label in PANELS[other] if label in lines]
        assert not strays, (
            f"the {side} panel of {who} holds {strays}: the book puts the loss on the left "
            "(fig.add_subplot(1, 2, 1)) and the accuracy on the right (fig.add_subplot(1, 2, 2))")
        for label in labels:
            assert label in lines, (
                f"the {side} ({panel}) panel of {who} has no line labelled {label!r} (its lines are labelled "
                f"{sorted(lines)}; '_child...' means no label): name each curve as you draw it, "
                f"ax.plot(x, y, fmt, label={label!r}), and ax.legend() shows the names")
            assert len(lines[label]) == 1, (
                f"the {panel} panel of {who} has {len(lines[label])} lines labelled {label!r}: "
                + ("each update adds lines instead of replacing them; clear the figure (fig.clear()) or the "
                   "axes before drawing again, or move the existing line with line.set_data(x, y)" if live
                   else "draw each curve once"))
            found[label] = lines[label][0]
    return found


def holds_tensors(data) -> bool:
    if isinstance(data, torch.Tensor):
        return True
    if isinstance(data, np.ndarray):
        return data.dtype == object and any(isinstance(v, torch.Tensor) for v in data.ravel())
    try:
        return any(isinstance(v, torch.Tensor) for v in data)
    except TypeError:
        return False


def assert_curves(fig, values, who, live=False):
    """Each of the four curves holds its list of `values` at x = 1..N."""
    __tracebackhide__ = True
    n = len(values[0])
    for label, line in panel_lines(fig, who, live).items():
        panel = "loss" if "loss" in label else "accuracy"
        for axis, data in (("x", line.get_xdata(orig=True)), ("y", line.get_ydata(orig=True))):
            assert not holds_tensors(data), (
                f"the {panel} panel's {label!r} line in {who} holds 0-d tensors as its {axis} values: "
                "matplotlib can only plot host values (drawing it crashes for a GPU tensor, as in the seed) "
                "— convert each entry with .item() / float(t.detach().cpu()) before plotting")
        x = np.asarray(line.get_xdata(orig=False), dtype=float).ravel()
        y = np.asarray(line.get_ydata(orig=False), dtype=float).ravel()
        grow = (f" The update for epoch {n - 1} gets {n}-point lists: redraw the whole history so far at "
                "every update." if live else "")
        assert len(x) == n and len(y) == n, (
            f"the {label!r} line in {who} has {len(y)} points; the history has {epochs(n)}.{grow}")
        if not np.array_equal(x, np.arange(1, n + 1)):
            assert not np.array_equal(x, np.arange(n)), (
                f"the {label!r} line in {who} starts at x = 0: epochs are counted from 1 in the book's plot, "
                "x_arr = np.arange(len(hist[0])) + 1 (ax.plot(y) alone uses 0..N-1)")
            pytest.fail(f"the {label!r} line in {who} is drawn at x = {short(x.tolist())}; "
                        f"it must be the epochs 1..{n}, x_arr = np.arange(len(hist[0])) + 1")
        expected = np.asarray(values[INDEX[label]], dtype=float)
        if not np.allclose(y, expected, rtol=1e-6, atol=1e-12):
            shows = [LIST_NAME[i] for i, other in enumerate(values)
                     if np.allclose(y, other, rtol=1e-6, atol=1e-12)]
            pytest.fail(
                f"the {label!r} line in {who} has y = {short(y.tolist())}, but {LIST_NAME[INDEX[label]]} is "
                f"{short(expected.tolist())}" + (f" (the line shows {shows[0]})" if shows else "")
                + ": plot each list of the history, in epoch order: history[0] train loss, [1] validation "
                "loss, [2] train accuracy, [3] validation accuracy")


# --- plot_history ------------------------------------------------------------


def test_plot_history_returns_a_figure_with_two_panels_side_by_side(plotting):
    panels(draw(plotting, make_history(VALUES)), "plot_history(history)")


def test_loss_is_on_the_left_and_accuracy_on_the_right(plotting):
    panel_lines(draw(plotting, make_history(VALUES)), "plot_history(history)")


def test_each_line_holds_its_history_at_epochs_1_to_n(plotting):
    assert_curves(draw(plotting, make_history(VALUES)), VALUES, "plot_history(history)")


def test_train_lines_are_solid_with_circles_and_validation_dashed_with_triangles(plotting):
    for label, line in panel_lines(draw(plotting, make_history(VALUES)), "plot_history(history)").items():
        which = label.split()[0]
        linestyle, marker, fmt = STYLE[which]
        got = (line.get_linestyle(), line.get_marker())
        assert got == (linestyle, marker), (
            f"the {label!r} line is drawn with linestyle {got[0]!r} and marker {got[1]!r}; the book draws "
            f"{which.lower()} curves with {fmt}: ax.plot(x, y, {linestyle + marker!r}, label={label!r})")


def test_axes_are_labelled_epoch_loss_and_accuracy(plotting):
    axes = panels(draw(plotting, make_history(VALUES)), "plot_history(history)")
    for ax, panel in zip(axes, PANELS):
        side = SIDE[panel]
        assert ax.get_xlabel() == "Epoch", (
            f"the {side} panel's x label is {ax.get_xlabel()!r}; both panels say 'Epoch': "
            "ax.set_xlabel('Epoch') on each axes")
        assert ax.get_ylabel() == Y_LABEL[panel], (
            f"the {side} panel's y label is {ax.get_ylabel()!r}; the book's {side} panel shows the {panel}: "
            f"ax.set_ylabel({Y_LABEL[panel]!r})")


def test_each_panel_has_a_legend_naming_its_lines(plotting):
    axes = panels(draw(plotting, make_history(VALUES)), "plot_history(history)")
    for ax, (panel, labels) in zip(axes, PANELS.items()):
        legend = ax.get_legend()
        assert legend is not None, (
            f"the {SIDE[panel]} ({panel}) panel has no legend: call ax.legend() on each axes after its "
            "curves are drawn (plt.legend() reaches only the current axes, fig.legend() makes one for "
            "the whole figure)")
        texts = [t.get_text() for t in legend.get_texts()]
        assert set(labels) <= set(texts), (
            f"the {panel} panel's legend reads {texts}, expected {list(labels)}: label the curves as you "
            "plot them (label='...') and call ax.legend() after plotting them")


ENTRY_KINDS = ["float", "numpy.float64", "numpy.float32", "tensor", "tensor.float64", "tensor with grad_fn",
               SEED_KINDS, MIXED_KINDS]
ENTRY_IDS = ["Python floats", "NumPy float64 scalars", "NumPy float32 scalars",
             "0-d tensors with requires_grad", "0-d float64 tensors with requires_grad",
             "0-d tensors with a grad_fn", "the seed's: loss floats, accuracy tensors", "a mix in each list"]


@pytest.mark.parametrize("kinds", ENTRY_KINDS, ids=ENTRY_IDS)
def test_plot_history_accepts_each_kind_of_entry(plotting, kinds):
    history = make_history(VALUES, kinds, DEVICE)
    what = ENTRY_IDS[ENTRY_KINDS.index(kinds)]
    assert_curves(draw(plotting, history), VALUES, f"plot_history(history) (a history of {what})")


@pytest.mark.parametrize("named", [False, True], ids=["plain tuple", "named tuple"])
def test_plot_history_accepts_a_named_tuple_or_a_plain_tuple(plotting, named):
    history = make_history(VALUES, named=named)
    who = f"plot_history({'History(...)' if named else '(loss_train, loss_valid, acc_train, acc_valid)'})"
    assert_curves(draw(plotting, history), VALUES, who)


def test_plot_history_leaves_the_history_as_it_was(plotting):
    history = make_history(VALUES, ["float", "numpy.float32", "tensor", "tensor.float64"], DEVICE)
    snap = snapshot(history)
    draw(plotting, history)
    assert_unchanged(history, snap, "plot_history(history)")


def test_plot_history_never_shows_or_pauses_and_renders_with_agg(plotting):
    fig = draw(plotting, make_history(VALUES, SEED_KINDS, DEVICE))  # a blocking call raises in there
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png")
    except Exception as exc:
        pytest.fail(f"the figure from plot_history could not be rendered with the Agg backend: "
                    f"{type(exc).__name__}: {exc}. Draw host values (floats) on a plain Figure")
    assert buffer.getvalue().startswith(PNG_MAGIC), "the figure from plot_history did not render to a PNG"


# The seed's history first: a stub or a crash fails at once, without a search.
@given(drawn=histories(device=DEVICE))
@example(drawn=(VALUES, make_history(VALUES, SEED_KINDS, DEVICE)))
@example(drawn=(VALUES, make_history(VALUES, MIXED_KINDS, DEVICE, named=True)))
def test_plot_history_draws_any_history(plotting, drawn):
    values, history = drawn
    snap = snapshot(history)
    assert_curves(draw(plotting, history), values, "plot_history(history)")
    assert_unchanged(history, snap, "plot_history(history)")


# --- LivePlot ------------------------------------------------------------------


def figure_of(live, who):
    __tracebackhide__ = True
    fig = getattr(live, "figure", None)
    assert fig is not None, f"the LivePlot has no .figure after {who}: keep its figure in self.figure"
    return fig


def drive(plotting, full, each=None, args=(), kwargs=None):
    """Run a LivePlot as `train(..., on_epoch=live.update)` does over the history
    `full`: one update per epoch, 0-based, with the same four lists (a named tuple
    if `full` is one) one entry longer each time; `each(epoch, live, who)` after
    every update. Returns the LivePlot."""
    __tracebackhide__ = True
    lists = ([], [], [], [])
    history = History(*lists) if isinstance(full, History) else lists
    with sandbox(plotting, "LivePlot"):
        live = call(plotting, lambda: plotting.LivePlot(*args, **(kwargs or {})), "LivePlot(...)", full)
        for epoch in range(len(full[0])):
            for lst, entries in zip(lists, full):
                lst.append(entries[epoch])
            who = f"update({epoch}, history)"
            snap = snapshot(history)
            call(plotting, lambda: live.update(epoch, history), f"LivePlot.{who}", history)
            assert_unchanged(history, snap, f"LivePlot.{who}")
            if each is not None:
                each(epoch, live, who)
    return live


def prefix(values, n):
    return tuple(v[:n] for v in values)


def test_live_plot_grows_one_point_per_epoch(plotting):
    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(VALUES, epoch + 1), f"LivePlot.figure after {who}", live=True)

    drive(plotting, make_history(VALUES), each=each)


def test_live_plot_draws_the_seeds_history_of_tensors(plotting):
    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(VALUES, epoch + 1),
                      f"LivePlot.figure after {who} (accuracy entries are tensors)", live=True)

    drive(plotting, make_history(VALUES, SEED_KINDS, DEVICE, named=True), each=each)


def test_live_plot_keeps_one_figure(plotting):
    first = {}

    def each(epoch, live, who):
        fig = figure_of(live, who)
        open_figures = len(plt.get_fignums())
        if epoch == 0:
            first.update(figure=fig, open=open_figures)
            return
        assert fig is first["figure"], (
            f"LivePlot.figure is a new Figure after {who}: make the figure once, in __init__, and redraw "
            "that one in update (with a screen, a new figure is a new window every epoch)")
        assert open_figures <= first["open"], (
            f"{open_figures - first['open']} more pyplot figure(s) are open after {who} than after the first "
            "update: each plt.figure() / plt.subplots() stays open in pyplot (and in memory) until "
            "plt.close(); make the figure once and redraw it")
        panels(fig, f"LivePlot.figure after {who}", live=True)

    drive(plotting, make_history(prefix(VALUES, 4)), each=each)


@pytest.mark.parametrize("how", ["keyword str", "positional Path"])
def test_live_plot_saves_a_png_at_every_epoch(plotting, tmp_path, how):
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "curves.png"
    args, kwargs = ((), {"path": str(path)}) if how == "keyword str" else ((path,), {})
    saved = []

    def each(epoch, live, who):
        assert path.is_file(), (
            f"after {who} there is no file at {path}: LivePlot(path) must save its figure there at every "
            f"update, self.figure.savefig(self.path) (files there: {sorted(os.listdir(path.parent))})")
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), (
            f"the file saved at {path} after {who} is not a PNG (it starts with {data[:8]!r}): "
            "fig.savefig(path) picks the format from the '.png' ending")
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                size, (darkest, lightest) = image.size, image.convert("L").getextrema()
        except Exception as exc:
            pytest.fail(f"the PNG saved after {who} can't be read back ({type(exc).__name__}: {exc}): "
                        "save it with fig.savefig(path), and let savefig close the file")
        assert min(size) > 0 and darkest < lightest, (
            f"the PNG saved after {who} is blank: save after drawing (draw both panels, then "
            "self.figure.savefig(self.path)), so the file shows the curves so far")
        assert not saved or data != saved[-1], (
            f"the PNG at {path} did not change at {who}: save after redrawing, at every update, so the file "
            "always shows the curves so far")
        saved.append(data)

    drive(plotting, make_history(prefix(VALUES, 3), SEED_KINDS, DEVICE), args=args, kwargs=kwargs, each=each)


def test_live_plot_without_a_path_writes_no_file(plotting, tmp_path):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    saves = []
    savefig = Figure.savefig

    def spy(self, fname, *args, **kwargs):
        if isinstance(fname, (str, os.PathLike)):
            saves.append(str(fname))
        return savefig(self, fname, *args, **kwargs)

    Figure.savefig = spy
    try:
        with contextlib.chdir(folder):
            drive(plotting, make_history(prefix(VALUES, 3)))
    finally:
        Figure.savefig = savefig
    written = sorted(os.listdir(folder))
    assert not saves and not written, (
        f"LivePlot() without a path saved its figure ({saves or written}): with path=None nothing is "
        "written; save only `if self.path is not None`")


def test_live_plot_never_shows_or_pauses(plotting):
    drive(plotting, make_history(prefix(VALUES, 3), SEED_KINDS, DEVICE))  # a blocking call raises in there


# Driving a LivePlot costs a redraw per epoch: fewer and shorter runs than for plot_history.
@settings(max_examples=max(1, settings.default.max_examples // 2))
@given(drawn=histories(max_epochs=10, device=DEVICE))
@example(drawn=(prefix(VALUES, 2), make_history(prefix(VALUES, 2), SEED_KINDS, DEVICE)))
def test_live_plot_follows_any_history(plotting, drawn):
    values, history = drawn

    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(values, epoch + 1), f"LivePlot.figure after {who}", live=True)

    drive(plotting, history, each=each)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
@pytest.mark.parametrize("kinds", [SEED_KINDS, "tensor", MIXED_KINDS],
                         ids=["the seed's history", "all device tensors", "mixed"])
def test_plot_history_draws_accelerator_tensors(plotting, accelerator, kinds):
    history = make_history(VALUES, kinds, accelerator)
    assert_curves(draw(plotting, history), VALUES,
                  f"plot_history(history) (a history holding tensors on {accelerator})")


@pytest.mark.cuda
def test_live_plot_draws_accelerator_tensors(plotting, accelerator):
    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(VALUES, epoch + 1),
                      f"LivePlot.figure after {who} (accuracy entries are tensors on {accelerator})", live=True)

    drive(plotting, make_history(VALUES, SEED_KINDS, accelerator, named=True), each=each)
