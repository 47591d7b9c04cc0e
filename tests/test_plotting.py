"""Checks for exercise 5, plotting: learning curves from any history, without blocking.

The seed's crash happened here: the book's `ax.plot(x_arr, hist[2], ...)` with an accuracy history of GPU tensors.
matplotlib turns what it draws into NumPy arrays, and NumPy can only read host memory. The records
(records/plotting.py) draw histories of Python floats, NumPy scalars and 0-d tensors, each kind its own case (the
seed's: without grad, on the accelerator in the checks marked `cuda`; NumPy refuses tensors that require grad on any
device), read the figure back under the Agg backend, and refuse every call that would open a window and wait.

The book's figure: the loss on the left ('Train loss' '-o', 'Validation loss' '--<'), the accuracy on the right
('Train acc.', 'Validation acc.'), x = epochs 1..N, axis labels 'Epoch', 'Loss', 'Accuracy', a legend on each panel.
`LivePlot` redraws it after every epoch, as `train(..., on_epoch=live.update)` drives it.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import builtins
from pathlib import Path

import numpy as np
import pytest
import torch

from kata.checks.messages import NUMPY_LESSONS, fail_if, numpy_refusal
from kata.harness.tracebacks import Place
from kata.i18n import N_, _, say
from kata.records.history import History
from kata.records.snapshots import Change
from kata.records.strategies import make_history

PANELS = {"loss": ("Train loss", "Validation loss"), "accuracy": ("Train acc.", "Validation acc.")}
SIDE = {"loss": N_("left"), "accuracy": N_("right")}
PANEL_NAME = {"loss": N_("loss"), "accuracy": N_("accuracy")}   # the panels, as a message names them
Y_LABEL = {"loss": "Loss", "accuracy": "Accuracy"}
INDEX = {"Train loss": 0, "Validation loss": 1, "Train acc.": 2, "Validation acc.": 3}
LIST_NAME = [N_("history[0], the training loss"), N_("history[1], the validation loss"),
             N_("history[2], the training accuracy"), N_("history[3], the validation accuracy")]
# (linestyle, marker) as Line2D reports them, the format string that draws them, and the curves as a message names them.
STYLE = {"Train": ("-", "o", N_("'-o' (a solid line with circles)"), N_("train curves")),
         "Validation": ("--", "<", N_("'--<' (a dashed line with left-pointing triangles)"), N_("validation curves"))}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
AT = "at {where}: {source}"   # where_in's words (kata/checks/messages.py, translated there), for a place given as data


def kinds_in(history) -> str:
    """What each list of a history holds, in words."""
    def kind(v):
        if isinstance(v, torch.Tensor):
            template = (N_("{dims}-d {dtype} tensors on {device}, requires_grad=True") if v.requires_grad
                        else N_("{dims}-d {dtype} tensors on {device}"))
            return say(template, dims=v.dim(), dtype=str(v.dtype).removeprefix("torch."), device=v.device)
        if isinstance(v, np.generic):
            return say("NumPy {type} scalars", type=type(v).__name__)
        return say("Python {type}s", type=type(v).__name__)

    found = [_(" and ").join(dict.fromkeys(map(kind, lst))) or _("nothing") for lst in history]
    return "\n    ".join(f"{name.split(',')[0]}: {kinds}" for name, kinds in zip(LIST_NAME, found))


def epochs(n) -> str:
    return say("{n} epoch", n=n) if n == 1 else say("{n} epochs", n=n)


KEEP_REQUIRES_GRAD = N_(
    "the caller's tensors must keep requires_grad: .requires_grad_(False) and .detach_() change the tensor itself "
    "(and refuse to on a tensor computed from others). Use .detach(), which returns a new tensor and leaves the "
    "original alone (and .cpu() / .item() to get a host value)")
BY_POSITION = N_("the history is a tuple of four lists, (loss_train, loss_valid, acc_train, acc_valid): a plain tuple "
                 "or a named one, so read it by position (history[0], or unpack it), which works for both; a plain "
                 "tuple has no field names")
CRASHED = N_("{function} failed in your code, at the line below, and the check can't tell why from what it gave it "
             "(described below): read the error and the line")
SEEDS_CRASH_THERE = N_("  the same code hands NumPy the history's tensors as they are: on the accelerator {who} failed"
                       "{where}, and here NumPy refuses tensors that require grad too (.item() or float(t) converts "
                       "both)")
CRASH_DETAILS = N_("{cause}\n  {who} failed{where}\n  {error}\n  the history ({epochs}, a {kind}) holds\n    {holds}")
OPENS_A_WINDOW = N_("{who} called plt.show(block=False): it does not wait, but it opens a window of its own (a new one "
                    "at every epoch of a training run, where there is a display), and the plot must open none. Draw on "
                    "the Figure and hand it back (or save it with fig.savefig)")
WAITS = N_("{who} called {name}: that opens a window and waits (plt.pause for its interval, plt.show until the window "
           "is closed), so a training run would stall at every epoch and a test would hang. Draw on the Figure and "
           "hand it back (or save it with fig.savefig); never call plt.show() or plt.pause() in code that must not "
           "block")


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


def refusal_of(failed) -> str | None:
    """'device' or 'grad' where the learner's code failed (a record's found["failed"]) with NumPy refusing a tensor."""
    if failed is None or failed["blocked"]:
        return None
    return numpy_refusal(getattr(builtins, failed["base"])(failed["text"]))


def place_of(failed) -> str:
    at = failed["where"]   # [file, line, function, source]: the last frame in the learner's folder
    return say(AT, where=Place(Path(at[0]), *at[1:]).where, source=at[3]) if at else ""


def seeds_crash(plotting) -> str | None:
    """Where the same code met the seed's crash on the accelerator (NumPy refusing a device tensor): the line that
    says so under the seed's lesson, or None (it did not, or there is no accelerator)."""
    for record, who in (("plot_accelerator", "plot_history(history)"), ("live_accelerator", "LivePlot")):
        for case in plotting.cases(record):
            failed = None if case.raised is not None else case.answer["failed"]
            if refusal_of(failed) == "device":
                at, epoch = place_of(failed), failed.get("epoch")
                who = who if epoch is None else f"LivePlot.update({epoch}, history)"
                return say(SEEDS_CRASH_THERE, who=who, where=" " + at if at else "")
    return None


def crashed(found, who, history, plotting, sandbox="plot_history(history)"):
    """Fail as the learner's code did (found["failed"]), or for a refused call it carried on after (found["calls"]).
    A tensor that requires grad refused where the same code meets the seed's crash on the accelerator (``plotting``:
    its answers) reads as the seed's crash: one cause, the entries handed to NumPy as they are."""
    __tracebackhide__ = True
    failed = found["failed"]
    if failed is not None:
        line = place_of(failed)
        if failed["blocked"]:  # the refusal's message, and the line that called it
            template = OPENS_A_WINDOW if failed["blocked"] == "plt.show(block=False)" else WAITS
            raise AssertionError(say(template, who=sandbox, name=failed["blocked"]) + (f"\n  {line}" if line else ""))
        text, refusal = failed["text"], refusal_of(failed)
        if refusal == "grad" and (there := seeds_crash(plotting)):
            cause = _(NUMPY_LESSONS["device"]) + "\n" + there
        elif refusal is not None:
            cause = _(NUMPY_LESSONS[refusal])
        elif failed["base"] == "RuntimeError" and "requires_grad flags of leaf variables" in text:
            cause = _(KEEP_REQUIRES_GRAD)
        elif failed["base"] == "AttributeError" and "'tuple' object has no attribute" in text:
            cause = _(BY_POSITION)
        else:
            cause = say(CRASHED, function=who.split("(")[0])
        fail_if(say(CRASH_DETAILS, cause=cause, who=who, where=" " + line if line else "", kind=type(history).__name__,
                    error=failed["kind"] + ": " + text, epochs=epochs(len(history[0])), holds=kinds_in(history)))
    assert not found["calls"], say(
        "{who} called {names} (and carried on when it was refused): these calls open a window and wait; "
        "never call plt.show() or plt.pause() in code that must not block", who=sandbox,
        names=", ".join(sorted(set(found["calls"]))))


def assert_unchanged(found, history, who):
    """``found``: the first change a record saw in ``history`` (as the check drew it) while ``who`` ran."""
    __tracebackhide__ = True
    if found is None:
        return
    change = Change(found["path"], tuple(found["keys"]), found["kind"], found["before"], found["after"])
    if found["kind"] == "requires_grad":
        fail_if(_(KEEP_REQUIRES_GRAD) + "\n" + say("  {who} turned it off on {path}", who=who, path=found["path"]))
    if found["kind"] in ("values", "device"):
        pytest.fail(say("the caller's tensors must stay as they are: read the history, don't modify it (no in-place "
                        "op, one ending in _)\n  {who} changed a tensor of the caller's history in place ({found})",
                        who=who, found=change), pytrace=False)
    if found["keys"]:  # one of the four lists, or an entry of one
        i = found["keys"][0]
        was = say("{name} was {before} and is now {now}", name=_(LIST_NAME[i]), before=short(history[i]),
                  now=short(found["now"]))
    else:
        was = str(change)
    pytest.fail(say("the history belongs to the caller (train keeps appending to these very lists): read it, and "
                    "convert into a new list, e.g. [float(v) for v in hist[2]]; never assign into the caller's "
                    "lists\n  {who} changed the history it was given: {was}", who=who, was=was), pytrace=False)


def case_of(plotting, record, key):
    return next(case for case in plotting.cases(record) if case.args[0] == key)


def drawn(plotting, case, history=None):
    """A case of plot_history: (its values, its history, its answer), failing as the learner's code did."""
    __tracebackhide__ = True
    history = case.args[2] if history is None else history
    crashed(case.answer, "plot_history(history)", history, plotting)
    return case.args[1], history, case.answer


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


def is_a_figure(fig, who, live=False):
    __tracebackhide__ = True
    assert fig["class"] == "Figure", say(LIVE_FIGURE if live else RETURNS_FIGURE, who=who, kind=fig["class"])


def panels(fig, who, live=False):
    """(left axes, right axes) of a figure of two panels side by side."""
    __tracebackhide__ = True
    is_a_figure(fig, who, live)
    axes = fig["axes"]   # left to right
    if live and len(axes) > 2:
        pytest.fail(say("each update must replace the two panels, not add more: clear the figure first "
                        "(fig.clear()), or keep the two axes and update their lines\n"
                        "  {who} has {count} axes", who=who, count=len(axes)), pytrace=False)
    assert len(axes) == 2, say(
        "the book draws two panels side by side: fig.add_subplot(1, 2, 1) for the loss and "
        "fig.add_subplot(1, 2, 2) for the accuracy\n  {who} has {count} axes", who=who, count=len(axes))
    left, right = axes
    assert left["x1"] <= right["x0"] + 1e-6, say(
        "the two panels must be side by side, as the book has them: one row of two, fig.add_subplot(1, 2, 1) "
        "and fig.add_subplot(1, 2, 2)\n  the panels of {who} are one above the other, or they overlap", who=who)
    return left, right


def panel_order(fig, who, live=False):
    """(left axes, right axes), neither holding a curve of the other panel."""
    __tracebackhide__ = True
    axes = panels(fig, who, live)
    for ax, panel in zip(axes, PANELS):
        other = "accuracy" if panel == "loss" else "loss"
        strays = [label for label in PANELS[other] if label in {line["label"] for line in ax["lines"]}]
        assert not strays, say(
            "the book puts the loss on the left (fig.add_subplot(1, 2, 1)) and the accuracy on the right "
            "(fig.add_subplot(1, 2, 2))\n  the {side} panel of {who} holds {strays}", side=_(SIDE[panel]), who=who,
            strays=strays)
    return axes


def panel_lines(fig, who, live=False):
    """{label: line} for the four curves, each found once, in the right panel."""
    __tracebackhide__ = True
    found = {}
    for ax, (panel, labels) in zip(panel_order(fig, who, live), PANELS.items()):
        side, lines = SIDE[panel], {}
        for line in ax["lines"]:   # {label: [its lines]}
            lines.setdefault(line["label"], []).append(line)
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


def assert_curves(fig, values, who, live=False):
    """Each of the four curves holds its list of `values` at x = 1..N."""
    __tracebackhide__ = True
    n = len(values[0])
    for label, line in panel_lines(fig, who, live).items():
        panel = "loss" if "loss" in label else "accuracy"
        for axis, holds in zip("xy", line["tensors"]):
            assert not holds, say(
                "a plotted line holds tensors: matplotlib could read these CPU tensors, but not tensors on an "
                "accelerator (the seed's crash) nor ones that require grad. Convert each entry to a Python float "
                "before plotting: .item() or float(t)\n  the {panel} panel's {label!r} line in {who} holds "
                "tensors as its {axis} values", panel=_(PANEL_NAME[panel]), label=label, who=who, axis=axis)
        x, y = (np.asarray(line[axis], dtype=float).ravel() for axis in "xy")
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
            shows = [_(LIST_NAME[i]) for i, other in enumerate(values) if np.allclose(y, other, rtol=1e-6, atol=1e-12)]
            values_ = dict(label=label, who=who, got=short(y.tolist()), name=_(LIST_NAME[INDEX[label]]),
                           want=short(expected.tolist()))
            fail_if(say(CURVE_SHOWS_ANOTHER, other=shows[0], **values_) if shows else say(CURVE_VALUES, **values_))


# --- plot_history ------------------------------------------------------------


def book(plotting):
    """The figure of plot_history(history) of the book's five epochs of floats."""
    return drawn(plotting, case_of(plotting, "plot", "Python floats"))[2]["figure"]


def test_plot_history_returns_a_figure_with_two_panels_side_by_side(plotting):
    panels(book(plotting), "plot_history(history)")


def test_loss_is_on_the_left_and_accuracy_on_the_right(plotting):
    panel_lines(book(plotting), "plot_history(history)")


def test_each_line_holds_its_history_at_epochs_1_to_n(plotting):
    values, _history, found = drawn(plotting, case_of(plotting, "plot", "Python floats"))
    assert_curves(found["figure"], values, "plot_history(history)")


def test_train_lines_are_solid_with_circles_and_validation_dashed_with_triangles(plotting):
    for label, line in panel_lines(book(plotting), "plot_history(history)").items():
        linestyle, marker, fmt, curves = STYLE[label.split()[0]]
        assert (line["style"], line["marker"]) == (linestyle, marker), say(
            "the {label!r} line is drawn with linestyle {got_style!r} and marker {got_marker!r}; the book draws "
            "{curves} with {fmt}: ax.plot(x, y, {style!r}, label={label!r})", label=label, got_style=line["style"],
            got_marker=line["marker"], curves=_(curves), fmt=_(fmt), style=linestyle + marker)


def test_axes_are_labelled_epoch_loss_and_accuracy(plotting):
    fig = book(plotting)
    for ax, panel in zip(panels(fig, "plot_history(history)"), PANELS):
        if ax["ylabel"] != Y_LABEL[panel]:   # the panel's curves tell first whether the panels are swapped
            panel_order(fig, "plot_history(history)")
        assert ax["xlabel"] == "Epoch", say(
            "the {side} panel's x label is {label!r}; both panels say 'Epoch': ax.set_xlabel('Epoch') on each axes",
            side=_(SIDE[panel]), label=ax["xlabel"])
        assert ax["ylabel"] == Y_LABEL[panel], say(
            "the {side} panel's y label is {label!r}; the book's {side} panel shows the {panel}: "
            "ax.set_ylabel({want!r})", side=_(SIDE[panel]), label=ax["ylabel"], panel=_(PANEL_NAME[panel]),
            want=Y_LABEL[panel])


def test_each_panel_has_a_legend_naming_its_lines(plotting):
    fig = book(plotting)
    for ax, (panel, labels) in zip(panels(fig, "plot_history(history)"), PANELS.items()):
        texts = ax["legend"]
        if texts is not None and not set(labels) <= set(texts):   # a legend shows its lines' labels: those first
            panel_lines(fig, "plot_history(history)")
        assert texts is not None, say(
            "the {side} ({panel}) panel has no legend: call ax.legend() on each axes after its "
            "curves are drawn (plt.legend() reaches only the current axes, fig.legend() makes one for "
            "the whole figure)", side=_(SIDE[panel]), panel=_(PANEL_NAME[panel]))
        assert set(labels) <= set(texts), say(
            "the {panel} panel's legend reads {texts}, expected {labels}: label the curves as you "
            "plot them (label='...') and call ax.legend() after plotting them", panel=_(PANEL_NAME[panel]),
            texts=texts, labels=list(labels))


ENTRY_IDS = [N_("Python floats"), N_("NumPy float64 scalars"), N_("NumPy float32 scalars"), N_("0-d tensors"),
             N_("0-d float64 tensors"), N_("0-d tensors with requires_grad"), N_("0-d tensors with a grad_fn"),
             N_("the seed's: loss floats, accuracy tensors"), N_("a mix in each list")]   # the checks' ids too


@pytest.mark.parametrize("kinds", ENTRY_IDS, ids=ENTRY_IDS)
def test_plot_history_accepts_each_kind_of_entry(plotting, kinds):
    values, _history, found = drawn(plotting, case_of(plotting, "plot", kinds))
    assert_curves(found["figure"], values, say("plot_history(history) (a history of {what})", what=_(kinds)))


@pytest.mark.parametrize("named", [False, True], ids=["plain tuple", "named tuple"])
def test_plot_history_accepts_a_named_tuple_or_a_plain_tuple(plotting, named):
    values, _history, found = drawn(plotting, case_of(plotting, "plot", "named tuple" if named else "Python floats"))
    who = f"plot_history({'History(...)' if named else '(loss_train, loss_valid, acc_train, acc_valid)'})"
    assert_curves(found["figure"], values, who)


def test_plot_history_leaves_the_history_as_it_was(plotting):
    _values, history, found = drawn(plotting, case_of(plotting, "plot", "kept"))
    assert_unchanged(found["input"], history, "plot_history(history)")


def test_plot_history_never_shows_or_pauses_and_renders_with_agg(plotting):
    found = drawn(plotting, case_of(plotting, "plot", "render"))[2]  # a blocking call is refused in there
    is_a_figure(found["figure"], "plot_history(history)")   # what is not a Figure does not render as one
    if found["render"] is not None:
        error = f"{found['render']['kind']}: {found['render']['text']}"
        pytest.fail(say("the figure from plot_history must render with the Agg backend: draw host values (floats) "
                        "on a plain Figure\n  rendering it failed with {error}", error=error), pytrace=False)
    assert bytes(found["png"]) == PNG_MAGIC, _("the figure from plot_history did not render to a PNG")


def test_plot_history_draws_any_history(plotting):
    for case in plotting.cases("plot_any"):
        values, history, found = drawn(plotting, case)
        assert_curves(found["figure"], values, "plot_history(history)")
        assert_unchanged(found["input"], history, "plot_history(history)")


# --- LivePlot ------------------------------------------------------------------


def figure_of(step, who):
    __tracebackhide__ = True
    assert step["figure"] is not None, say(
        "a LivePlot keeps its figure in self.figure\n  it has no .figure after {who}", who=who)
    return step["figure"]


def updates(plotting, case, device=None):
    """Each update of a LivePlot driven as `train(..., on_epoch=live.update)` does: (epoch, what the record saw after
    it, who), once the history is found as it was; then how it failed, if it did."""
    __tracebackhide__ = True
    found, (_key, values, full) = case.answer, case.args
    full = full if device is None else make_history(values, full, device, named=True)
    for epoch, step in enumerate(found["steps"]):
        who = f"update({epoch}, history)"
        assert_unchanged(step["input"], [h[:epoch + 1] for h in full], f"LivePlot.{who}")
        yield epoch, step, who
    at = (found["failed"] or {}).get("epoch")
    lists = [list(h[:(at or 0) + 1]) for h in full]   # what the update that failed was handed
    handed = full if at is None else History(*lists) if isinstance(full, History) else tuple(lists)
    crashed(found, "LivePlot(...)" if at is None else f"LivePlot.update({at}, history)", handed, plotting, "LivePlot")


FIGURE_AFTER = N_("LivePlot.figure after {who}")


def followed(plotting, case, template=FIGURE_AFTER, device=None, **more):
    """Each update of a driven LivePlot draws the history so far."""
    __tracebackhide__ = True
    for epoch, step, who in updates(plotting, case, device):
        values = tuple(v[:epoch + 1] for v in case.args[1])
        assert_curves(figure_of(step, who), values, say(template, who=who, **more), live=True)


def test_live_plot_grows_one_point_per_epoch(plotting):
    followed(plotting, case_of(plotting, "live", "floats"))


def test_live_plot_draws_the_seeds_history_of_tensors(plotting):
    followed(plotting, case_of(plotting, "live", "seed, named"),
             N_("LivePlot.figure after {who} (accuracy entries are tensors)"))


def test_live_plot_keeps_one_figure(plotting):
    for epoch, step, who in updates(plotting, case_of(plotting, "live", "floats")):
        fig = figure_of(step, who)
        if epoch == 0:
            first = step["open"]
            continue
        assert step["same"], say(
            "a LivePlot makes its figure once, in __init__, and redraws that one in update (with a screen, a new "
            "figure is a new window every epoch)\n  LivePlot.figure is a new Figure after {who}", who=who)
        assert step["open"] <= first, say(
            "each plt.figure() / plt.subplots() stays open in pyplot (and in memory) until plt.close(): make the "
            "figure once and redraw it\n  {more} more pyplot figure(s) are open after {who} than after the first "
            "update", more=step["open"] - first, who=who)
        panels(fig, say(FIGURE_AFTER, who=who), live=True)


SAVED_BEHIND = N_("LivePlot.update saves the figure before drawing this epoch, so the PNG shows the curves one epoch "
                  "behind: draw both panels first, then save (self.figure.savefig(self.path))\n"
                  "  at {who}, the figure was saved when its longest line held {points} of the {epochs} points")


@pytest.mark.parametrize("how", ["keyword str", "positional Path"])
def test_live_plot_saves_a_png_at_every_epoch(plotting, how):
    case = case_of(plotting, "live", how)
    path = case.answer["path"]
    for epoch, step, who in updates(plotting, case):
        if step["saved"] and step["saved"][-1] < epoch + 1:   # the longest line's points at each savefig
            for line in [line for ax in (step["figure"] or {}).get("axes", []) for line in ax["lines"]]:
                assert len(line["y"]) >= epoch + 1, say(   # the figure itself behind: drawn one epoch behind
                    POINTS_SO_FAR, label=line["label"], points=len(line["y"]), epochs=epochs(epoch + 1),
                    who=say(FIGURE_AFTER, who=who))
            pytest.fail(say(SAVED_BEHIND, who=who, points=step["saved"][-1], epochs=epoch + 1), pytrace=False)
        png = step["png"]
        assert png is not None, say(
            "LivePlot(path) saves its figure at path at every update: self.figure.savefig(self.path)\n"
            "  after {who} there is no file at {path} (files there: {files})", who=who, path=path,
            files=step["files"])
        assert bytes(png["start"]) == PNG_MAGIC, say(
            "LivePlot(path) saves a PNG: fig.savefig(path) picks the format from the '.png' ending\n"
            "  the file saved at {path} after {who} starts with {start!r}", path=path, who=who,
            start=bytes(png["start"]))
        if isinstance(png["image"], str):
            pytest.fail(say("the saved PNG must be readable: save it with fig.savefig(path), and let savefig close "
                            "the file\n  the PNG saved after {who} can't be read back ({error})", who=who,
                            error=png["image"]), pytrace=False)
        width, height, darkest, lightest = png["image"]
        assert min(width, height) > 0 and darkest < lightest, say(
            "save after drawing (draw both panels, then self.figure.savefig(self.path)), so the file shows the "
            "curves so far\n  the PNG saved after {who} is blank", who=who)
        assert png["changed"], say(
            "save after redrawing, at every update, so the file always shows the curves so far\n"
            "  the PNG at {path} did not change at {who}", path=path, who=who)


def test_live_plot_without_a_path_writes_no_file(plotting):
    case = case_of(plotting, "live", "floats")
    list(updates(plotting, case))
    saves, written = case.answer["saves"], case.answer["written"]
    assert not saves and not written, say(
        "LivePlot() without a path saved its figure ({saved}): with path=None nothing is "
        "written; save only `if self.path is not None`", saved=saves or written)


def test_live_plot_never_shows_or_pauses(plotting):
    list(updates(plotting, case_of(plotting, "live", "seed")))  # a blocking call is refused in there


def test_live_plot_follows_any_history(plotting):
    for case in plotting.cases("live_any"):
        followed(plotting, case)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
@pytest.mark.parametrize("kinds", ["the seed's history", "all device tensors", "mixed"])
def test_plot_history_draws_accelerator_tensors(plotting, accelerator, kinds):
    case = case_of(plotting, "plot_accelerator", kinds)
    values, _history, found = drawn(plotting, case, make_history(case.args[1], case.args[2], accelerator))
    assert_curves(found["figure"], values,
                  say("plot_history(history) (a history holding tensors on {accelerator})", accelerator=accelerator))


@pytest.mark.cuda
def test_live_plot_draws_accelerator_tensors(plotting, accelerator):
    followed(plotting, plotting.cases("live_accelerator")[0], N_(
        "LivePlot.figure after {who} (accuracy entries are tensors on {accelerator})"), accelerator,
        accelerator=accelerator)
