"""Test doubles for the training checks: a tiny model and loaders that tell what happened.

A tiny deterministic setup (Flatten, Linear, Sigmoid: no dropout, so every run
is the same) on tiny tensors, with a loader that marks its batches so a check
can tell whether each one was moved, and a log of how each forward pass ran.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.data import TensorDataset

from kata.checks.book import book_train

__all__ = ["BATCH", "N_TRAIN", "N_VALID", "HostBatch", "Loader", "Log", "replay", "tiny_data", "tiny_model",
           "tiny_setup"]

N_TRAIN, N_VALID, BATCH = 10, 7, 4  # batches of 4, 4, 2 and 4, 3: per-sample and per-batch means differ


class HostBatch(torch.Tensor):
    """A batch as a loader hands it over. `.to(...)` returns a plain tensor, so a
    forward pass that still sees a HostBatch was given a batch never moved."""

    def to(self, *args, **kwargs):
        return torch.Tensor.to(self.as_subclass(torch.Tensor), *args, **kwargs)


class Log:
    """What each forward pass saw: (phase, model.training, grad enabled, batch moved)."""

    def __init__(self):
        self.phase = None
        self.calls = []

    def hook(self, module, args):
        self.calls.append((self.phase, module.training, torch.is_grad_enabled(), type(args[0]) is not HostBatch))


class Loader:
    """A DataLoader stand-in with fixed batches in a fixed order (`.dataset` and
    `len()` as a DataLoader has them). It tells `log` which phase is running."""

    def __init__(self, x, y, batch_size, phase, log):
        self.dataset = TensorDataset(x, y)
        self.x, self.y, self.batch_size, self.phase, self.log = x, y, batch_size, phase, log

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def __iter__(self):
        for i in range(0, len(self.x), self.batch_size):
            self.log.phase = self.phase
            yield (self.x[i:i + self.batch_size].as_subclass(HostBatch),
                   self.y[i:i + self.batch_size].as_subclass(HostBatch))


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 1), nn.Sigmoid())


def tiny_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, 4, 4, generator=g)
    y = (x[:, 0].mean(dim=(1, 2)) > 0.5).long()  # int64 labels, as CelebA's attributes are
    return x, y


def tiny_setup(n_train=N_TRAIN, n_valid=N_VALID, batch=BATCH, seed=0):
    """(model, train loader, valid loader, log): the model logs every forward pass."""
    log = Log()
    model = tiny_model(seed)
    model.register_forward_pre_hook(log.hook)
    train_dl = Loader(*tiny_data(n_train, seed + 1), batch, "train", log)
    valid_dl = Loader(*tiny_data(n_valid, seed + 2), batch, "valid", log)
    return model, train_dl, valid_dl, log


def replay(epochs=2, **kwargs):
    """The tiny setup trained by the book's algorithm: (model, history)."""
    model, train_dl, valid_dl, _ = tiny_setup()
    return model, book_train(model, epochs, train_dl, valid_dl, **kwargs)
