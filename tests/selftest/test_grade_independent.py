"""An independent correct implementation of the six exercises, for the grader's tests (no checks here).

Written afresh, in another style than the reference solutions: an
``OrderedDict`` for the CNN, a ``typing.NamedTuple`` history, ``math.fsum``,
``functools.singledispatch``, ``numbers``, a ``dataclass`` for the live plot,
``Mapping`` from ``collections.abc``. This is what an ordinary learner may
write: it passes every check (it scores 100 in a grading run) and the vetting
must never flag it.
"""

INDEPENDENT = {
    "devices": '''\
"""Where tensors live: an independent implementation (not the reference's)."""

from __future__ import annotations

import numbers
from collections import OrderedDict
from collections.abc import Mapping
from functools import singledispatch
from typing import Any

import numpy as np
import torch
from torch import nn


def pick_device() -> torch.device:
    for kind, available in (("cuda", torch.cuda.is_available), ("mps", torch.backends.mps.is_available)):
        if available():
            return torch.device(kind)
    return torch.device("cpu")


def device_of(obj: Any) -> torch.device | None:
    if isinstance(obj, torch.Tensor):
        return obj.device
    if isinstance(obj, nn.Module):
        first = next(iter(obj.parameters()), None)
        if first is None:
            first = next(iter(obj.buffers()), None)
        return None if first is None else first.device
    return None


def _is_named_tuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _map(obj: Any, leaf) -> Any:
    if isinstance(obj, Mapping):
        items = [(key, _map(value, leaf)) for key, value in obj.items()]
        if type(obj) is OrderedDict:
            return OrderedDict(items)
        try:
            rebuilt = obj.copy()
            rebuilt.clear()
            rebuilt.update(items)
            return rebuilt
        except (AttributeError, TypeError):
            return dict(items)
    if _is_named_tuple(obj):
        return type(obj)._make(_map(value, leaf) for value in obj)
    if isinstance(obj, tuple):
        return tuple(_map(value, leaf) for value in obj)
    if isinstance(obj, list):
        return [_map(value, leaf) for value in obj]
    return leaf(obj)


def to_device(obj: Any, device) -> Any:
    return _map(obj, lambda x: x.to(device) if isinstance(x, torch.Tensor) else x)


@singledispatch
def _plain(value):
    return value


@_plain.register
def _(value: torch.Tensor):
    host = value.detach().to("cpu")
    return host.item() if host.dim() == 0 else host.tolist()


@_plain.register
def _(value: np.generic):
    return value.item()


def to_python(obj: Any) -> Any:
    def leaf(x):
        out = _plain(x)
        if isinstance(out, numbers.Number) or not isinstance(x, (torch.Tensor, np.generic)):
            return out
        return out
    return _map(obj, leaf)


def host_copy(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().clone()
''',
    "data": '''\
"""CelebA smiles, written independently."""

import torchvision.transforms as T
from torch.utils.data import DataLoader, Subset

from kata.celeba import CelebA

SMILING = 31
CROP, SIZE = (178, 178), (64, 64)


def get_smile(attr):
    return attr[SMILING]


def train_transform():
    return T.Compose([T.RandomCrop(list(CROP)), T.RandomHorizontalFlip(), T.Resize(list(SIZE)), T.ToTensor()])


def eval_transform():
    return T.Compose([T.CenterCrop(list(CROP)), T.Resize(list(SIZE)), T.ToTensor()])


def _split(root, split, transform):
    return CelebA(root, split=split, target_type="attr", download=False, transform=transform,
                  target_transform=get_smile)


def _first(dataset, n, name):
    if n > len(dataset):
        raise ValueError(f"the {name} split has {len(dataset)} images, fewer than the {n} asked for")
    return Subset(dataset, list(range(n)))


def load_splits(root, n_train=16000, n_valid=1000):
    train = _first(_split(root, "train", train_transform()), n_train, "train")
    valid = _first(_split(root, "valid", eval_transform()), n_valid, "valid")
    test = _split(root, "test", eval_transform())
    return train, valid, test


def make_loaders(train, valid, test, batch_size=32):
    return tuple(DataLoader(ds, batch_size=batch_size, shuffle=(ds is train)) for ds in (train, valid, test))
''',
    "model": '''\
"""The book's CNN, with an OrderedDict."""

from collections import OrderedDict

from torch import nn


def _block(i, c_in, c_out, pool, dropout):
    layers = [(f"conv{i}", nn.Conv2d(c_in, c_out, kernel_size=3, padding=1)), (f"relu{i}", nn.ReLU()),
              (f"pool{i}", pool)]
    if dropout:
        layers.append((f"dropout{i}", nn.Dropout(p=0.5)))
    return layers


def build_model() -> nn.Sequential:
    layers = []
    layers += _block(1, 3, 32, nn.MaxPool2d(kernel_size=2), True)
    layers += _block(2, 32, 64, nn.MaxPool2d(kernel_size=2), True)
    layers += _block(3, 64, 128, nn.MaxPool2d(kernel_size=2), False)
    layers += _block(4, 128, 256, nn.AvgPool2d(kernel_size=8), False)
    layers += [("flatten", nn.Flatten()), ("fc", nn.Linear(256, 1)), ("sigmoid", nn.Sigmoid())]
    return nn.Sequential(OrderedDict(layers))
''',
    "training": '''\
"""The training loop, with a typing.NamedTuple and math.fsum."""

import math
from typing import NamedTuple

import torch
from torch import nn


class History(NamedTuple):
    loss_hist_train: list
    loss_hist_valid: list
    accuracy_hist_train: list
    accuracy_hist_valid: list


def _where(model, device):
    if device is None:
        for p in model.parameters():
            return p.device
        return torch.device("cpu")
    model.to(device)
    return torch.device(device)


def _epoch(model, dl, device, optimizer=None):
    loss_fn = nn.BCELoss()
    losses, hits = [], []
    for x, y in dl:
        x, y = x.to(device), y.to(device)
        pred = model(x)[:, 0]
        loss = loss_fn(pred, y.float())
        if optimizer is not None:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.item() * y.size(0))
        hits.append(((pred >= 0.5).float() == y).float().sum().item())
    n = len(dl.dataset)
    return math.fsum(losses) / n, math.fsum(hits) / n


def evaluate(model, dl, device=None):
    device = _where(model, device)
    model.eval()
    with torch.no_grad():
        return _epoch(model, dl, device)


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    device = _where(model, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    history = History([], [], [], [])
    for epoch in range(num_epochs):
        model.train()
        loss, acc = _epoch(model, train_dl, device, optimizer)
        history.loss_hist_train.append(loss)
        history.accuracy_hist_train.append(acc)
        valid_loss, valid_acc = evaluate(model, valid_dl, device)
        history.loss_hist_valid.append(valid_loss)
        history.accuracy_hist_valid.append(valid_acc)
        if on_epoch is not None:
            on_epoch(epoch, history)
    return history
''',
    "plotting": '''\
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
''',
    "sync": '''\
"""One training epoch with a single sync at the end."""

import torch


def train_epoch(model, dl, loss_fn, optimizer, device):
    model.train()
    totals = torch.zeros(2, device=device)
    for x, y in dl:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        pred = model(x)[:, 0]
        loss = loss_fn(pred, y.float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        totals += torch.stack([loss.detach() * y.size(0), ((pred >= 0.5).float() == y).sum().to(totals.dtype)])
    loss_sum, correct = totals.tolist()
    n = len(dl.dataset)
    return loss_sum / n, correct / n
''',
}
