"""The kata's own reference pieces, which the checks compare learners' code with.

- the book's CNN (chapter 14), as a table of layers and as a model;
- the book's training loop, which calls `.item()` on every batch;
- a tiny deterministic setup (Flatten, Linear, Sigmoid: no dropout, so every run
  is the same) on tiny tensors, with a loader that marks its batches so a check
  can tell whether each one was moved, and a log of how each forward pass ran.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

# The book's layers, in order: (type, constructor arguments).
BOOK_LAYERS = [
    (nn.Conv2d, dict(in_channels=3, out_channels=32, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.MaxPool2d, dict(kernel_size=2)),
    (nn.Dropout, dict(p=0.5)),
    (nn.Conv2d, dict(in_channels=32, out_channels=64, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.MaxPool2d, dict(kernel_size=2)),
    (nn.Dropout, dict(p=0.5)),
    (nn.Conv2d, dict(in_channels=64, out_channels=128, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.MaxPool2d, dict(kernel_size=2)),
    (nn.Conv2d, dict(in_channels=128, out_channels=256, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.AvgPool2d, dict(kernel_size=8)),
    (nn.Flatten, {}),
    (nn.Linear, dict(in_features=256, out_features=1)),
    (nn.Sigmoid, {}),
]
BOOK_PARAMETERS = 388_673


def book_cnn() -> nn.Sequential:
    """The book's CNN, built from the table above (in the book's order)."""
    return nn.Sequential(*(cls(**kwargs) for cls, kwargs in BOOK_LAYERS))


N_TRAIN, N_VALID, BATCH = 10, 7, 4  # batches of 4, 4, 2 and 4, 3: per-sample and per-batch means differ


class HostBatch(torch.Tensor):
    """A batch as a loader hands it over. `.to(...)` returns a plain tensor, so a
    forward pass that still sees a HostBatch was given a batch never moved."""

    def to(self, *args, **kwargs):
        return torch.Tensor.to(self.as_subclass(torch.Tensor), *args, **kwargs)


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


class Log:
    """What each forward pass saw: (phase, model.training, grad enabled, batch moved)."""

    def __init__(self):
        self.phase = None
        self.calls = []

    def hook(self, module, args):
        self.calls.append((self.phase, module.training, torch.is_grad_enabled(), type(args[0]) is not HostBatch))


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 1), nn.Sigmoid())


def tiny_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, 4, 4, generator=g)
    y = (x[:, 0].mean(dim=(1, 2)) > 0.5).long()  # int64 labels, as CelebA's attributes are
    return x, y


def tiny_setup(n_train=N_TRAIN, n_valid=N_VALID, batch=BATCH, seed=0):
    log = Log()
    model = tiny_model(seed)
    model.register_forward_pre_hook(log.hook)
    train_dl = Loader(*tiny_data(n_train, seed + 1), batch, "train", log)
    valid_dl = Loader(*tiny_data(n_valid, seed + 2), batch, "valid", log)
    return model, train_dl, valid_dl, log


def book_epoch(model, dl, optimizer=None, loss_fn=nn.BCELoss(), zero_grad=True, device="cpu"):
    """One pass as the book writes it (`.item()` every batch); trains when given an optimizer."""
    total_loss = total_correct = 0.0
    for x, y in dl:
        x, y = x.as_subclass(torch.Tensor).to(device), y.as_subclass(torch.Tensor).to(device)
        pred = model(x)[:, 0]
        loss = loss_fn(pred, y.float())
        if optimizer is not None:
            loss.backward()
            optimizer.step()
            if zero_grad:
                optimizer.zero_grad()
        total_loss += loss.item() * y.size(0)
        total_correct += ((pred >= 0.5).float() == y).float().sum().item()
    return total_loss / len(dl.dataset), total_correct / len(dl.dataset)


def book_train(model, epochs, train_dl, valid_dl, lr=0.001, loss_fn=nn.BCELoss(), zero_grad=True):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = [[], [], [], []]
    for _ in range(epochs):
        model.train()
        loss, acc = book_epoch(model, train_dl, optimizer, loss_fn, zero_grad)
        model.eval()
        with torch.no_grad():
            valid_loss, valid_acc = book_epoch(model, valid_dl, loss_fn=loss_fn)
        for h, v in zip(history, (loss, valid_loss, acc, valid_acc)):
            h.append(v)
    return history


def replay(epochs=2, **kwargs):
    """The tiny setup trained by the book's algorithm: (model, history)."""
    model, train_dl, valid_dl, _ = tiny_setup()
    return model, book_train(model, epochs, train_dl, valid_dl, **kwargs)


def describe(value) -> str:
    """A value as a message should name it: 'a torch.Tensor on cuda:0 ...', 'a NumPy float64 ...'."""
    if isinstance(value, torch.Tensor):
        return (f"a torch.Tensor on {value.device}" + (" with requires_grad=True" if value.requires_grad else "")
                + f" ({value!r})")
    if isinstance(value, np.generic):
        return f"a NumPy {type(value).__name__} ({value!r})"
    return f"a {type(value).__name__} ({value!r})"


@contextlib.contextmanager
def explained_device_mismatch(what: str, advice: str):
    """Turn PyTorch's error for tensors of two devices meeting in one op into a
    check failure that says what mixed them and what to do.

    PyTorch's wording varies: "Expected all tensors to be on the same device ..."
    for most ops, "Input type (torch.FloatTensor) and weight type
    (torch.cuda.FloatTensor) should be the same ..." for a convolution on CUDA fed
    a CPU batch."""
    try:
        yield
    except RuntimeError as err:
        if "same device" not in str(err) and "should be the same" not in str(err):
            raise
        pytest.fail(f"{what} mixed devices: {err}\n  {advice}", pytrace=False)
