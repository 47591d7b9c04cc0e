"""More of a learner's plots (issue #19): pyplot's figure made once and closed from pyplot's list, a
NumPy array of host floats, one loop over the panels, Figure.savefig with a pathlib.Path."""

import matplotlib.pyplot as plt
import numpy as np
import torch

PANELS = ((0, 1, "Loss", ("Train loss", "Validation loss")), (2, 3, "Accuracy", ("Train acc.", "Validation acc.")))


def _host(entries):
    return np.array([v.detach().cpu().item() if isinstance(v, torch.Tensor) else float(v) for v in entries])


def _draw(fig, history):
    fig.clear()
    axes = fig.subplots(1, 2)
    x = np.arange(1, len(history[0]) + 1)
    for ax, (train_i, valid_i, ylabel, (train_label, valid_label)) in zip(axes, PANELS):
        ax.plot(x, _host(history[train_i]), "-o", label=train_label)
        ax.plot(x, _host(history[valid_i]), "--<", label=valid_label)
        ax.set_xlabel("Epoch")
        ax.set_ylabel(ylabel)
        ax.legend()


def plot_history(history):
    fig = plt.figure(figsize=(12, 4))
    plt.close(fig)   # drawn and returned, never shown: pyplot forgets it
    _draw(fig, history)
    return fig


class LivePlot:
    def __init__(self, path=None):
        self.path = path
        self.figure = plt.figure(figsize=(12, 4))
        plt.close(self.figure)

    def update(self, epoch, history):
        _draw(self.figure, history)
        if self.path:
            self.figure.savefig(self.path)
