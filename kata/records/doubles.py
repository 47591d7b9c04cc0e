"""Test doubles for the training checks: a tiny model and loaders that tell what happened.

A tiny deterministic setup (Flatten, Linear, Sigmoid: no dropout, so every run
is the same) on tiny tensors, with a loader that marks its batches so a check
can tell whether each one was moved, and a log of what the loop did: how each
forward pass ran and what it gave, and (while :meth:`Log.watching`) every
backward pass, optimizer step and zeroing of the gradients, in order.

The hooks are plain functions, not bound methods, so a ``copy.deepcopy`` of the
model (a learner's mistake) reports to the same log.
"""

from __future__ import annotations

import collections
import contextlib
import math
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils.data import TensorDataset

from kata.records.history import HISTORY, History

__all__ = ["BATCH", "MORE", "N_TRAIN", "N_VALID", "Event", "HalfModel", "HostBatch", "Loader", "Log",
           "fixed_batches", "graphs_held", "history_of", "host", "locals_at_return", "replay",
           "tiny_data", "tiny_model", "tiny_run", "tiny_seeds", "tiny_setup", "train_batches", "watch_model",
           "with_weights"]

N_TRAIN, N_VALID, BATCH = 10, 7, 4  # batches of 4, 4, 2 and 4, 3: per-sample and per-batch means differ
MORE = 2   # the epochs a tiny run resumed from a checkpoint trains on (the checkpoint's records and checks)


class HostBatch(torch.Tensor):
    """A batch as a loader hands it over. `.to(...)` returns a plain tensor, so a
    forward pass that still sees a HostBatch was given a batch never moved."""

    def to(self, *args, **kwargs):
        return torch.Tensor.to(self.as_subclass(torch.Tensor), *args, **kwargs)


@dataclass(frozen=True)
class Event:
    """One thing the loop did. kind: 'forward' (phase, output, labels, grad enabled), 'backward' (the loss),
    'step' (the optimizer's class name, its lr, whether it steps the watched model's parameters)
    or 'zero_grad'. Tensors are kept where they were (no copy to the host: no sync)."""

    kind: str
    phase: str | None = None
    output: Any = None
    labels: Any = None
    loss: Any = None
    optimizer: str = ""
    lr: float | None = None
    own: bool = True
    grad: bool = True
    optimizer_id: int = 0


class Log:
    """What each forward pass saw: (phase, model.training, grad enabled, batch moved), and the events."""

    def __init__(self):
        self.phase = None
        self.labels = None      # the labels of the batch the loader handed over last
        self.calls = []
        self.events: list[Event] = []

    def forwards(self, phase: str) -> list[Event]:
        return [e for e in self.events if e.kind == "forward" and e.phase == phase]

    def data(self) -> dict:
        """The log as plain data for a record's answer (its tensors copied to the host), :meth:`of`'s input."""
        return {"calls": list(self.calls), "events": [{f.name: host(getattr(e, f.name)) for f in fields(e)}
                                                      for e in self.events]}

    @classmethod
    def of(cls, data: dict) -> Log:
        """The log that :meth:`data` described."""
        log = cls()
        log.calls, log.events = [tuple(c) for c in data["calls"]], [Event(**e) for e in data["events"]]
        return log

    @contextlib.contextmanager
    def watching(self, model: nn.Module):
        """Record every backward pass, optimizer step and zero_grad while the block runs;
        a step's `own` says whether it updates the parameters ``model`` has at that moment."""
        events = self.events
        original_backward = torch.autograd.backward
        original_zero = torch.optim.Optimizer.zero_grad
        original_module_zero = nn.Module.zero_grad

        def backward(tensors, *args, **kwargs):
            loss = tensors[0] if isinstance(tensors, (tuple, list)) and tensors else tensors
            events.append(Event("backward", self.phase,
                                loss=loss.detach().clone() if isinstance(loss, torch.Tensor) else loss))
            return original_backward(tensors, *args, **kwargs)

        def zero_grad(optimizer, *args, **kwargs):
            events.append(Event("zero_grad", self.phase))
            return original_zero(optimizer, *args, **kwargs)

        def module_zero_grad(module, *args, **kwargs):
            events.append(Event("zero_grad", self.phase))
            return original_module_zero(module, *args, **kwargs)

        def step(optimizer, args, kwargs):
            mine = {id(p) for p in model.parameters()}
            stepped = [p for group in optimizer.param_groups for p in group["params"]]
            lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
            events.append(Event("step", self.phase, optimizer=type(optimizer).__name__,
                                lr=float(lr) if isinstance(lr, (int, float)) else None,
                                own=any(id(p) in mine for p in stepped), optimizer_id=id(optimizer)))

        handle = register_optimizer_step_pre_hook(step)
        torch.autograd.backward = backward
        torch.optim.Optimizer.zero_grad = zero_grad
        nn.Module.zero_grad = module_zero_grad
        try:
            yield self
        finally:
            handle.remove()
            torch.autograd.backward = original_backward
            torch.optim.Optimizer.zero_grad = original_zero
            nn.Module.zero_grad = original_module_zero


def host(t):
    """A plain CPU copy of tensor ``t``, wherever it lives (anything else as it is)."""
    if not isinstance(t, torch.Tensor):
        return t
    return torch.empty(t.shape, dtype=t.dtype).copy_(t.detach()).as_subclass(torch.Tensor)


def with_weights(model: nn.Module, found: dict) -> dict:
    """A record's ``found``, with the weights ``model`` holds now (on the host) and the devices they are on."""
    return {**found, "after": [host(p) for p in model.parameters()],
            "devices": sorted({p.device.type for p in model.parameters()})}


def watch_model(model: nn.Module, log: Log) -> nn.Module:
    """Hook ``model`` so that every forward pass is logged: how it ran, and what it gave."""

    def before(module, args):
        log.calls.append((log.phase, module.training, torch.is_grad_enabled(), type(args[0]) is not HostBatch))

    def after(module, args, output):
        kept = output.detach().clone() if isinstance(output, torch.Tensor) else output
        log.events.append(Event("forward", log.phase, output=kept, labels=log.labels, grad=torch.is_grad_enabled()))

    model.register_forward_pre_hook(before)
    model.register_forward_hook(after)
    return model


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
            self.log.labels = self.y[i:i + self.batch_size]
            yield (self.x[i:i + self.batch_size].as_subclass(HostBatch),
                   self.y[i:i + self.batch_size].as_subclass(HostBatch))


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 1), nn.Sigmoid())


class HalfModel(nn.Module):
    """Says 0.5, exactly, for every image, however it is trained: its one weight gets a zero
    gradient (0 * x), so Adam never moves it. The probability at the threshold."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(3 * 4 * 4, 1))

    def forward(self, x):
        return 0.5 + 0.0 * (x.flatten(1) @ self.weight)


def tiny_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, 4, 4, generator=g)
    y = (x[:, 0].mean(dim=(1, 2)) > 0.5).long()  # int64 labels, as CelebA's attributes are
    return x, y


def fixed_batches(n=N_TRAIN, batch=BATCH, seed=1) -> list:
    """The tiny data as a list of (x, y) CPU batches, in a fixed order: an epoch that is the same every time."""
    x, y = tiny_data(n, seed)
    return [(x[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]


def train_batches(model, optimizer, batches, epochs=1, device=None) -> None:
    """The book's training steps over ``batches`` for ``epochs`` epochs (per batch: forward, BCELoss,
    backward, step, zero_grad), each batch moved to ``device`` (default: the CPU)."""
    loss_fn = nn.BCELoss()
    model.train()
    for _ in range(epochs):
        for x, y in batches:
            x, y = x.to(device or "cpu"), y.to(device or "cpu")
            loss = loss_fn(model(x)[:, 0], y.float())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


def tiny_run(seed=0, epochs=3, device=None):
    """The tiny model (of ``seed``) on ``device`` and its Adam (lr=0.001), trained ``epochs`` epochs (fixed_batches)."""
    model = tiny_model(seed).to(device or "cpu")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    train_batches(model, optimizer, fixed_batches(), epochs, device)
    return model, optimizer


def history_of(kind: str, device=None) -> History:
    """HISTORY with its entries of one kind, as a train may give them: floats, 0-d tensors (on ``device``), tensors
    that require grad, NumPy scalars; or the seed's train's ("seed"): losses as floats, accuracies on ``device``."""
    import numpy as np

    make = {"floats": float, "cpu_tensors": lambda v: torch.tensor(v, device=device), "numpy": np.float64,
            "grad_tensors": lambda v: torch.tensor(v, requires_grad=True) * 1.0,
            "seed": lambda v: torch.tensor(v, device=device)}[kind]
    return History(*[h if kind == "seed" and i < 2 else [make(v) for v in h] for i, h in enumerate(HISTORY)])


def tiny_setup(n_train=N_TRAIN, n_valid=N_VALID, batch=BATCH, seed=0, model=None):
    """(model, train loader, valid loader, log): the model logs every forward pass."""
    log = Log()
    model = watch_model(tiny_model(seed) if model is None else model, log)
    train_dl = Loader(*tiny_data(n_train, seed + 1), batch, "train", log)
    valid_dl = Loader(*tiny_data(n_valid, seed + 2), batch, "valid", log)
    return model, train_dl, valid_dl, log


def tiny_seeds(draw, *kinds) -> list:
    """A seed of the tiny setup, drawn by a record's ``draw`` (one whose training labels are not half ones: a
    probability of 0.5 taken for a 0 would score the same as one taken for a 1), with each of ``kinds``."""
    seed = draw.int(0, 9999)
    while tiny_data(N_TRAIN, seed + 1)[1].float().mean().item() == 0.5:
        seed = draw.int(0, 9999)
    return [(seed, kind) for kind in kinds] or [seed]


def replay(epochs=2, seed=0, **kwargs):
    """The tiny setup (of ``seed``) trained by the book's algorithm: (model, history)."""
    from kata.checks.book import book_train  # here: the doubles alone import no torchvision (a fresh process's)

    model, train_dl, valid_dl, _ = tiny_setup(seed=seed)
    return model, book_train(model, epochs, train_dl, valid_dl, **kwargs)


# --- autograd graphs kept alive by the learner's running sums -----------------------

@contextlib.contextmanager
def locals_at_return(folder):
    """While the block runs, keep the local variables of every function of the learner's (a file
    under ``folder``) as it returns: {function name: {variable: value}} (the last call of each)."""
    root = Path(folder).resolve()
    captured: dict[str, dict] = {}
    previous = sys.getprofile()
    mine: dict[str, bool] = {}

    def profile(frame, event, arg):
        if event == "return":
            file = frame.f_code.co_filename
            if file not in mine:
                path = Path(file).resolve()
                mine[file] = path == root or path.is_relative_to(root)
            if mine[file]:
                captured[frame.f_code.co_name] = dict(frame.f_locals)
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(profile)
    try:
        yield captured
    finally:
        sys.setprofile(previous)


def _graphs(value, seen: set[int], depth: int = 0) -> int:
    """How many batches' losses (nn.BCELoss nodes) the autograd graph of ``value`` reaches: a tensor, or
    any container of them a learner may keep running sums in (a list, tuple, set, dict, deque, or an object's
    attributes: a dataclass, a SimpleNamespace, a class of their own), a few levels deep."""
    if not isinstance(value, torch.Tensor):
        if depth > 4 or id(value) in seen or isinstance(value, (str, bytes, int, float, bool, type(None))):
            return 0
        seen.add(id(value))
        if isinstance(value, Mapping):
            items = [*value.keys(), *value.values()]
        elif isinstance(value, (list, tuple, set, frozenset, collections.deque)):
            items = list(value)
        elif isinstance(getattr(value, "__dict__", None), dict) and not isinstance(
                value, (types.ModuleType, types.FunctionType, types.MethodType, type, nn.Module)):
            items = list(vars(value).values())
        else:
            return 0
        return sum(_graphs(v, seen, depth + 1) for v in items)
    if value.grad_fn is None:
        return 0
    found, todo = 0, [value.grad_fn]
    while todo and len(seen) < 100_000:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        found += "BinaryCrossEntropy" in type(node).__name__
        todo.extend(next_node for next_node, _ in getattr(node, "next_functions", ()))
    return found


def graphs_held(captured: dict[str, dict]) -> dict[str, dict[str, int]]:
    """For each function of :func:`locals_at_return`, its variables that reach batches' losses: how many."""
    found = {function: {name: _graphs(value, set()) for name, value in names.items()}
             for function, names in captured.items()}
    return {function: {n: g for n, g in names.items() if g} for function, names in found.items() if any(names.values())}
