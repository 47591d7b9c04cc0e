"""Records of exercise 4, training: train and evaluate on the tiny setup of kata/records/doubles.py (its seed drawn):
the histories or measures they returned, the weights they left and where, the log of what the loop did."""

from __future__ import annotations

import contextlib

import torch
from hypothesis import strategies as st
from torch import nn

from kata.records import BEHAVIOUR, CONSTANT, PROPERTY, SHAPE, SOURCE, WORK, caught, context, record
from kata.records.declared import read
from kata.records.doubles import HalfModel, tiny_seeds, tiny_setup, with_weights

SIZES = st.tuples(st.integers(1, 12), st.integers(1, 5), st.integers(1, 3), st.integers(0, 99))  # n, batch, epochs
MEASURED = {"one epoch": dict(epochs=1), "three epochs": dict(epochs=3), "last validation": dict(epochs=2),
            "last validation, then evaluate": dict(epochs=2, evaluate=True), "one half": dict(epochs=1, half=True),
            "one half, then evaluate": dict(epochs=1, half=True, evaluate=True)}


def ran(training, seed, epochs=0, half=False, to="cpu", evaluate=False, **kwargs):
    """train on the tiny setup (its model moved ``to`` first), watched, then evaluate (its events alone logged)."""
    model, train_dl, valid_dl, log = tiny_setup(seed=seed, model=HalfModel() if half else None)
    model.to(to)
    with log.watching(model):
        found = {"history": training.train(model, epochs, train_dl, valid_dl, **kwargs)} if epochs else {}
        if evaluate or not epochs:
            log.events.clear()
            found["result"] = training.evaluate(model, valid_dl, **({} if epochs else kwargs))
    return with_weights(model, {**found, "log": log.data()})


@record(lambda draw: tiny_seeds(draw, *MEASURED, "evaluate"), rests=(WORK, BEHAVIOUR))
def measured(training, seed, kind):
    """train on the tiny setup for one, two or three epochs (of a model that says 0.5: one), then evaluate; evaluate"""
    return ran(training, seed, **MEASURED.get(kind, {}))


@record(lambda draw: tiny_seeds(draw, "two epochs", "device=None", "device=cpu", "on_epoch", "from meta"),
        rests=(SHAPE, PROPERTY, BEHAVIOUR))
def behaviour(training, seed, kind):
    """train on the tiny setup: 2 epochs, 1 (device=None, cpu), 3 with an on_epoch spy; 1 with .to spied, from meta"""
    if kind == "on_epoch":
        calls = []
        found = ran(training, seed, 3, on_epoch=lambda epoch, h: calls.append((epoch, [list(x) for x in h])))
        return {**found, "calls": calls}
    if kind != "from meta":
        return ran(training, seed, 2 if kind == "two epochs" else 1,
                   **({"device": torch.device("cpu")} if kind == "device=cpu" else {}))
    model, train_dl, valid_dl, _log = tiny_setup(seed=seed)
    model.to("meta")
    moves, Moved = [], type("Moved", (Exception,), {})   # the spy's stop: the move was asked for

    def spy(*args, **kwargs):
        moves.append(args or kwargs)
        raise Moved

    for method in ("to", "cpu"):
        setattr(model, method, spy)
    with contextlib.suppress(Exception):   # Moved, or the run failed before any move: the check says so
        training.train(model, 1, train_dl, valid_dl, device=torch.device("cpu"))
    return {"moved": bool(moves)}


@record(lambda draw: draw.examples(SIZES, explicit=[(9, 4, 1, 0)]), rests=(SHAPE, PROPERTY))   # a last batch of one
def any_sizes(training, n_train, batch, epochs, seed):
    """train on a tiny setup of drawn sizes (valid: half the training set), for one to three epochs"""
    model, train_dl, valid_dl, _log = tiny_setup(n_train=n_train, n_valid=max(1, n_train // 2), batch=batch, seed=seed)
    return training.train(model, epochs, train_dl, valid_dl)


@record(rests=SHAPE)
def on_celeba(training):
    """train the book's CNN one epoch on DataLoaders of the records' CelebA: one shuffled batch of 16 training images,
    16 others to validate (one batch shape: torch prepares its convolutions once per shape)"""
    from torch.utils.data import DataLoader, Subset
    from torchvision import transforms as T

    from kata.celeba import SMILING, CelebA

    train = CelebA(context().celeba, split="train", target_type="attr", target_transform=lambda attr: attr[SMILING],
                   transform=T.Compose([T.CenterCrop([178, 178]), T.Resize([64, 64]), T.ToTensor()]))
    torch.manual_seed(1)
    layers = []
    for ins, outs in ((3, 32), (32, 64), (64, 128)):
        layers += [nn.Conv2d(ins, outs, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(kernel_size=2)]
        layers += [nn.Dropout(p=0.5)] if outs < 128 else []
    net = nn.Sequential(*layers, nn.Conv2d(128, 256, kernel_size=3, padding=1), nn.ReLU(), nn.AvgPool2d(kernel_size=8),
                        nn.Flatten(), nn.Linear(256, 1), nn.Sigmoid())   # the book's CNN (kata/checks/book.py)
    return training.train(net, 1, DataLoader(Subset(train, range(16)), batch_size=16, shuffle=True),
                          DataLoader(Subset(train, range(16, 32)), batch_size=16))


@record(lambda draw: tiny_seeds(draw, "two epochs", "one epoch", "device=None"),
        rests=(SHAPE, CONSTANT, BEHAVIOUR), accelerator=True)
def on_accelerator(training, seed, kind):
    """train on the tiny setup with device=the accelerator, for two epochs or one; or of a model there, device=None"""
    return ran(training, seed, 1, to=context().accelerator) if kind == "device=None" else ran(
        training, seed, 2 if kind == "two epochs" else 1, device=context().accelerator)


@record(lambda draw: tiny_seeds(draw, "two epochs", "evaluate", "evaluate moves"), rests=(WORK, BEHAVIOUR),
        accelerator=True)
def measured_on_accelerator(training, seed, kind):
    """train two epochs, or evaluate, on the accelerator and on the CPU; evaluate(..., device) of a model on the CPU"""
    acc = context().accelerator
    if kind != "evaluate moves":
        on_both = dict(epochs=2) if kind == "two epochs" else {}
        return {"device": ran(training, seed, to="cpu" if on_both else acc, device=acc, **on_both),
                "cpu": ran(training, seed, **on_both)}
    model, _train_dl, valid_dl, log = tiny_setup(seed=seed)
    try:
        return with_weights(model, {"result": training.evaluate(model, valid_dl, device=acc), "log": log.data()})
    except (TypeError, RuntimeError, ValueError) as exc:   # what the check explains (PyTorch's device errors)
        if isinstance(exc, NotImplementedError) or {p.device.type for p in model.parameters()} == {acc.type}:
            raise
        return with_weights(model, {"result": None, "log": log.data(), "raised": caught(exc, training)})


@record(rests=SOURCE)
def declared(files):
    """What training.py (and the helpers beside it) declares, read from its source: its optimizers and losses"""
    return read(files, "training")
