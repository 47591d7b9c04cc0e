"""Learning curves from any history (dataclasses, numbers)."""

import numbers
from dataclasses import dataclass, field

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _float(value) -> float:
    if isinstance(value, torch.Tensor):
        return float(value.detach().to("cpu").item())
    if isinstance(value, numbers.Real):
        return float(value)
    return float(value)


def _draw(fig, history):
    loss_train, loss_valid, acc_train, acc_valid = ([_float(v) for v in h] for h in history)
    epochs = list(range(1, len(loss_train) + 1))
    fig.clear()
    for column, (train, valid, what, train_label, valid_label) in enumerate((
            (loss_train, loss_valid, "Loss", "Train loss", "Validation loss"),
            (acc_train, acc_valid, "Accuracy", "Train acc.", "Validation acc."))):
        ax = fig.add_subplot(1, 2, column + 1)
        ax.plot(epochs, train, "-o", label=train_label)
        ax.plot(epochs, valid, "--<", label=valid_label)
        ax.legend(fontsize=15)
        ax.set_xlabel("Epoch", size=15)
        ax.set_ylabel(what, size=15)


def plot_history(history):
    fig = Figure(figsize=(12, 4))
    FigureCanvasAgg(fig)
    _draw(fig, history)
    return fig


@dataclass
class LivePlot:
    path: object = None
    figure: Figure = field(init=False)

    def __post_init__(self):
        self.figure = Figure(figsize=(12, 4))
        FigureCanvasAgg(self.figure)

    def update(self, epoch, history):
        _draw(self.figure, history)
        if self.path is not None:
            self.figure.savefig(self.path)
