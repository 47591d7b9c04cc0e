"""One rank of ``kata train --nproc N``: run by torchrun (kata/commands/_torchrun.py), one process a rank.

Every rank reads the job ``kata train`` gave it (a JSON argument: the settings, the target, which of its modules
does what, the data's folder, the run folder, the device) and its place from torchrun's environment (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``), then, with the target's modules, as the book would on N processes:

    dist.init_process_group("gloo")            # "nccl" when every rank has a CUDA device of its own
    train, valid, test = data.load_splits(root, n_train, n_valid)
    train_dl, valid_dl = distributed.shard_loaders(train, valid, rank, world_size, batch_size)
    torch.manual_seed(1); model = DistributedDataParallel(model.build_model().to(device))
    for epoch in range(epochs):
        figures = distributed.run_epoch(model, train_dl, valid_dl, nn.BCELoss(), Adam(lr=0.001), device, epoch)
        distributed.save_checkpoint(out / "checkpoint.pt", model, epoch + 1, history)

Rank 0 alone draws the progress bar, prints, plots (the target's LivePlot, as the one-process run does) and
writes history.json, in the one-process run's format. The checkpoint that ``distributed.save_checkpoint``
writes (the unwrapped model's weights) is then opened in one process with ``distributed.load_checkpoint`` and
written again by the target's checkpoint module, with Adam's state, so that ``kata train --resume`` and the
checkpoint exercise's ``load_checkpoint`` open it as they open a one-process run's; while that module can't save
yet, there is no checkpoint.pt, as in a one-process run, and a note says so.

A rank's error in the target's code is explained as in a one-process run (``learner_code``) and reported to the
parent (``_torchrun.report``), which shows one message.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

from kata.commands._checkpoints import CHECKPOINT, Checkpoints
from kata.commands._torchrun import report
from kata.commands.train import (
    KataUserError,
    ProgressLoader,
    Settings,
    book_plot,
    closing,
    epoch_line,
    heading,
    learner_code,
    live_plot,
    plain,
)
from kata.files import write_json
from kata.harness.target import Target
from kata.i18n import _, say, set_language
from kata.records.history import HISTORY_NAMES

__all__ = ["main", "rank_run"]


def main(argv: list[str]) -> int:
    """A rank's process: 0 when done, 1 after reporting an error, 130 when interrupted."""
    import torch.distributed as dist

    job = json.loads(argv[0])
    set_language(job["lang"])   # the parent's: --lang, or what it found
    try:
        rank_run(job)
    except KeyboardInterrupt:
        return 130
    except KataUserError as err:
        report(str(err))
        return 1
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


def rank_run(job: dict) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    rank, world, local = (int(os.environ[v]) for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    settings = Settings(**job["settings"])
    target, names = Target(job["target"]), job["modules"]
    data, model_mod, training, plotting, ranks = (target.module(names[role]) for role in
                                                  ("data", "model", "training", "plotting", "distributed"))
    out, root = Path(job["out"]), Path(job["root"])
    lead = rank == 0
    tell = (lambda *a: print(*a, flush=True)) if lead and not job["quiet"] else (lambda *a: None)
    if job["device"] == "cuda":
        torch.cuda.set_device(local)
        device, backend = torch.device("cuda", local), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend)

    with learner_code(target):
        train_ds, valid_ds, test_ds = data.load_splits(root, n_train=settings.n_train, n_valid=settings.n_valid)
        train_dl, valid_dl = ranks.shard_loaders(train_ds, valid_ds, rank, world, batch_size=settings.batch_size)
        torch.manual_seed(1)
        model = model_mod.build_model().to(device)
    wrapped = DistributedDataParallel(model, device_ids=[local] if device.type == "cuda" else None)
    loss_fn = nn.BCELoss()
    optimizer = torch.optim.Adam(wrapped.parameters(), lr=0.001)

    if lead:
        tell(heading(target, settings, (train_ds, valid_ds, test_ds), root, job["synthetic"], device))
        if not settings.book:
            tell(_("  (a quick run; `kata train --book` runs the book's 16,000 / 1,000 images for 30 epochs)"))
        tell(say("  ({n} ranks under torchrun, {backend}, each with its share of the images and a batch of {batch}: "
                 "{total} images a step in all)", n=world, backend=backend, batch=settings.batch_size,
                 total=world * settings.batch_size))
        live = live_plot(plotting, out / "history.png", target, device, tell)
        record = {
            "settings": {**job["settings"], "target": settings.target if settings.target in ("solutions", "exercises")
                         else str(target.path)},
            "target": str(target.path),
            "data": {"root": str(root.resolve()), "synthetic": job["synthetic"],
                     "n_train": len(train_ds), "n_valid": len(valid_ds), "n_test": len(test_ds)},
            "device": str(device),
            "ranks": {"world_size": world, "backend": backend},
            "versions": {"torch": torch.__version__, "python": platform.python_version()},
            "history": {},
            "epoch_seconds": [],
            "test": None,
        }
        checkpoints = Checkpoints(target, names["checkpoint"], out, device, None, tell)
        checkpoints.optimizer = optimizer
        train_dl = ProgressLoader(train_dl, settings.epochs)
        hook = train_dl.attach(model)

    history = [[], [], [], []]
    path = out / CHECKPOINT
    for epoch in range(settings.epochs):
        epoch_start = time.perf_counter()
        with learner_code(target):
            figures = ranks.run_epoch(wrapped, train_dl, valid_dl, loss_fn, optimizer, device, epoch)
        figures = _four_floats(figures, target.display(names["distributed"]))
        for h, value in zip(history, figures, strict=True):
            h.append(value)
        with learner_code(target):
            ranks.save_checkpoint(path, wrapped, epoch + 1, history)
        if not lead:
            continue
        record["epoch_seconds"].append(round(time.perf_counter() - epoch_start, 3))
        record["history"] = dict(zip(HISTORY_NAMES, ([*h] for h in history), strict=True))
        with learner_code(target):
            if live is not None:
                live.update(epoch, history)
            else:
                book_plot(history).savefig(out / "history.png")
        write_json(out / "history.json", record)
        _one_process_checkpoint(checkpoints, model_mod, ranks, path, target)
        tell(epoch_line(record, epoch + 1, settings.epochs))

    if lead:
        hook.remove()
        with learner_code(target):
            test_dl = data.make_loaders(train_ds, valid_ds, test_ds, batch_size=settings.batch_size)[2]
            test_loss, test_accuracy = training.evaluate(model, test_dl, device=device)
        record["test"] = {"loss": plain(test_loss), "accuracy": plain(test_accuracy)}
        record["total_seconds"] = round(time.time() - job["started"], 1)   # from the command's start
        write_json(out / "history.json", record)
        closing(record, out, checkpoints.saving, tell)
    dist.barrier()   # every rank stays in the group until rank 0 is done with the test set


def _four_floats(figures, file: str) -> list[float]:
    """run_epoch's four figures as Python floats (a tensor or NumPy scalar among them is converted)."""
    try:
        values = [float(plain(v)) for v in figures]
    except (TypeError, ValueError, RuntimeError):
        values = []
    if len(values) != 4:
        raise KataUserError(say("{file}: run_epoch returned {value!r}, not four numbers (train_loss, valid_loss, "
                                "train_acc, valid_acc); run `pytest {file}` to see why", file=file,
                                value=_short(figures)))
    return values


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _one_process_checkpoint(checkpoints: Checkpoints, model_mod, ranks, path: Path, target: Target) -> None:
    """Rank 0, after ``save_checkpoint``: the file opened in one process by ``load_checkpoint`` (a model built
    afresh, on the CPU) and written again by the checkpoint module, with Adam's state, as a one-process run's."""
    import torch

    if not checkpoints.saving:
        path.unlink(missing_ok=True)
        return
    with learner_code(target):
        with torch.random.fork_rng(devices=[]):   # building a model draws weights: not from the run's generator
            plain_model = model_mod.build_model()
        epoch, history = ranks.load_checkpoint(path, plain_model, device=torch.device("cpu"))
        checkpoints.save(plain_model, int(epoch), [list(h) for h in history])
    if not checkpoints.saving:
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
