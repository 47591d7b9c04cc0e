"""Records of exercise 6, sync: one training epoch's numbers and the model it leaves, on the CPU and the accelerator.

How many times the host waited for the device is what only the running
process sees: the checks that count it say so (``observed=``), and rest on
these records for the numbers.
"""

from __future__ import annotations

from kata.audit import CONSTANT, SHAPE, Facet, close, project, typed
from kata.audit._draws import half_model, loader, tiny_model

__all__ = ["FACETS", "RECORDS"]


def _one_epoch(mod, draw, device=None, model=None):
    import torch
    from torch import nn

    model = tiny_model(draw.seed()) if model is None else model
    dl = loader(draw, draw.int(5, 24), draw.int(2, 5))
    if device is not None:
        model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    result = mod.train_epoch(model, dl, nn.BCELoss(), optimizer, device or torch.device("cpu"))
    return {"result": typed(result), "after": [typed(p) for p in model.parameters()]}


def _epoch(mod, draw, ctx):
    return _one_epoch(mod, draw)


def _epoch_device(mod, draw, ctx):
    return _one_epoch(mod, draw, device=ctx.accelerator)


def _half(mod, draw, ctx):
    """A model that says exactly 0.5 (the book's `pred >= 0.5` predicts a smile): the accuracy is the share of 1s."""
    return _one_epoch(mod, draw, model=half_model())["result"]


RECORDS = {"epoch": _epoch, "epoch.device": _epoch_device, "half": _half}


def _kinds(node):
    if node.get("t") not in ("tuple", "list") or len(node.get("v", [])) != 2:
        return {"t": node.get("t")}
    return {"t": node["t"], "v": [v.get("t") for v in node["v"]]}


FACETS = {
    "types": Facet("train_epoch returns (mean_loss, accuracy) as Python floats",
                   project(lambda f: _kinds(f["result"])), record="epoch", rests=SHAPE),
    "numbers": Facet("train_epoch's numbers are the book loop's", project(lambda f: f["result"], close(1e-5, 1e-7)),
                     record="epoch"),
    "weights": Facet("after the epoch, the model's weights are the book loop's",
                     project(lambda f: f["after"], close(1e-5, 1e-6)), record="epoch"),
    "half": Facet("a probability of exactly 0.5 counts as a smile (pred >= 0.5)",
                  project(lambda result: result["v"][1], close(1e-6, 1e-9))),
    "device.types": Facet("on the accelerator: (mean_loss, accuracy) as Python floats",
                          project(lambda f: _kinds(f["result"])), record="epoch.device", rests=SHAPE),
    "device.placement": Facet("on the accelerator: the model stays there",
                              project(lambda f: [p.get("device") for p in f["after"]]), record="epoch.device",
                              rests=CONSTANT),
    "device.numbers": Facet("on the accelerator: the book loop's numbers",
                            project(lambda f: f["result"], close(1e-4, 1e-6)), record="epoch.device"),
    "device.weights": Facet("on the accelerator: the book loop's weights, on the accelerator",
                            project(lambda f: f["after"], close(1e-5, 1e-5)), record="epoch.device"),
}
