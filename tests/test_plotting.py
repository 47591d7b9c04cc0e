"""Checks for exercise 5, plotting: learning curves from any history, without blocking.

The seed's crash happened here: the book's `ax.plot(x_arr, hist[2], ...)` with
an accuracy history of GPU tensors. matplotlib turns what it draws into NumPy
arrays, and NumPy can only read host memory. These checks draw histories of
Python floats, NumPy scalars and 0-d tensors (made by
kata.records.strategies.make_history), read the figure back under the Agg
backend, and refuse every call that would open a window and wait
(`plt.show()`, `plt.pause()`, ...).

Each kind of entry is its own case. The seed's entries are 0-d tensors without
grad (`is_correct.sum()` never requires grad): on the CPU matplotlib plots them,
and the checks marked `cuda` put them on the accelerator, where they are the
seed's crash. Tensors that require grad (a loss kept as a tensor) are refused
by NumPy on any device, for a reason of their own.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.

The book's figure: two panels side by side, the loss on the left ('Train loss'
'-o', 'Validation loss' '--<'), the accuracy on the right ('Train acc.' '-o',
'Validation acc.' '--<'), x = epochs 1..N, axis labels 'Epoch', 'Loss',
'Accuracy', and a legend on each panel. `LivePlot` redraws it after every epoch,
as `train(..., on_epoch=live.update)` would drive it.
"""

import contextlib
import functools
import io
import os
import tempfile
import weakref
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure
from PIL import Image

from kata.checks.messages import NUMPY_LESSONS, fail_if, numpy_refusal, where_in
from kata.harness.target import TargetError, module_of, target_of
from kata.i18n import N_, _, say
from kata.records.history import History
from kata.records.snapshots import change, snapshot
from kata.records.strategies import examples, histories, make_history

matplotlib.use("Agg", force=True)  # off-screen, whatever MPLBACKEND says

# The device the histories' tensors live on (None: kata.records.strategies.HISTORY_DEVICE,
# the CPU). The checks on an accelerator pass it instead.
DEVICE = None

PANELS = {"loss": ("Train loss", "Validation loss"), "accuracy": ("Train acc.", "Validation acc.")}
SIDE = {"loss": N_("left"), "accuracy": N_("right")}
PANEL_NAME = {"loss": N_("loss"), "accuracy": N_("accuracy")}   # the panels, as a message names them
Y_LABEL = {"loss": "Loss", "accuracy": "Accuracy"}
INDEX = {"Train loss": 0, "Validation loss": 1, "Train acc.": 2, "Validation acc.": 3}
LIST_NAME = [N_("history[0], the training loss"), N_("history[1], the validation loss"),
             N_("history[2], the training accuracy"), N_("history[3], the validation accuracy")]
# (linestyle, marker) as Line2D reports them, and the format string that draws them.
STYLE = {"Train": ("-", "o", N_("'-o' (a solid line with circles)")),
         "Validation": ("--", "<", N_("'--<' (a dashed line with left-pointing triangles)"))}
CURVES = {"Train": N_("train curves"), "Validation": N_("validation curves")}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def f32(values):
    """Values that every kind of entry (float32 tensors too) holds exactly."""
    return [float(np.float32(v)) for v in values]


# Five epochs of a run like the book's.
VALUES = (f32([0.693, 0.618, 0.552, 0.497, 0.441]), f32([0.671, 0.604, 0.571, 0.523, 0.502]),
          f32([0.552, 0.663, 0.718, 0.764, 0.789]), f32([0.581, 0.652, 0.702, 0.713, 0.741]))
# The seed's history: loss.item() floats, and accuracies summed from is_correct.sum(): 0-d tensors without grad.
SEED_KINDS = ["float", "float", "tensor", "tensor"]
# Kinds mixed in every list, a different one first in each (the first entry tells nothing about the rest).
MIXED_KINDS = [["float", "tensor", "numpy.float32", "tensor with grad_fn", "numpy.float64"],
               ["numpy.float64", "float", "tensor.float64", "tensor with requires_grad", "tensor"],
               ["numpy.float32", "tensor with grad_fn", "float", "tensor", "tensor.float64"],
               ["tensor", "numpy.float64", "tensor with requires_grad", "float", "numpy.float32"]]


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
    module = module_of(plotting)
    calls = []

    def refuse(name):
        def blocked(*args, **kwargs):
            __tracebackhide__ = True
            calls.append(name)
            raise BlockingCall(say(
                "{who} called {name}(): that opens a window and waits (plt.pause for its interval, "
                "plt.show until the window is closed), so a training run would stall at every epoch and "
                "a test would hang. Draw on the Figure and hand it back (or save it with fig.savefig); "
                "never call plt.show() or plt.pause() in code that must not block", who=who, name=name))
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
        for owner, attr, _original, name in patches:
            setattr(owner, attr, refuse(name))
        yield
        assert not calls, say(
            "{who} called {names}() (and carried on when it was refused): these calls open a window and wait; "
            "never call plt.show() or plt.pause() in code that must not block", who=who,
            names=", ".join(sorted(set(calls))))
    finally:
        for owner, attr, original, _name in reversed(patches):
            setattr(owner, attr, original)
        for num in set(plt.get_fignums()) - figures_before:
            plt.close(num)
        matplotlib.interactive(interactive)


def kinds_in(history) -> str:
    """What each list of a history holds, in words."""
    def kind(v):
        if isinstance(v, torch.Tensor):
            values = dict(dims=v.dim(), dtype=str(v.dtype).removeprefix("torch."), device=v.device)
            if v.requires_grad:
                return say("{dims}-d {dtype} tensors on {device}, requires_grad=True", **values)
            return say("{dims}-d {dtype} tensors on {device}", **values)
        if isinstance(v, np.generic):
            return say("NumPy {type} scalars", type=type(v).__name__)
        return say("Python {type}s", type=type(v).__name__)

    lines = []
    for name, lst in zip(LIST_NAME, history):
        found = list(dict.fromkeys(kind(v) for v in lst))
        kinds = _(" and ").join(found) if found else _("nothing")
        lines.append(f"{name.split(',')[0]}: {kinds}")
    return "\n  ".join(lines)


def epochs(n) -> str:
    return say("{n} epoch", n=n) if n == 1 else say("{n} epochs", n=n)


def learner_line(exc, plotting) -> str:
    """Where in the target's code `exc` was raised, as one line (or '')."""
    return where_in(exc, target_of(plotting).path)


KEEP_REQUIRES_GRAD = N_(
    "the caller's tensors must keep requires_grad: .requires_grad_(False) and .detach_() change the tensor itself "
    "(and refuse to on a tensor computed from others). Use .detach(), which returns a new tensor and leaves the "
    "original alone (and .cpu() / .item() to get a host value)")
BY_POSITION = N_("the history is a tuple of four lists, (loss_train, loss_valid, acc_train, acc_valid): a plain tuple "
                 "or a named one, so read it by position (history[0], or unpack it), which works for both; a plain "
                 "tuple has no field names")
CRASHED = N_("{function} failed in your code, at the line below, and the check can't tell why from what it gave it "
             "(described below): read the error and the line")
CRASH_DETAILS = N_("{cause}\n  {who} failed{where}\n  {error}\n  the history ({epochs}, a {kind}) holds\n    {holds}")


def call(plotting, fn, who, history):
    """Call the learner's code; a crash becomes a message that says why, where, and what went in."""
    __tracebackhide__ = True
    try:
        return fn()
    except (NotImplementedError, TargetError):
        raise
    except BlockingCall as exc:  # the refusal's message, and the line that called it
        line = learner_line(exc, plotting)
        raise AssertionError(f"{exc}{chr(10) + '  ' + line if line else ''}") from None
    except Exception as exc:
        refusal = numpy_refusal(exc)
        if refusal is not None:
            cause = _(NUMPY_LESSONS[refusal])
        elif isinstance(exc, RuntimeError) and "requires_grad flags of leaf variables" in str(exc):
            cause = _(KEEP_REQUIRES_GRAD)
        elif isinstance(exc, AttributeError) and "'tuple' object has no attribute" in str(exc):
            cause = _(BY_POSITION)
        else:
            cause = say(CRASHED, function=who.split("(")[0])
        line = learner_line(exc, plotting)
        where, error = (" " + line if line else ""), f"{type(exc).__name__}: {exc}"
        fail_if(say(CRASH_DETAILS, cause=cause, who=who, where=where, error=error, epochs=epochs(len(history[0])),
                    kind=type(history).__name__, holds=kinds_in(history).replace("\n  ", "\n    ")))


def draw(plotting, history):
    """plot_history(history), safely."""
    __tracebackhide__ = True
    with sandbox(plotting, "plot_history(history)"):
        return call(plotting, lambda: plotting.plot_history(history), "plot_history(history)", history)


_BOOKS_FIGURES = weakref.WeakKeyDictionary()   # {target: plot_history's figure of the book's five epochs}


def books_figure(plotting):
    """plot_history(history) of the book's five epochs of floats, drawn once per folder under check for the
    checks that only read that figure (its panels, sides, curves, styles, labels and legends): a draw costs
    the learner's code about 40 ms. A draw that fails is not kept: each check draws again, and fails itself."""
    __tracebackhide__ = True
    target = target_of(plotting)
    if target not in _BOOKS_FIGURES:
        _BOOKS_FIGURES[target] = draw(plotting, make_history(VALUES))
    return _BOOKS_FIGURES[target]


# --- helpers: the caller's history must stay as it was ----------------------


def short(values, limit=6) -> str:
    def one(v):
        if isinstance(v, torch.Tensor):
            return f"tensor({v.detach().cpu().item():.4g}{', requires_grad=True' if v.requires_grad else ''})"
        if isinstance(v, np.generic):
            return f"np.{type(v).__name__}({float(v):.4g})"
        return f"{v:.4g}" if isinstance(v, float) else repr(v)
    text = ", ".join(one(v) for v in list(values)[:limit])
    more = say(", ... ({count} in all)", count=len(values)) if len(values) > limit else ""
    return f"[{text}{more}]"


def assert_unchanged(history, snap, who):
    __tracebackhide__ = True
    found = change(snap, history, "history")
    if found is None:
        return
    if found.kind == "requires_grad":
        fail_if(_(KEEP_REQUIRES_GRAD) + "\n" + say("  {who} turned it off on {path}", who=who, path=found.path))
    if found.kind in ("values", "device"):
        pytest.fail(say("the caller's tensors must stay as they are: read the history, don't modify it (no in-place "
                        "op, one ending in _)\n  {who} changed a tensor of the caller's history in place ({found})",
                        who=who, found=found), pytrace=False)
    if found.keys:  # one of the four lists, or an entry of one
        i = found.keys[0]
        before = [entry.obj for _key, entry in snap.items[i][1].items]
        was = say("{name} was {before} and is now {now}", name=_(LIST_NAME[i]), before=short(before),
                  now=short(history[i]))
    else:
        was = str(found)
    pytest.fail(say("the history belongs to the caller (train keeps appending to these very lists): read it, and "
                    "convert into a new list, e.g. [float(v) for v in hist[2]]; never assign into the caller's "
                    "lists\n  {who} changed the history it was given: {was}", who=who, was=was), pytrace=False)


# --- helpers: read the figure back ------------------------------------------


LIVE_FIGURE = N_("LivePlot keeps its figure, a matplotlib.figure.Figure, in self.figure\n  {who} is a {kind}")
RETURNS_FIGURE = N_("plot_history returns the figure itself (`return fig`), a matplotlib.figure.Figure, not its axes "
                    "or a (fig, ax) pair\n  {who} is a {kind}")
LINES_ADDED = N_("each update must replace the lines, not add more: clear the figure (fig.clear()) or the axes before "
                 "drawing again, or move the existing line with line.set_data(x, y)\n"
                 "  the {panel} panel of {who} has {count} lines labelled {label!r}")
DRAWN_ONCE = N_("each curve is drawn once\n  the {panel} panel of {who} has {count} lines labelled {label!r}")
POINTS_SO_FAR = N_("each update redraws the whole history so far (the update for epoch e gets lists of e + 1 entries)"
                   "\n  the {label!r} line in {who} has {points} points; the history has {epochs}")
POINTS = N_("each curve has one point per epoch\n"
            "  the {label!r} line in {who} has {points} points; the history has {epochs}")
CURVE_VALUES = N_("each curve plots its list of the history, in epoch order: history[0] train loss, [1] validation "
                  "loss, [2] train accuracy, [3] validation accuracy\n"
                  "  the {label!r} line in {who} has y = {got}, but {name} is {want}")
CURVE_SHOWS_ANOTHER = N_("each curve plots its list of the history, in epoch order: history[0] train loss, [1] "
                         "validation loss, [2] train accuracy, [3] validation accuracy\n"
                         "  the {label!r} line in {who} has y = {got}, but {name} is {want} (the line shows {other})")


def panels(fig, who, live=False):
    """(left axes, right axes) of a figure of two panels side by side."""
    __tracebackhide__ = True
    assert isinstance(fig, Figure), say(LIVE_FIGURE if live else RETURNS_FIGURE, who=who, kind=type(fig).__name__)
    axes = fig.axes
    if live and len(axes) > 2:
        pytest.fail(say("each update must replace the two panels, not add more: clear the figure first "
                        "(fig.clear()), or keep the two axes and update their lines\n"
                        "  {who} has {count} axes", who=who, count=len(axes)), pytrace=False)
    assert len(axes) == 2, say(
        "the book draws two panels side by side: fig.add_subplot(1, 2, 1) for the loss and "
        "fig.add_subplot(1, 2, 2) for the accuracy\n  {who} has {count} axes", who=who, count=len(axes))
    left, right = sorted(axes, key=lambda ax: ax.get_position().x0)
    assert left.get_position().x1 <= right.get_position().x0 + 1e-6, say(
        "the two panels must be side by side, as the book has them: one row of two, fig.add_subplot(1, 2, 1) "
        "and fig.add_subplot(1, 2, 2)\n  the panels of {who} are one above the other, or they overlap", who=who)
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
        assert not strays, say(
            "the book puts the loss on the left (fig.add_subplot(1, 2, 1)) and the accuracy on the right "
            "(fig.add_subplot(1, 2, 2))\n  the {side} panel of {who} holds {strays}", side=_(side), who=who,
            strays=strays)
        for label in labels:
            assert label in lines, say(
                "each curve is named as it is drawn, ax.plot(x, y, fmt, label=...), with the book's names "
                "('Train loss', 'Validation loss', 'Train acc.', 'Validation acc.'), and ax.legend() shows them\n"
                "  the {side} ({panel}) panel of {who} has no line labelled {label!r}; its lines are labelled "
                "{labels} ('_child...' means no label)", side=_(side), panel=_(PANEL_NAME[panel]), who=who,
                label=label, labels=sorted(lines))
            assert len(lines[label]) == 1, say(LINES_ADDED if live else DRAWN_ONCE, panel=_(PANEL_NAME[panel]),
                                               who=who, count=len(lines[label]), label=label)
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
            assert not holds_tensors(data), say(
                "a plotted line holds tensors: matplotlib could read these CPU tensors, but not tensors on an "
                "accelerator (the seed's crash) nor ones that require grad. Convert each entry to a Python float "
                "before plotting: .item() or float(t)\n  the {panel} panel's {label!r} line in {who} holds "
                "tensors as its {axis} values", panel=_(PANEL_NAME[panel]), label=label, who=who, axis=axis)
        x = np.asarray(line.get_xdata(orig=False), dtype=float).ravel()
        y = np.asarray(line.get_ydata(orig=False), dtype=float).ravel()
        assert len(x) == n and len(y) == n, say(POINTS_SO_FAR if live else POINTS, label=label, who=who,
                                                points=len(y), epochs=epochs(n))
        if not np.array_equal(x, np.arange(1, n + 1)):
            assert not np.array_equal(x, np.arange(n)), say(
                "epochs are counted from 1 in the book's plot: x_arr = np.arange(len(hist[0])) + 1 (ax.plot(y) "
                "alone uses 0..N-1)\n  the {label!r} line in {who} starts at x = 0", label=label, who=who)
            pytest.fail(say("the x values are the epochs 1..N: x_arr = np.arange(len(hist[0])) + 1\n"
                            "  the {label!r} line in {who} is drawn at x = {x}", label=label, who=who,
                            x=short(x.tolist())), pytrace=False)
        expected = np.asarray(values[INDEX[label]], dtype=float)
        if not np.allclose(y, expected, rtol=1e-6, atol=1e-12):
            shows = [_(LIST_NAME[i]) for i, other in enumerate(values)
                     if np.allclose(y, other, rtol=1e-6, atol=1e-12)]
            values_ = dict(label=label, who=who, got=short(y.tolist()), name=_(LIST_NAME[INDEX[label]]),
                           want=short(expected.tolist()))
            fail_if(say(CURVE_SHOWS_ANOTHER, other=shows[0], **values_) if shows else say(CURVE_VALUES, **values_))


# --- plot_history ------------------------------------------------------------


@pytest.mark.audit("panels")
def test_plot_history_returns_a_figure_with_two_panels_side_by_side(plotting):
    panels(books_figure(plotting), "plot_history(history)")


@pytest.mark.audit("sides")
def test_loss_is_on_the_left_and_accuracy_on_the_right(plotting):
    panel_lines(books_figure(plotting), "plot_history(history)")


@pytest.mark.audit("curves")
def test_each_line_holds_its_history_at_epochs_1_to_n(plotting):
    assert_curves(books_figure(plotting), VALUES, "plot_history(history)")


@pytest.mark.audit("styles")
def test_train_lines_are_solid_with_circles_and_validation_dashed_with_triangles(plotting):
    for label, line in panel_lines(books_figure(plotting), "plot_history(history)").items():
        which = label.split()[0]
        linestyle, marker, fmt = STYLE[which]
        got = (line.get_linestyle(), line.get_marker())
        assert got == (linestyle, marker), say(
            "the {label!r} line is drawn with linestyle {got_style!r} and marker {got_marker!r}; the book draws "
            "{curves} with {fmt}: ax.plot(x, y, {style!r}, label={label!r})", label=label, got_style=got[0],
            got_marker=got[1], curves=_(CURVES[which]), fmt=_(fmt), style=linestyle + marker)


@pytest.mark.audit("axis_labels")
def test_axes_are_labelled_epoch_loss_and_accuracy(plotting):
    axes = panels(books_figure(plotting), "plot_history(history)")
    for ax, panel in zip(axes, PANELS):
        side = SIDE[panel]
        assert ax.get_xlabel() == "Epoch", say(
            "the {side} panel's x label is {label!r}; both panels say 'Epoch': ax.set_xlabel('Epoch') on each axes",
            side=_(side), label=ax.get_xlabel())
        assert ax.get_ylabel() == Y_LABEL[panel], say(
            "the {side} panel's y label is {label!r}; the book's {side} panel shows the {panel}: "
            "ax.set_ylabel({want!r})", side=_(side), label=ax.get_ylabel(), panel=_(PANEL_NAME[panel]),
            want=Y_LABEL[panel])


@pytest.mark.audit("legends")
def test_each_panel_has_a_legend_naming_its_lines(plotting):
    axes = panels(books_figure(plotting), "plot_history(history)")
    for ax, (panel, labels) in zip(axes, PANELS.items()):
        legend = ax.get_legend()
        assert legend is not None, say(
            "the {side} ({panel}) panel has no legend: call ax.legend() on each axes after its "
            "curves are drawn (plt.legend() reaches only the current axes, fig.legend() makes one for "
            "the whole figure)", side=_(SIDE[panel]), panel=_(PANEL_NAME[panel]))
        texts = [t.get_text() for t in legend.get_texts()]
        assert set(labels) <= set(texts), say(
            "the {panel} panel's legend reads {texts}, expected {labels}: label the curves as you "
            "plot them (label='...') and call ax.legend() after plotting them", panel=_(PANEL_NAME[panel]),
            texts=texts, labels=list(labels))


ENTRY_KINDS = ["float", "numpy.float64", "numpy.float32", "tensor", "tensor.float64", "tensor with requires_grad",
               "tensor with grad_fn", SEED_KINDS, MIXED_KINDS]
ENTRY_IDS = [N_("Python floats"), N_("NumPy float64 scalars"), N_("NumPy float32 scalars"), N_("0-d tensors"),
             N_("0-d float64 tensors"), N_("0-d tensors with requires_grad"), N_("0-d tensors with a grad_fn"),
             N_("the seed's: loss floats, accuracy tensors"), N_("a mix in each list")]   # the checks' ids too


@pytest.mark.parametrize("kinds", ENTRY_KINDS, ids=ENTRY_IDS)
@pytest.mark.audit("kinds[{id}]")
def test_plot_history_accepts_each_kind_of_entry(plotting, kinds):
    history = make_history(VALUES, kinds, DEVICE)
    what = ENTRY_IDS[ENTRY_KINDS.index(kinds)]
    assert_curves(draw(plotting, history), VALUES, say("plot_history(history) (a history of {what})", what=_(what)))


@pytest.mark.parametrize("named", [False, True], ids=["plain tuple", "named tuple"])
@pytest.mark.audit("named[{named}]")
def test_plot_history_accepts_a_named_tuple_or_a_plain_tuple(plotting, named):
    history = make_history(VALUES, named=named)
    who = f"plot_history({'History(...)' if named else '(loss_train, loss_valid, acc_train, acc_valid)'})"
    assert_curves(draw(plotting, history), VALUES, who)


@pytest.mark.audit("history")
def test_plot_history_leaves_the_history_as_it_was(plotting):
    history = make_history(VALUES, ["float", "numpy.float32", "tensor with requires_grad", "tensor.float64"], DEVICE)
    snap = snapshot(history)
    draw(plotting, history)
    assert_unchanged(history, snap, "plot_history(history)")


@pytest.mark.audit("render", observed=N_("whether plot_history calls plt.show() or plt.pause()"))
def test_plot_history_never_shows_or_pauses_and_renders_with_agg(plotting):
    fig = draw(plotting, make_history(VALUES, SEED_KINDS, DEVICE))  # a blocking call raises in there
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png")
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        pytest.fail(say("the figure from plot_history must render with the Agg backend: draw host values (floats) "
                        "on a plain Figure\n  rendering it failed with {error}", error=error), pytrace=False)
    assert buffer.getvalue().startswith(PNG_MAGIC), _("the figure from plot_history did not render to a PNG")


# The seed's history first: a stub or a crash fails at once, without a search. A case is one draw of the
# learner's figure (about 35 ms).
@settings(max_examples=examples(case_seconds=0.035))
@given(drawn=histories(device=DEVICE))
@example(drawn=(VALUES, make_history(VALUES, SEED_KINDS, DEVICE)))
@example(drawn=(VALUES, make_history(VALUES, MIXED_KINDS, DEVICE, named=True)))
@pytest.mark.audit("any", "history")
def test_plot_history_draws_any_history(plotting, drawn):
    values, history = drawn
    snap = snapshot(history)
    assert_curves(draw(plotting, history), values, "plot_history(history)")
    assert_unchanged(history, snap, "plot_history(history)")


# --- LivePlot ------------------------------------------------------------------


def figure_of(live, who):
    __tracebackhide__ = True
    fig = getattr(live, "figure", None)
    assert fig is not None, say("a LivePlot keeps its figure in self.figure\n  it has no .figure after {who}", who=who)
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
            call(plotting, functools.partial(live.update, epoch, history), f"LivePlot.{who}", history)
            assert_unchanged(history, snap, f"LivePlot.{who}")
            if each is not None:
                each(epoch, live, who)
    return live


# What a check of a LivePlot reads: its figure after an update.
FIGURE_AFTER = N_("LivePlot.figure after {who}")


def prefix(values, n):
    return tuple(v[:n] for v in values)


@pytest.mark.audit("live.curves")
def test_live_plot_grows_one_point_per_epoch(plotting):
    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(VALUES, epoch + 1), say(FIGURE_AFTER, who=who), live=True)

    drive(plotting, make_history(prefix(VALUES, 3)), each=each)


@pytest.mark.audit("live.seed")
def test_live_plot_draws_the_seeds_history_of_tensors(plotting):
    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(VALUES, epoch + 1),
                      say("LivePlot.figure after {who} (accuracy entries are tensors)", who=who), live=True)

    drive(plotting, make_history(prefix(VALUES, 3), SEED_KINDS, DEVICE, named=True), each=each)


@pytest.mark.audit("live.one_figure", "live.panels")
def test_live_plot_keeps_one_figure(plotting):
    first = {}

    def each(epoch, live, who):
        fig = figure_of(live, who)
        open_figures = len(plt.get_fignums())
        if epoch == 0:
            first.update(figure=fig, open=open_figures)
            return
        assert fig is first["figure"], say(
            "a LivePlot makes its figure once, in __init__, and redraws that one in update (with a screen, a new "
            "figure is a new window every epoch)\n  LivePlot.figure is a new Figure after {who}", who=who)
        assert open_figures <= first["open"], say(
            "each plt.figure() / plt.subplots() stays open in pyplot (and in memory) until plt.close(): make the "
            "figure once and redraw it\n  {more} more pyplot figure(s) are open after {who} than after the first "
            "update", more=open_figures - first["open"], who=who)
        panels(fig, say(FIGURE_AFTER, who=who), live=True)

    drive(plotting, make_history(prefix(VALUES, 3)), each=each)


SAVED_BEHIND = N_("LivePlot.update saves the figure before drawing this epoch, so the PNG shows the curves one epoch "
                  "behind: draw both panels first, then save (self.figure.savefig(self.path))\n"
                  "  at {who}, the figure was saved when its longest line held {points} of the {epochs} points")


@pytest.mark.parametrize("how", ["keyword str", "positional Path"])
@pytest.mark.audit("live.saved[{how}]")
def test_live_plot_saves_a_png_at_every_epoch(plotting, tmp_path, how, monkeypatch):
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "curves.png"
    args, kwargs = ((), {"path": str(path)}) if how == "keyword str" else ((path,), {})
    saved = []
    drawn_when_saved = []   # the longest line's number of points at each savefig
    savefig = Figure.savefig

    def spy(self, *a, **k):
        drawn_when_saved.append(max((len(line.get_xdata()) for ax in self.axes for line in ax.get_lines()),
                                    default=0))
        return savefig(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", spy)

    def each(epoch, live, who):
        if drawn_when_saved and drawn_when_saved[-1] < epoch + 1:
            pytest.fail(say(SAVED_BEHIND, who=who, points=drawn_when_saved[-1], epochs=epoch + 1), pytrace=False)
        drawn_when_saved.clear()
        assert path.is_file(), say(
            "LivePlot(path) saves its figure at path at every update: self.figure.savefig(self.path)\n"
            "  after {who} there is no file at {path} (files there: {files})", who=who, path=path,
            files=sorted(os.listdir(path.parent)))
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), say(
            "LivePlot(path) saves a PNG: fig.savefig(path) picks the format from the '.png' ending\n"
            "  the file saved at {path} after {who} starts with {start!r}", path=path, who=who, start=data[:8])
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                size, (darkest, lightest) = image.size, image.convert("L").getextrema()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            pytest.fail(say("the saved PNG must be readable: save it with fig.savefig(path), and let savefig close "
                            "the file\n  the PNG saved after {who} can't be read back ({error})", who=who,
                            error=error), pytrace=False)
        assert min(size) > 0 and darkest < lightest, say(
            "save after drawing (draw both panels, then self.figure.savefig(self.path)), so the file shows the "
            "curves so far\n  the PNG saved after {who} is blank", who=who)
        assert not saved or data != saved[-1], say(
            "save after redrawing, at every update, so the file always shows the curves so far\n"
            "  the PNG at {path} did not change at {who}", path=path, who=who)
        saved.append(data)

    # Two epochs hold every case: a file at each update, one that changes, saved after the redraw (each savefig
    # of the learner's figure costs about 0.2 s).
    drive(plotting, make_history(prefix(VALUES, 2), SEED_KINDS, DEVICE), args=args, kwargs=kwargs, each=each)


@pytest.mark.audit("live.no_path")
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
    assert not saves and not written, say(
        "LivePlot() without a path saved its figure ({saved}): with path=None nothing is "
        "written; save only `if self.path is not None`", saved=saves or written)


@pytest.mark.audit("live.refused", observed=N_("whether LivePlot calls plt.show() or plt.pause()"))
def test_live_plot_never_shows_or_pauses(plotting):
    drive(plotting, make_history(prefix(VALUES, 3), SEED_KINDS, DEVICE))  # a blocking call raises in there


# Driving a LivePlot costs a redraw per epoch (about 30 ms of the learner's code, 75 ms a case): shorter runs than
# for plot_history, whose property check covers the kinds of entries over up to 30 epochs. Four epochs hold every
# case of an update: the first, one after a first entry of another kind, and the history growing.
@settings(max_examples=examples(case_seconds=0.075))
@given(drawn=histories(max_epochs=4, device=DEVICE))
@example(drawn=(prefix(VALUES, 2), make_history(prefix(VALUES, 2), SEED_KINDS, DEVICE)))
@example(drawn=(prefix(VALUES, 3), make_history(prefix(VALUES, 3), MIXED_KINDS, DEVICE, named=True)))
@pytest.mark.audit("live.curves")
def test_live_plot_follows_any_history(plotting, drawn):
    values, history = drawn

    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(values, epoch + 1), say(FIGURE_AFTER, who=who), live=True)

    drive(plotting, history, each=each)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
@pytest.mark.parametrize("kinds", [SEED_KINDS, "tensor", MIXED_KINDS],
                         ids=["the seed's history", "all device tensors", "mixed"])
@pytest.mark.audit("accelerator[{id}]")
def test_plot_history_draws_accelerator_tensors(plotting, accelerator, kinds):
    history = make_history(VALUES, kinds, accelerator)
    assert_curves(draw(plotting, history), VALUES,
                  say("plot_history(history) (a history holding tensors on {accelerator})", accelerator=accelerator))


@pytest.mark.cuda
@pytest.mark.audit("live.accelerator")
def test_live_plot_draws_accelerator_tensors(plotting, accelerator):
    def each(epoch, live, who):
        assert_curves(figure_of(live, who), prefix(VALUES, epoch + 1),
                      say("LivePlot.figure after {who} (accuracy entries are tensors on {accelerator})", who=who,
                          accelerator=accelerator), live=True)

    drive(plotting, make_history(prefix(VALUES, 3), SEED_KINDS, accelerator, named=True), each=each)
