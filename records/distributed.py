"""Records of exercise 8, distributed: the learner's functions on two real ranks (kata/records/ranks.py: forked
processes in a gloo process group over loopback, forked in a laptop of kata/records/elsewhere.py, a process that
never trained), each rank's answer as data: the indices each rank's loaders
gave; two epochs of run_epoch on the tiny setup of kata/records/doubles.py under DistributedDataParallel, with
every call of the loss function (its predictions, labels and whether gradients were on) and the weights after;
the host's syncs of an epoch on the simulated accelerator; and a checkpoint saved by the ranks, read back as a
stranger reads it and loaded by the ranks and by one plain process.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset

from kata.records import BEHAVIOUR, SHAPE, WORK, caught, context, record
from kata.records.doubles import host, tiny_data, tiny_model
from kata.records.elsewhere import NotRun, open_elsewhere
from kata.records.ranks import WORLD, RankFailed, as_data, from_data, on_ranks

N_VALID = 5   # 3 images on rank 0 and 2 on rank 1: padding repeats one, and a mean of the two means is not the mean
SYNC_BATCHES = 6   # the training batches of each rank in the epoch whose syncs are counted


class Seen(Dataset):
    """The tiny data, telling which items were read, in order."""

    def __init__(self, n: int, seed: int):
        self.x, self.y = tiny_data(n, seed)
        self.read: list[int] = []

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        self.read.append(int(i))
        return self.x[i], self.y[i]


class Epochs(DistributedSampler):
    """The reference's training sampler, telling which epochs it was given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.given: list = []

    def set_epoch(self, epoch):
        self.given.append(epoch if isinstance(epoch, int) else repr(epoch))
        super().set_epoch(epoch)


class Loss(nn.BCELoss):
    """BCELoss, keeping every call's predictions and labels (where they are: no copy, no sync) and whether
    gradients were on."""

    def __init__(self):
        super().__init__()
        self.calls: list = []

    def forward(self, pred, target):
        self.calls.append((pred.detach(), target.detach(), torch.is_grad_enabled()))
        return super().forward(pred, target)

    def data(self) -> list:
        return [{"pred": host(p), "target": host(t), "grad": g} for p, t, g in self.calls]


def loaders(rank, seed, n_train, n_valid, batch):
    """The reference's loaders of ``rank`` on the tiny data (not the learner's: run_epoch's checks stand alone)."""
    train, valid = Seen(n_train, seed + 1), Seen(n_valid, seed + 2)
    sampler = Epochs(train, num_replicas=WORLD, rank=rank, shuffle=True)
    return (DataLoader(train, batch_size=batch, sampler=sampler),
            DataLoader(Subset(valid, range(rank, n_valid, WORLD)), batch_size=batch))


def seeds(draw) -> list:
    return [draw.int(0, 9999)]


def plain(value, depth: int = 0):
    """A value as a laptop's file holds it (read with weights_only=True): numbers, strings, tensors on the host, and
    lists, tuples and dicts of them; anything else by its class and repr."""
    if isinstance(value, torch.Tensor):
        return host(value)
    if value is None or type(value) in (int, float, bool, str):
        return value
    if isinstance(value, (list, tuple)) and depth < 6:
        items = [plain(v, depth + 1) for v in value]
        return items if type(value) is list else tuple(items)
    if isinstance(value, dict) and depth < 6:
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    return {"class": type(value).__name__, "repr": repr(value)[:200]}


def ranked(function: str, distributed, **args):
    """``function(distributed, **args)`` (the name of a function of this module, which runs :func:`on_ranks`) in a
    laptop: its answer; a rank's error raised here as the rank met it."""
    file = getattr(distributed.run_epoch, "__globals__", {}).get("__file__")
    if not file:
        raise NotRun("the distributed checks run your module in processes of their own, which need it in a file: "
                     "a notebook's functions have none")
    found = open_elsewhere(on_laptop, Path(file).parent, {"args": args, "function": function})
    if found.get("rank_error"):
        error = found["rank_error"]
        if error["kind"] == "NotImplementedError" and error["raised_at"]:   # a stub's, raised here as every stub's
            stub = getattr(distributed, error["raised_at"][2], None)
            if callable(stub):
                stub(*[None] * stub.__code__.co_argcount)
        raise from_data(error)
    return found["answer"]


def on_laptop(target, args, function) -> dict:
    """In the laptop: the learner's module, the ranks, the answer as plain data (or the rank's error as data)."""
    try:
        return {"answer": plain(globals()[function](target.load("distributed"), **args))}
    except RankFailed as exc:
        return {"rank_error": as_data(exc)}


def asked_shards(distributed, sizes):
    def work(rank, world):
        found = []
        for n_train, n_valid, batch in sizes:
            train, valid = Seen(n_train, 1), Seen(n_valid, 2)
            train_dl, valid_dl = distributed.shard_loaders(train, valid, rank, world, batch_size=batch)
            epochs, batches = [], []
            for epoch in (0, 1):
                if hasattr(getattr(train_dl, "sampler", None), "set_epoch"):
                    train_dl.sampler.set_epoch(epoch)
                train.read.clear()
                batches = [len(y) for _x, y in train_dl]
                epochs.append(list(train.read))
            valid_batches = [len(y) for _x, y in valid_dl]
            found.append({"train": epochs, "train_batches": batches, "valid": list(valid.read),
                          "valid_batches": valid_batches})
        return found
    by_rank = on_ranks(work, distributed)
    return [list(ranks) for ranks in zip(*by_rank)]   # per size, each rank's answer


SIZES = [(10, 5, 2), (12, 7, 4), (8, 4, 3), (6, 1, 2)]   # (training images, validation images, batch size)


@record([SIZES], rests=(WORK, SHAPE))
def shards(distributed, sizes):
    """shard_loaders on each rank, for each of ``sizes``: the training items each gave in epochs 0 and 1 (its
    sampler told the epoch, as run_epoch tells it), the validation items, the batch sizes"""
    return ranked("asked_shards", distributed, sizes=sizes)


def epochs(distributed, seed, n_train=12, n_valid=N_VALID, batch=2, device=None, wrap=True, count=False):
    """Two epochs of run_epoch on each rank (the same tiny model on every rank, DDP-wrapped on the CPU): per rank,
    per epoch, what it returned, the loss function's calls, the training items in the order read, the epochs its
    sampler was told, and the weights after; with ``count``, the host's syncs of each epoch (kata.sim's count)."""
    def work(rank, world):
        from kata import sim

        model = tiny_model(seed).to(device or "cpu")
        model = DistributedDataParallel(model) if wrap else model
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
        train_dl, valid_dl = loaders(rank, seed, n_train, n_valid, batch)
        found = []
        for epoch in (0, 1):
            loss_fn = Loss()
            train_dl.dataset.read.clear()
            with sim.count_syncs() if count else contextlib.nullcontext() as syncs:
                result = distributed.run_epoch(model, train_dl, valid_dl, loss_fn, optimizer,
                                               torch.device(device or "cpu"), epoch)
            found.append({"result": plain(result), "calls": loss_fn.data(), "read": list(train_dl.dataset.read),
                          "epochs": list(train_dl.sampler.given),
                          "after": [host(p) for p in model.parameters()],
                          **({"syncs": {"total": syncs.total, "by_kind": dict(syncs.by_kind),
                                        "events": [list(e) for e in syncs.events[:4]]}} if count else {})})
        return found
    return on_ranks(work, distributed, device=device)


@record(seeds, rests=(WORK, BEHAVIOUR))
def on_the_cpu(distributed, seed):
    """Two epochs of run_epoch on two ranks, DDP on the CPU: 12 training images (6 a rank, batches of 2) and 5
    validation images (3 and 2)"""
    return ranked("epochs", distributed, seed=seed)


@record(seeds, rests=(SHAPE, BEHAVIOUR), accelerator=True)
def on_accelerator(distributed, seed):
    """Two epochs of run_epoch on two ranks on the simulated accelerator, each rank's model its own (DDP does not
    run on the simulated device), six training batches a rank, the host's syncs counted"""
    from kata import sim

    ok, why = sim.support()
    if not ok:
        raise NotRun(why)
    return ranked("epochs", distributed, seed=seed, n_train=WORLD * SYNC_BATCHES * 2,
                  device=f"{sim.NAME}:0", wrap=False, count=True)


HISTORY = ([0.7, 0.6, 0.55], [0.72, 0.65, 0.6], [0.5, 0.6, 0.7], [0.45, 0.55, 0.65])


def loaded(distributed, path, model, weights) -> dict:
    """load_checkpoint(path, model): what it returned and whether the model (unwrapped) holds ``weights`` now; or
    its error, caught (the file's own problem comes first where it has one)."""
    try:
        returned = distributed.load_checkpoint(path, model)
    except Exception as exc:  # noqa: BLE001 - the learner's error is the answer
        return {"error": caught(exc, distributed)}
    inner = model.module if isinstance(model, DistributedDataParallel) else model
    return {"returned": plain(returned), "same": all(torch.equal(a, b) for a, b in zip(inner.parameters(), weights))}


def saved(distributed, seed, path):
    weights = list(tiny_model(seed).parameters())

    def save(rank, world):
        saves, save = [], torch.save

        def slow_save(obj, f, *args, **kwargs):
            saves.append(str(f))
            if rank == 0:
                time.sleep(0.3)   # a rank that does not wait for the writer finds no file
            return save(obj, f, *args, **kwargs)

        torch.save = slow_save
        try:
            distributed.save_checkpoint(path, DistributedDataParallel(tiny_model(seed)), 3, HISTORY)
        finally:
            torch.save = save
        return {"saves": saves, "there": Path(path).is_file()}

    ranks = on_ranks(save, distributed)
    if not Path(path).is_file():
        return {"ranks": ranks, "file": None}
    read = torch.load(path, weights_only=True, map_location="cpu")
    loading = on_ranks(lambda rank, world: loaded(distributed, path, DistributedDataParallel(tiny_model(seed + 1)),
                                                  weights), distributed)
    return {"ranks": ranks, "file": plain(read), "weights": [host(p) for p in weights], "loading": loading,
            "plain": loaded(distributed, path, tiny_model(seed + 2), weights)}


@record(seeds, rests=(WORK, BEHAVIOUR))
def checkpoint(distributed, seed):
    """save_checkpoint on two ranks of a DDP-wrapped tiny model (rank 0's torch.save made slow) and what each rank
    saw of the file as it returned; the file as a stranger reads it (weights_only, onto the CPU); load_checkpoint on
    each rank into another wrapped model, and in one plain process"""
    path = Path(tempfile.mkdtemp(dir=context().tmp)) / "ddp.pt"
    return ranked("saved", distributed, seed=seed, path=str(path))
