"""Exercise 4 · training: the book's loop, with histories of plain Python floats.

This is where the seed's bug was born: `accuracy_hist_train[epoch] +=
is_correct.sum()` adds a GPU tensor to the history, while `loss.item()` adds a
Python float. Training works either way; plotting crashes later. Convert while
training, with `.item()`, and every history entry is a host float.

Run `pytest exercises/training.py` to check just this file.
"""

import torch
from torch import nn


def evaluate(model, dl, device=None):
    """Return `(loss, accuracy)` of `model` over the loader `dl`, as Python floats.

    - `device=None`: use the model's own device (that of its first parameter);
      otherwise move the model there (`model.to(device)` moves it in place).
    - `model.eval()` and `torch.no_grad()`: no dropout, no autograd history.
    - loss: `nn.BCELoss()` of `model(x)[:, 0]` against `y.float()`, weighted by
      batch size and divided by the number of samples (`len(dl.dataset)`), so a
      small last batch counts as little as it should.
    - accuracy: the share of predictions `pred >= 0.5` that match the label.
    """
    raise NotImplementedError("loop over dl in eval mode under torch.no_grad(); return (mean loss, accuracy) as floats")


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    """Train `model` as the book does; return the four histories
    `(loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid)`,
    each a list of `num_epochs` Python floats (a named tuple is welcome).

    - `device=None`: the model's own device; else move the model there in place
      (the caller's model object is the one that gets trained).
    - `nn.BCELoss()`, `torch.optim.Adam(model.parameters(), lr=0.001)`.
    - Each epoch: `model.train()`; per batch move x and y to the device
      (`x = x.to(device)`: the result must be kept), forward, loss, backward,
      step, zero the gradients; add `loss.item() * batch_size` and the number of
      correct predictions (`.sum().item()`) to the epoch's totals; divide by the
      dataset size at the end. Then validate like `evaluate`.
    - After each epoch call `on_epoch(epoch, history)` if given, with the 0-based
      epoch and the four lists so far.
    """
    raise NotImplementedError("write the book's training loop; keep every history entry a Python float (.item())")
