"""Records of exercise 4, training: the histories, and the caller's model afterwards.

Each record trains the checks' tiny model (no dropout: every run is the same)
on DataLoaders of drawn sizes, then keeps the histories ``train`` returned and the
caller's own model as it is afterwards: trained in place, or (a copy trained)
untouched, on the device it was moved to, or not. Those facts are in the data.
The optimizer and loss ``train`` builds are read from its source (kata/audit/declared.py),
and the measures of its final model are computed here, in the grader's process, by the
book's own evaluation (kata/checks/book.py, which the records' sandbox does not hold).
"""

from __future__ import annotations

from kata.audit import CONSTANT, PROPERTY, SHAPE, SOURCE, Facet, close, project, tensor_values, typed
from kata.audit._draws import half_model, loader, tiny_model
from kata.audit.declared import losses_problem, optimizers_problem, read
from kata.i18n import _, say

__all__ = ["FACETS", "RECORDS", "SOURCE_READING"]

NUMBERS = close(1e-5, 1e-7)       # the checks' pytest.approx(rel=1e-5, abs=1e-7)
WEIGHTS = close(1e-5, 1e-6)       # torch.allclose(atol=1e-6)
ON_DEVICE = close(1e-4, 1e-6)     # the device changes where, not what (to float32 precision)


def _setup(draw, n_train=None):
    n_train = n_train or draw.int(5, 12)
    batch = draw.int(2, 5)
    model = tiny_model(draw.seed())
    return model, loader(draw, n_train, batch), loader(draw, draw.int(3, 8), batch)


def _params(model):
    return [typed(p) for p in model.parameters()]


def _histories(mod, draw, ctx):
    model, train_dl, valid_dl = _setup(draw)
    before = _params(model)
    result = mod.train(model, draw.int(1, 3), train_dl, valid_dl)
    return {"result": typed(result), "before": before, "after": _params(model)}


def _on_device(mod, draw, ctx):
    model, train_dl, valid_dl = _setup(draw)
    result = mod.train(model, draw.int(1, 2), train_dl, valid_dl, device=ctx.accelerator)
    return {"result": typed(result), "after": _params(model)}


def _device_none(mod, draw, ctx):
    model, train_dl, valid_dl = _setup(draw)
    model.to(ctx.accelerator)
    result = mod.train(model, 1, train_dl, valid_dl)
    return {"result": typed(result), "after": _params(model)}


def _on_epoch(mod, draw, ctx):
    model, train_dl, valid_dl = _setup(draw)
    calls = []
    result = mod.train(model, draw.int(2, 3), train_dl, valid_dl,
                       on_epoch=lambda epoch, h: calls.append([typed(epoch), typed([list(x) for x in h])]))
    return {"calls": calls, "result": typed(result)}


def _last_validation(mod, draw, ctx):
    """The histories and the final weights; the reference's record adds the validation data, which the judge
    measures the final weights on."""
    model, train_dl, valid_dl = _setup(draw)
    result = mod.train(model, 2, train_dl, valid_dl)
    found = {"result": typed(result), "after": _params(model)}
    if ctx.reference:
        found["valid"] = [typed(t) for t in valid_dl.dataset.tensors]
    return found


def _evaluate(mod, draw, ctx):
    model, _, valid_dl = _setup(draw)
    result = mod.evaluate(model, valid_dl)
    return {"result": typed(result), "after": _params(model)}


def _half(mod, draw, ctx):
    """A model that says exactly 0.5 (the book's `pred >= 0.5` predicts a smile): train's and evaluate's accuracies."""
    _, train_dl, valid_dl = _setup(draw)
    model = half_model()
    history = mod.train(model, 1, train_dl, valid_dl)
    return [_as_float(typed(history[2][0])), _as_float(typed(history[3][0])),
            _as_float(typed(mod.evaluate(model, valid_dl)[1]))]


def _evaluate_accelerator(mod, draw, ctx):
    model, _, valid_dl = _setup(draw)
    model.to(ctx.accelerator)
    return {"result": typed(mod.evaluate(model, valid_dl, device=ctx.accelerator))}


def _evaluate_device(mod, draw, ctx):
    """evaluate(..., device=...) of a model that lives on the CPU: the model goes there, the numbers stay."""
    model, _, valid_dl = _setup(draw)
    result = mod.evaluate(model, valid_dl, device=ctx.accelerator)
    return {"result": typed(result), "after": _params(model)}


RECORDS = {"histories": _histories, "device": _on_device, "device_none": _device_none, "on_epoch": _on_epoch,
           "last_validation": _last_validation, "evaluate": _evaluate, "evaluate.device": _evaluate_device,
           "evaluate.accelerator": _evaluate_accelerator, "half": _half}


# --- how the records are read ------------------------------------------------------------------


def _entry_kinds(node):
    """A history's shape: the container and, for each of its lists, the kind of each entry."""
    if node.get("t") not in ("tuple", "namedtuple", "list") or len(node["v"]) != 4:
        return {"t": node.get("t"), "n": len(node.get("v", []))}
    return {"t": "four", "lists": [[h.get("t"), [e.get("t") for e in h.get("v", [])]] for h in node["v"]]}


def _ranges(mine, _ref):
    import math

    kinds = _entry_kinds(mine["result"])
    if kinds.get("t") != "four":
        return _("not four histories")
    for i, h in enumerate(mine["result"]["v"]):
        for e in h.get("v", []):
            v = e.get("v")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                return say("history {i} holds {value}", i=i, value=repr(v))
            if (i >= 2 and not 0 <= v <= 1) or v < 0:
                return say("history {i} holds {value}, out of its range", i=i, value=v)
    return None


def _histories(node):
    return node["v"] if node.get("t") in ("tuple", "namedtuple", "list") else node


def _lists(node):
    """The four histories whatever holds them (a tuple, a named tuple or a list: the contract welcomes each)."""
    return {"t": "list", "v": _histories(node)} if node.get("t") in ("tuple", "namedtuple", "list") else node


def _as_float(node):
    """An entry as the check reads it, float(v): a 0-d tensor or a NumPy scalar counts as its value."""
    if node.get("t") == "tensor" and node.get("shape") == [] and "v" in node:
        return {"t": "float", "v": float(tensor_values(node).reshape(-1)[0])}
    if node.get("t") in ("numpy", "int"):
        return {"t": "float", "v": float(node["v"])}
    return node


def _float_lists(node):
    return {"t": "list", "v": [{"t": "list", "v": [_as_float(e) for e in h.get("v", [])]}
                               for h in _histories(node)]}


def _first(history):
    return history["v"][0] if history.get("v") else {"t": "NoneType", "v": None}


def _devices(params):
    return [p.get("device") for p in params]


def _trained(mine, _ref):
    return None if mine["before"] != mine["after"] else _("the caller's model kept its initial weights")


def _on_epoch(mine, ref):
    lengths = [[c[0], [len(h["v"]) for h in c[1]["v"]]] for c in mine["calls"]]
    want = [[c[0], [len(h["v"]) for h in c[1]["v"]]] for c in ref["calls"]]
    if lengths != want:
        return say("on_epoch was called with {lengths}, the reference's {want} (epoch, history lengths)",
                   lengths=lengths, want=want)
    returned = _histories(mine["result"])
    for epoch, seen in mine["calls"]:
        upto = epoch["v"] + 1
        for h_seen, h_all in zip(seen["v"], returned):
            if h_seen["v"] != h_all["v"][:upto]:
                return say("at epoch {epoch} on_epoch saw other values than train returns", epoch=epoch["v"])
    return None


def _measured(params: list, valid: list) -> list[float]:
    """The book's validation measures (mean BCE, accuracy) of the tiny model with ``params``, on ``valid``: in the
    grader's process, with the book's own evaluation."""
    import numpy as np
    import torch

    from kata.checks.book import book_epoch

    model = tiny_model(0)
    with torch.no_grad():
        for p, node in zip(model.parameters(), params, strict=True):
            p.copy_(torch.from_numpy(np.array(tensor_values(node))).reshape(p.shape))
    x, y = (torch.from_numpy(np.array(tensor_values(n))) for n in valid)
    model.eval()
    with torch.no_grad():
        return list(book_epoch(model, _batches(x, y)))


def _batches(x, y):
    """The validation data as one pass of batches, with ``.dataset`` for the book's per-sample means."""
    from torch.utils.data import DataLoader, TensorDataset

    return DataLoader(TensorDataset(x, y), batch_size=len(y))


def _last_validation(mine, ref):
    h = _histories(mine["result"])
    got = [h[1]["v"][-1]["v"], h[3]["v"][-1]["v"]]
    want = _measured(mine["after"], ref["valid"])
    return NUMBERS({"t": "list", "v": [{"t": "float", "v": g} for g in got]},
                   {"t": "list", "v": [{"t": "float", "v": w} for w in want]})


def SOURCE_READING(files: dict[str, str]) -> dict:  # noqa: N802 - the name kata.audit looks up
    """What training.py (and the hand-in's helpers) declares: kata/audit/declared.py."""
    return read(files, "training")

FACETS = {
    "types": Facet("train returns four lists of one Python float per epoch",
                   project(lambda f: _entry_kinds(f["result"])), record="histories", rests=SHAPE),
    "ranges": Facet("every entry finite; losses >= 0; accuracies in [0, 1]", _ranges, record="histories",
                    rests=PROPERTY),
    "numbers": Facet("the histories are the book's algorithm's", project(lambda f: _lists(f["result"]), NUMBERS),
                     record="histories"),
    "first_epoch": Facet("the first epoch's four entries are the book's algorithm's",
                         project(lambda f: {"t": "list", "v": [_first(h) for h in _histories(f["result"])]}, NUMBERS),
                         record="histories"),
    "weights": Facet("the caller's model ends with the book's algorithm's weights",
                     project(lambda f: f["after"], WEIGHTS), record="histories"),
    "trained": Facet("the caller's model is the one trained", _trained, record="histories", rests=PROPERTY),
    "optimizer": Facet("each optimizer train's source builds is the book's, Adam(lr=0.001)", optimizers_problem,
                       record="source", rests=SOURCE),
    "loss": Facet("train's source builds no loss module but the book's, nn.BCELoss", losses_problem,
                  record="source", rests=SOURCE),
    "device.numbers": Facet("trained on the accelerator: the CPU's numbers (each entry as float(v))",
                            project(lambda f: _float_lists(f["result"]), ON_DEVICE),
                            record="device"),
    "device.types": Facet("trained on the accelerator: four lists of Python floats",
                          project(lambda f: _entry_kinds(f["result"])), record="device", rests=SHAPE),
    "device.optimizer": Facet("trained on the accelerator: the book's optimizer, Adam(lr=0.001), in the source",
                              optimizers_problem, record="source", rests=SOURCE),
    "device.loss": Facet("trained on the accelerator: no loss module but the book's, nn.BCELoss, in the source",
                         losses_problem, record="source", rests=SOURCE),
    "device.moved": Facet("train(..., device=d) moves the caller's model to d", project(lambda f: _devices(f["after"])),
                          record="device", rests=CONSTANT),
    "device_none": Facet("device=None trains where the model already is",
                         project(lambda f: [_entry_kinds(f["result"]), _devices(f["after"])]), rests=SHAPE),
    "on_epoch": Facet("on_epoch(epoch, history) once per epoch, with the lists so far", _on_epoch, rests=PROPERTY),
    "last_validation": Facet("the last validation entry is the final model's (measured by the book's evaluation)",
                             _last_validation),
    "evaluate": Facet("evaluate gives the book's measures as floats and changes no weight",
                      project(lambda f: [f["result"], f["after"]], NUMBERS)),
    "half": Facet("a probability of exactly 0.5 counts as a smile (pred >= 0.5), in train and evaluate",
                  close(1e-6, 1e-9)),
    "evaluate.accelerator": Facet("evaluate on the accelerator gives the CPU's numbers, as floats",
                                  project(lambda f: f["result"], ON_DEVICE)),
    "evaluate.device": Facet("evaluate(..., device=d) moves the model to d and gives the CPU's numbers",
                             project(lambda f: [f["result"], _devices(f["after"])], ON_DEVICE)),
}
