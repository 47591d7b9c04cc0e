"""The book's plotting cell (Raschka et al., chapter 14) as `plot_history`, and the
learner's note's live plot as `LivePlot`.

Their own lines: the history's entries are plotted as they are (matplotlib
turns them into NumPy arrays: a tensor that requires grad is refused, and one on
an accelerator is the seed's crash), the figure is pyplot's, and the cell ends
with `plt.show()`, the live plot with `plt.pause(0.1)`: both wait.
"""

import matplotlib.pyplot as plt
import numpy as np


def plot_history(hist):
    x_arr = np.arange(len(hist[0])) + 1

    fig = plt.figure(figsize=(12, 4))
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(x_arr, hist[0], '-o', label='Train loss')
    ax.plot(x_arr, hist[1], '--<', label='Validation loss')
    ax.legend(fontsize=15)
    ax.set_xlabel('Epoch', size=15)
    ax.set_ylabel('Loss', size=15)

    ax = fig.add_subplot(1, 2, 2)
    ax.plot(x_arr, hist[2], '-o', label='Train acc.')
    ax.plot(x_arr, hist[3], '--<', label='Validation acc.')
    ax.legend(fontsize=15)
    ax.set_xlabel('Epoch', size=15)
    ax.set_ylabel('Accuracy', size=15)

    plt.show()
    return fig


class LivePlot:
    def __init__(self, path=None):
        self.path = path
        plt.ion()
        self.figure = plt.figure(figsize=(12, 4))
        self.ax1 = self.figure.add_subplot(1, 2, 1)
        self.ax2 = self.figure.add_subplot(1, 2, 2)

    def update(self, epoch, history):
        loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid = history
        ax1, ax2 = self.ax1, self.ax2
        ax1.clear()
        ax2.clear()
        x_arr = np.arange(len(loss_hist_train)) + 1
        ax1.plot(x_arr, loss_hist_train, '-o', label='Train loss')
        ax1.plot(x_arr, loss_hist_valid, '--<', label='Validation loss')
        ax1.set_xlabel('Epoch', size=15)
        ax1.set_ylabel('Loss', size=15)
        ax1.legend(fontsize=15)

        ax2.plot(x_arr, accuracy_hist_train, '-o', label='Train acc.')
        ax2.plot(x_arr, accuracy_hist_valid, '--<', label='Validation acc.')
        ax2.set_xlabel('Epoch', size=15)
        ax2.set_ylabel('Accuracy', size=15)
        ax2.legend(fontsize=15)

        if self.path is not None:
            self.figure.savefig(self.path)
        plt.draw()
        plt.pause(0.1)
