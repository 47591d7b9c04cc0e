"""A third independent implementation, in today's idioms: plotting."""

import matplotlib.pyplot as plt


def _f(values):
    return [float(v) for v in values]


def _panels(axes, history):
    lt, lv, at, av = (_f(h) for h in history)
    xs = range(1, len(lt) + 1)
    axes[0].plot(xs, lt, "-o", label="Train loss")
    axes[0].plot(xs, lv, "--<", label="Validation loss")
    axes[0].set_xlabel("Epoch")
    axes[0].set_ylabel("Loss")
    axes[0].legend()
    axes[1].plot(xs, at, "-o", label="Train acc.")
    axes[1].plot(xs, av, "--<", label="Validation acc.")
    axes[1].set_xlabel("Epoch")
    axes[1].set_ylabel("Accuracy")
    axes[1].legend()


def plot_history(history):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    _panels(axes, history)
    return fig


class LivePlot:
    def __init__(self, path=None):
        self.path = path
        self.figure, self.axes = plt.subplots(1, 2, figsize=(12, 4))

    def update(self, epoch, history):
        for ax in self.axes:
            ax.cla()
        _panels(self.axes, history)
        self.figure.canvas.draw_idle()
        if self.path:
            self.figure.savefig(self.path)
