"""Exercise 5 · plotting: learning curves that never touch a device tensor.

The seed's crash happened here: `ax.plot(x_arr, hist[2])` with a history of
GPU tensors. matplotlib turns what it plots into NumPy arrays, and NumPy can
only read host memory (and refuses a tensor that requires grad). The second
fix is to convert while plotting, so any history can be drawn: floats, NumPy
scalars, or 0-d tensors on any device, with or without `requires_grad`.

Run `pytest exercises/plotting.py` to check just this file.
"""

import numpy as np
import torch
from matplotlib.figure import Figure


def plot_history(history):
    """Draw the four histories `(loss_train, loss_valid, acc_train, acc_valid)`
    as the book does and return the `matplotlib.figure.Figure`.

    `history` is a plain tuple of four lists or a named tuple (what `train`
    returns); each entry may be a Python float, a NumPy scalar or a 0-d tensor
    on any device, with or without `requires_grad`, and the lists may mix them.
    Read the history, never change it: it belongs to the caller (don't assign
    into its lists, don't `.detach_()` its tensors).

    One figure, two axes side by side: on the left the loss ('Train loss' with
    '-o', 'Validation loss' with '--<'), on the right the accuracy ('Train acc.'
    '-o', 'Validation acc.' '--<'); each curve gets its name as the line's
    label (`ax.plot(..., label='Train loss')`); x is the epoch, 1..N; axis
    labels 'Epoch', 'Loss', 'Accuracy'; a legend on each axes (`ax.legend()`).

    Never call `plt.show()` or `plt.pause()`: this must work with the Agg backend
    and never block. Hint: `Figure(figsize=(12, 4))` and `fig.add_subplot(1, 2, 1)`;
    turn each entry into a float first (`.detach().cpu().item()` for a tensor).
    """
    raise NotImplementedError("convert every history entry to a float, then draw the book's two panels")


class LivePlot:
    """A figure redrawn after each epoch: `train(..., on_epoch=live.update)`.

    `LivePlot(path=None)`; `.figure` is its figure, one and the same for its
    whole life (make it in `__init__`). `update(epoch, history)` is called
    after every epoch with the 0-based epoch and the four lists so far (one
    entry longer each time): it redraws both panels exactly as `plot_history`
    draws them, replacing what the last update drew (`fig.clear()`), without
    blocking, and saves the figure as a PNG to `path` after drawing, at every
    update, when a path was given (a `str` or a `pathlib.Path`). Without a path
    it writes no file at all.
    """

    def __init__(self, path=None):
        raise NotImplementedError("keep the path and make the figure")

    def update(self, epoch, history):
        raise NotImplementedError("redraw both panels with the history so far; save to self.path if given")
