"""Reference solution: learning curves that never touch a device tensor."""

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _host(value):
    """A history entry as a Python float, wherever it lived."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().item()
    return float(value)


def _draw(fig, hist):
    loss_train, loss_valid, acc_train, acc_valid = ([_host(v) for v in h] for h in hist)
    x_arr = np.arange(len(loss_train)) + 1
    fig.clear()
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(x_arr, loss_train, '-o', label='Train loss')
    ax.plot(x_arr, loss_valid, '--<', label='Validation loss')
    ax.legend(fontsize=15)
    ax.set_xlabel('Epoch', size=15)
    ax.set_ylabel('Loss', size=15)
    ax = fig.add_subplot(1, 2, 2)
    ax.plot(x_arr, acc_train, '-o', label='Train acc.')
    ax.plot(x_arr, acc_valid, '--<', label='Validation acc.')
    ax.legend(fontsize=15)
    ax.set_xlabel('Epoch', size=15)
    ax.set_ylabel('Accuracy', size=15)


def plot_history(history):
    # A Figure of its own (not pyplot's global state): nothing to show, nothing to block.
    fig = Figure(figsize=(12, 4), layout="tight")  # room for the axis labels
    FigureCanvasAgg(fig)
    _draw(fig, history)
    return fig


class LivePlot:
    def __init__(self, path=None):
        self.path = path
        self.figure = Figure(figsize=(12, 4), layout="tight")  # room for the axis labels
        FigureCanvasAgg(self.figure)

    def update(self, epoch, history):
        _draw(self.figure, history)  # clears the figure and draws both panels afresh
        if self.path is not None:
            self.figure.savefig(self.path)  # renders with Agg: no window, nothing blocks
