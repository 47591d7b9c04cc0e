"""A learner's plots, from the stub's specification alone (issue #19): a dataclass LivePlot, a Figure's
own subplots, epochs as a range, float(t.detach().cpu()) entries, os.fspath for the path."""

import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from matplotlib.figure import Figure


def _as_float(value) -> float:
    if torch.is_tensor(value):
        return float(value.detach().cpu())
    return float(value)


def _draw(fig: Figure, history) -> None:
    train_loss, valid_loss, train_acc, valid_acc = ([_as_float(v) for v in h] for h in history)
    epochs = list(range(1, len(train_loss) + 1))
    fig.clf()
    loss_ax, acc_ax = fig.subplots(nrows=1, ncols=2)
    loss_ax.plot(epochs, train_loss, "-o", label="Train loss")
    loss_ax.plot(epochs, valid_loss, "--<", label="Validation loss")
    loss_ax.set(xlabel="Epoch", ylabel="Loss")
    loss_ax.legend()
    acc_ax.plot(epochs, train_acc, "-o", label="Train acc.")
    acc_ax.plot(epochs, valid_acc, "--<", label="Validation acc.")
    acc_ax.set(xlabel="Epoch", ylabel="Accuracy")
    acc_ax.legend()


def plot_history(history) -> Figure:
    fig = Figure(figsize=(12, 4), layout="constrained")
    _draw(fig, history)
    return fig


@dataclass
class LivePlot:
    path: str | Path | None = None
    figure: Figure = field(init=False)

    def __post_init__(self):
        self.figure = Figure(figsize=(12, 4), layout="constrained")

    def update(self, epoch: int, history) -> None:
        _draw(self.figure, history)
        if self.path is not None:
            self.figure.savefig(os.fspath(self.path), format="png")
