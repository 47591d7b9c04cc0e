"""Exercise 5 · plotting: learning curves that never touch a device tensor.

The seed's crash happened here: the book's `ax.plot(x_arr, hist[2], ...)` with
an accuracy history of GPU tensors. matplotlib turns whatever it plots into
NumPy arrays, and NumPy can only read host memory (and refuses a tensor that
requires grad, too). The second fix of the seed's note is to convert while
plotting, so that any history can be drawn: Python floats, NumPy scalars, or
0-d tensors on any device, with or without `requires_grad`.

The book draws its curves live with pyplot's interactive mode, redrawing and
pausing after every epoch. Here nothing may block: the checks run with the
off-screen Agg backend, and a call that opens a window or waits fails them.

Run `pytest exercises/plotting.py` to check just this file, and `kata hint
plotting` (or `kata hint plotting FUNCTION`) when you are stuck.
"""

import numpy as np
import torch
from matplotlib.figure import Figure


def plot_history(history):
    """Draw the book's learning curves from `history`; return the figure.

    `history` is `(loss_train, loss_valid, acc_train, acc_valid)`, a plain
    tuple of four lists or a named tuple (what `train` returns), N entries
    each. An entry may be a Python float, a NumPy scalar, or a 0-d tensor on
    any device, with or without `requires_grad`; one list may mix them.

    Specification:
    - Return one `matplotlib.figure.Figure` with exactly two axes side by side
      (one row, two columns).
    - Left: the loss. 'Train loss' (history[0]) drawn as a solid line with
      circle markers, format '-o'; 'Validation loss' (history[1]) as a dashed
      line with left-pointing triangles, format '--<'.
    - Right: the accuracy. 'Train acc.' (history[2]) with '-o'; 'Validation
      acc.' (history[3]) with '--<'.
    - Each curve is drawn once, with its name (the quoted text above, exactly)
      as the line's label; x is the epoch number, counted from 1 (1..N); the
      y values are the entries, converted to plain numbers before they reach
      matplotlib (a line never holds a tensor).
    - Axis labels: 'Epoch' on both x axes, 'Loss' and 'Accuracy' on the y
      axes; a legend on each axes naming its two curves.
    - Read the history, never change it: it belongs to the caller (`train`
      keeps appending to these very lists). Don't assign into its lists, and
      don't change its tensors in place (not even their `requires_grad`).
    - Never block: no `plt.show()`, no `plt.pause()`, nothing that opens a
      window or waits; the figure must render with the Agg backend.
    - The layout is yours (not checked): the book's `figsize=(12, 4)` with
      matplotlib's default margins cuts the 'Epoch' labels off at the bottom
      of a saved PNG; `fig.tight_layout()` after drawing, or a figure made
      with `layout='constrained'`, makes every label fit.

    Concept: matplotlib can only draw host values; converting is the
    plotter's job when the history may hold anything.
    """
    raise NotImplementedError(
        "`plot_history` is not written yet: see its docstring, and `kata hint plotting plot_history`")


class LivePlot:
    """Learning curves redrawn after every epoch: `train(..., on_epoch=live.update)`.

    Specification:
    - `LivePlot(path=None)`; `path`, when given, is a `str` or a
      `pathlib.Path` of a PNG file.
    - `.figure` is its figure: one and the same `Figure` for the LivePlot's
      whole life, made when the LivePlot is made; updates open no other
      figures.
    - `update(epoch, history)` is called after every epoch with the 0-based
      epoch and the four lists so far (one entry longer each time; entries of
      any kind, as for `plot_history`). It redraws both panels exactly as
      `plot_history` draws them, with the whole history so far, replacing what
      the last update drew: after every update the figure has two axes and
      each curve once.
    - With a path, every update saves the figure there as a PNG, after
      drawing, so the file always shows the curves so far. Without a path,
      nothing is ever written.
    - It never blocks and never changes the history, as for `plot_history`.

    Concept: a live plot is one figure redrawn, not a new figure per epoch;
    and drawing must never stall the training that drives it.
    """

    def __init__(self, path=None):
        raise NotImplementedError(
            "`LivePlot.__init__` is not written yet: see the class's docstring, and `kata hint plotting LivePlot`")

    def update(self, epoch, history):
        raise NotImplementedError(
            "`LivePlot.update` is not written yet: see the class's docstring, and `kata hint plotting LivePlot`")
