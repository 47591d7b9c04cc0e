"""Records of exercise 6, sync: one epoch of train_epoch on the tiny setup of kata/records/doubles.py (its seed
drawn), as data: what it returned, the weights it left, the log of what the loop did; on the accelerator, how
many times the host waited for the device (kata.sim's count, or CUDA's sync debug mode).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch
from torch import nn

from kata.records import BEHAVIOUR, CONSTANT, SHAPE, WORK, context, record
from kata.records.doubles import HalfModel, graphs_held, locals_at_return, tiny_seeds, tiny_setup, with_weights


def epoch(sync, seed, device=None, model=None, eval_first=False, graphs=False, **sizes):
    """train_epoch(model, dl, BCELoss(), Adam(lr=0.001), device) once, watched: its result, the weights after, the
    log (with ``graphs``, how many batches' graphs the learner's locals held as they returned)."""
    model, dl, _valid, log = tiny_setup(seed=seed, model=model, **sizes)
    device = device or torch.device("cpu")
    model.to(device)
    if eval_first:
        model.eval()
    optimizer, code = torch.optim.Adam(model.parameters(), lr=0.001), getattr(sync.train_epoch, "__code__", None)
    spy = locals_at_return(Path(code.co_filename).parent) if graphs and code else contextlib.nullcontext({})
    with log.watching(model), spy as kept:
        result = sync.train_epoch(model, dl, nn.BCELoss(), optimizer, device)
    found = with_weights(model, {"result": result, "log": log.data()})
    return {**found, "graphs": graphs_held(kept)} if graphs else found


@record(lambda draw: tiny_seeds(draw, "tiny", "half"), rests=(WORK, BEHAVIOUR))
def on_the_cpu(sync, seed, kind):
    """One epoch on the CPU of the tiny setup, or of a model that says exactly 0.5 for every image"""
    return epoch(sync, seed, model=HalfModel() if kind == "half" else None)


@record(lambda draw: tiny_seeds(draw, "after eval", "six batches"), rests=(SHAPE, BEHAVIOUR))
def watched(sync, seed, kind):
    """One epoch of a model left in eval() mode (as validation leaves it), or of six batches and the autograd
    graphs of batches the learner's locals held as they returned"""
    if kind == "after eval":
        return epoch(sync, seed, eval_first=True)
    return epoch(sync, seed, graphs=True, n_train=24, batch=4)


@record(tiny_seeds, rests=(WORK, CONSTANT, BEHAVIOUR), accelerator=True)
def on_accelerator(sync, seed):
    """One epoch of the tiny setup on the accelerator (on the simulated one, with the lines of its non_blocking
    copies to the host), then on the CPU"""
    from kata import sim

    device = context().accelerator
    with sim.count_syncs() if sim.is_sim(device) else contextlib.nullcontext(None) as counted:
        on_device = epoch(sync, seed, device)
    copies = counted.copies if counted is not None else []
    return {"device": {**on_device, "copies_to_host": copies}, "cpu": epoch(sync, seed)}


@record(tiny_seeds, rests=(SHAPE, BEHAVIOUR), accelerator=True)
def syncs(sync, seed):
    """One epoch of six batches on the accelerator, and the host's syncs: kata.sim's count, or CUDA's warnings"""
    device = context().accelerator
    model, dl, _valid, _log = tiny_setup(seed=seed, n_train=24, batch=4)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    from kata import sim

    with sim.count_cuda_syncs() if device.type == "cuda" else sim.count_syncs() as counted:
        result = sync.train_epoch(model, dl, nn.BCELoss(), optimizer, device)
    return {"result": result, "total": counted.total, "by_kind": dict(counted.by_kind),
            "events": [list(e) for e in counted.events[:4]]}
