"""Records of exercise 7, checkpoint: what a saved file holds, and what a loaded model and optimizer hold.

Each record trains the checks' tiny model with Adam for a drawn number of
epochs on a loader of drawn sizes, saves it with the submission's
``save_checkpoint`` (a drawn epoch, histories of drawn values), and keeps the
file as data: read back here with ``torch.load(path, weights_only=True,
map_location="cpu")`` and described (:func:`kata.audit.typed`), or, where the
safe read refuses it, what it refused. The layout is the submission's to
choose, so the facets find each part by what it is, in the described file: the
mapping with the model's state_dict keys, the one with ``state`` and
``param_groups``, a number equal to the epoch, a list with each history's
values. The records that load keep the fresh model and optimizer the
submission's ``load_checkpoint`` filled (their values and devices, whether
they are the caller's objects), what it returned, and the weights after a few
more epochs: a resumed run is a run that never stopped.

What only the checks' fresh process sees (that the file opens on a machine
without an accelerator) is named ``observed=``; its record loads the same file
onto the CPU here.
"""

from __future__ import annotations

import math
from collections import namedtuple
from pathlib import Path

from kata.audit._draws import loader, tiny_model

from kata.audit import BEHAVIOUR, CONSTANT, PROPERTY, Facet, close, project, tensor_values, typed
from kata.audit.payloads import KINDS as PAYLOADS
from kata.audit.payloads import RunsCode
from kata.i18n import _, say

__all__ = ["FACETS", "RECORDS", "History"]

History = namedtuple("History", ["loss_hist_train", "loss_hist_valid", "accuracy_hist_train", "accuracy_hist_valid"])
VALUES = close(1e-6, 1e-7)        # the same run on the same machine: the same numbers
ON_DEVICE = close(1e-5, 1e-6)     # a run resumed on another device: float32 precision
KINDS = ("floats", "cpu_tensors", "grad_tensors", "numpy")
MORE = 2


def _steps(model, optimizer, dl, epochs, device=None):
    for _epoch in range(epochs):   # any steps that leave Adam a state to save (not the book's loss: no answer here)
        for x, y in dl:
            optimizer.zero_grad()
            ((model(x.to(device or "cpu"))[:, 0] - y.to(device or "cpu").float()) ** 2).mean().backward()
            optimizer.step()


def _run(draw, device=None):
    """A tiny model and its Adam, trained a drawn number of epochs; and the loader to go on with."""
    import torch

    model = tiny_model(draw.seed())
    if device is not None:
        model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    dl = loader(draw, draw.int(4, 10), draw.int(2, 4))
    _steps(model, optimizer, dl, draw.int(1, 2), device)
    return model, optimizer, dl


def _history(draw, n, kind="floats", device=None):
    import numpy as np
    import torch

    make = {"floats": float, "cpu_tensors": lambda v: torch.tensor(v, device=device or "cpu"),
            "grad_tensors": lambda v: torch.tensor(v, requires_grad=True) * 1.0, "numpy": np.float64,
            "seed": lambda v: torch.tensor(v, device=device)}[kind]
    lists = [[round(draw.rng.random(), 6) + 0.0001 for _ in range(n)] for _ in range(4)]
    return History(*[[make(v) if kind != "seed" or i >= 2 else v for v in h] for i, h in enumerate(lists)])


def _path(ctx, draw, name) -> Path:
    """A path in a folder of its own (for this record alone)."""
    import tempfile

    return Path(tempfile.mkdtemp(dir=ctx.tmp)) / f"{name}-{draw.int(0, 999)}.pt"


def _read(path) -> dict:
    """The file as data: read with weights_only=True onto the CPU and described, or what was refused."""
    import pickle

    import torch

    try:
        return {"readable": True, "refused": "", "file": typed(torch.load(path, weights_only=True, map_location="cpu"))}
    except pickle.UnpicklingError as err:
        refused = next((w.split("GLOBAL ")[1].split(" ")[0] for w in str(err).splitlines() if "GLOBAL " in w), "?")
        kind = next((k for k, prefix in (("model", "torch.nn"), ("optimizer", "torch.optim"), ("numpy", "numpy"))
                     if refused.startswith(prefix)), "class")
        return {"readable": False, "refused": kind, "file": None}


def _saved(mod, draw, ctx, name, device=None, kind="floats"):
    model, optimizer, dl = _run(draw, device)
    history = _history(draw, draw.int(1, 3), kind, device)
    path = _path(ctx, draw, name)
    mod.save_checkpoint(path, model, optimizer, draw.int(3, 60), history)
    return path, model, optimizer, dl


def _file(mod, draw, ctx):
    path, *_ = _saved(mod, draw, ctx, "file")
    return {**_read(path), "others": len([p for p in path.parent.iterdir() if p != path])}


def _file_kinds(mod, draw, ctx):
    return {kind: _read(_saved(mod, draw, ctx, f"kind-{kind}", kind=kind)[0]) for kind in KINDS}


def _device_file(mod, draw, ctx):
    import torch

    path, *_ = _saved(mod, draw, ctx, "device", ctx.accelerator)
    tags: list[str] = []
    torch.load(path, weights_only=True, map_location=lambda storage, location: tags.append(location) or storage)
    return {"device_tags": sum(t != "cpu" for t in tags), "read": _read(path)}


def _device_history(mod, draw, ctx):
    return _read(_saved(mod, draw, ctx, "seed", ctx.accelerator, kind="seed")[0])


def _fresh(draw, device=None):
    import torch

    model = tiny_model(draw.seed())
    if device is not None:
        model.to(device)
    return model, torch.optim.Adam(model.parameters(), lr=0.001)


def _placement(optimizer) -> list:
    """Per parameter: its device, and the devices of its state tensors shaped like it."""
    return [[str(p.device), sorted(str(t.device) for t in optimizer.state.get(p, {}).values()
                                   if hasattr(t, "shape") and t.shape == p.shape)]
            for group in optimizer.param_groups for p in group["params"]]


def _loaded(mod, draw, path, dl, device=None, load_device=None, optimizer=True):
    """A fresh model (and optimizer) filled by load_checkpoint, then trained MORE epochs where it is."""
    model, opt = _fresh(draw, device)
    params = list(model.parameters())
    args = (path, model, opt) if optimizer else (path, model)
    returned = mod.load_checkpoint(*args, **({"device": load_device} if load_device is not None else {}))
    found = {"returned": typed(returned), "model": [typed(p) for p in model.parameters()],
             "same_objects": [a is b for a, b in zip(params, model.parameters())]}
    if optimizer:
        found.update(optimizer=typed(opt.state_dict()), placement=_placement(opt),
                     held=[any(p is q for q in model.parameters()) for g in opt.param_groups for p in g["params"]])
        try:
            _steps(model, opt, dl, MORE, next(model.parameters()).device)
            found["continued"] = [typed(p) for p in model.parameters()]
        except RuntimeError as err:
            found["continued"] = f"{type(err).__name__}: the next step failed"
    return found


def _load(mod, draw, ctx):
    path, _, _, dl = _saved(mod, draw, ctx, "load")
    return _loaded(mod, draw, path, dl)


def _load_model_only(mod, draw, ctx):
    path, _, _, dl = _saved(mod, draw, ctx, "model-only")
    return _loaded(mod, draw, path, dl, optimizer=False)


def _round_trip(mod, draw, ctx):
    found = []
    for n in (0, draw.int(1, 4), draw.int(1, 4)):
        model, optimizer = _fresh(draw)
        path = _path(ctx, draw, "round-trip")
        mod.save_checkpoint(path, model, optimizer, draw.int(0, 10_000), _history(draw, n))
        found.append(typed(mod.load_checkpoint(path, *_fresh(draw))))
    return found


def _refuses(mod, draw, ctx):
    """The record's own checkpoint with each kind of payload hidden in it, in a drawn order, each under a drawn
    marker name: what load_checkpoint raised, whether any ran, whether the model stayed as it was."""
    import torch

    path, _, _, _ = _saved(mod, draw, ctx, "refuses")
    try:
        held = torch.load(path, weights_only=True, map_location="cpu")
    except Exception:  # noqa: BLE001 - the submission's own file, of the record's own model
        held = torch.load(path, weights_only=False, map_location="cpu")
    raised, ran, unchanged = [], False, True
    for kind in draw.shuffled(PAYLOADS):
        marker = _path(ctx, draw, f"ran-{draw.seed():x}")
        payload = RunsCode(marker, kind, source=path)
        torch.save({**held, "notes": payload} if isinstance(held, dict) else [held, payload], path.with_suffix(".x"))
        model, opt = _fresh(draw)
        before = [typed(p) for p in model.parameters()]
        try:
            mod.load_checkpoint(path.with_suffix(".x"), model, opt)
            raised.append("")
        except Exception as err:  # noqa: BLE001 - which error it raised is the record
            raised.append(type(err).__name__)
        ran = ran or marker.exists()
        unchanged = unchanged and before == [typed(p) for p in model.parameters()]
    return {"raised": sorted(set(raised)), "ran": ran, "unchanged": unchanged}


def _device_none(mod, draw, ctx):
    path, _, _, dl = _saved(mod, draw, ctx, "device-none")
    return _loaded(mod, draw, path, dl, device=ctx.accelerator)


def _device_moved(mod, draw, ctx):
    path, _, _, dl = _saved(mod, draw, ctx, "device-moved")
    return _loaded(mod, draw, path, dl, load_device=ctx.accelerator)


def _device_resume(mod, draw, ctx):
    path, _, _, dl = _saved(mod, draw, ctx, "device-resume", ctx.accelerator)
    return _loaded(mod, draw, path, dl, device=ctx.accelerator)


def _elsewhere(mod, draw, ctx):
    path, _, _, dl = _saved(mod, draw, ctx, "elsewhere", ctx.accelerator)
    return [_loaded(mod, draw, path, dl), _loaded(mod, draw, path, dl, load_device="cpu")]


RECORDS = {"file": _file, "file.kinds": _file_kinds, "device.file": _device_file, "device.history": _device_history,
           "load": _load, "load.model_only": _load_model_only, "round_trip": _round_trip, "refuses": _refuses,
           "device_none": _device_none, "device.moved": _device_moved, "device.resume": _device_resume,
           "elsewhere": _elsewhere}


# --- how the records are read: the reference's file says what to look for in the submission's ---------


def _keys(node) -> list:
    return [k.get("v") for k in node.get("k", [])] if node.get("t") == "dict" else []


def _part(node, key):
    """The reference's own file: its part under ``key``."""
    return node["v"][_keys(node).index(key)]


def _nodes(node, stop=lambda n: False):
    """Every described value of a file, depth first, not inside a node ``stop`` takes (those included)."""
    yield node
    if stop(node):
        return
    if node.get("t") in ("dict", "list", "tuple", "namedtuple"):
        for value in node["v"]:
            yield from _nodes(value, stop)


def _states(node) -> bool:
    """A state_dict (the optimizer's, or a mapping of tensors): the epoch and the histories are not in there."""
    return node.get("t") == "dict" and ({"state", "param_groups"} <= set(_keys(node)) or (
        bool(node["v"]) and all(v.get("t") == "tensor" for v in node["v"])))


def _number(node) -> float | None:
    if node.get("t") in ("int", "float") or (node.get("t") == "numpy" and isinstance(node.get("v"), (int, float))):
        return float(node["v"]) if not isinstance(node["v"], str) else math.nan
    if node.get("t") == "tensor" and node.get("shape") == [] and "v" in node:
        return float(tensor_values(node).reshape(-1)[0])
    return None


def _found(mine: dict, ref: dict, key: str):
    """The part of the submission's file that is the reference's ``key`` part, found by what it is."""
    want = _part(ref, key)
    if key == "model_state_dict":
        keys = set(_keys(want))
        return next((n for n in _nodes(mine) if n.get("t") == "dict" and set(_keys(n)) == keys), None)
    if key == "optimizer_state_dict":
        return next((n for n in _nodes(mine) if {"state", "param_groups"} <= set(_keys(n))), None)
    if key == "epoch":
        return next((n for n in _nodes(mine, _states) if _number(n) == want["v"]), None)
    found = []
    for h in want["v"]:
        values = [e["v"] for e in h["v"]]
        found.append(next((n for n in _nodes(mine, _states) if n.get("t") in ("list", "tuple") and values
                           and len(n["v"]) == len(values) and all(
                               _number(e) is not None and math.isclose(_number(e), v, rel_tol=1e-6)
                               for e, v in zip(n["v"], values))), None))
    return found


def _file_part(key, compare=VALUES, pick=lambda r: r):
    def compared(mine, ref):
        mine, ref = pick(mine), pick(ref)
        if not mine.get("readable"):
            return say("weights_only=True refuses the file (it holds {kind} objects)", kind=mine.get("refused"))
        got = _found(mine["file"], ref["file"], key)
        want = _part(ref["file"], key)
        if key == "history":
            want = want["v"]
            if any(g is None for g, w in zip(got, want)):
                return _("a history's values are not in the file as a list")
            return compare({"t": "list", "v": got}, {"t": "list", "v": want})
        if got is None:
            return say("the file holds no {part}", part=key.replace("_", " "))
        if key == "model_state_dict":   # in the reference's order of keys
            order = _keys(got)
            got = {**got, "k": want["k"], "v": [got["v"][order.index(k)] for k in _keys(want)]}
        return compare(got, want)
    return compared


def _returned(node):
    """(epoch, history) as the check reads it: any pair; the four histories in any sequence."""
    if node.get("t") not in ("tuple", "list", "namedtuple") or len(node["v"]) != 2:
        return {"t": node.get("t")}
    epoch, history = node["v"]
    if history.get("t") in ("tuple", "list", "namedtuple"):
        history = {"t": "list", "v": history["v"]}
    return [epoch, history]


def _at_least(mine, ref):
    got, want = mine["device_tags"], ref["device_tags"]
    return None if got >= want else say("{got} of the file's tensors were saved from the device; the states hold "
                                        "{want}", got=got, want=want)


FACETS = {
    "file.readable": Facet("save_checkpoint writes one file that torch.load reads with weights_only=True",
                           project(lambda f: [f["readable"], f["refused"], f["others"]]), record="file",
                           rests=CONSTANT),
    "file.model": Facet("the file holds the model's state_dict as it was", _file_part("model_state_dict"),
                        record="file"),
    "file.optimizer": Facet("the file holds the optimizer's state_dict as it was", _file_part("optimizer_state_dict"),
                            record="file"),
    "file.epoch": Facet("the file holds the epoch as a Python int", _file_part("epoch"), record="file"),
    **{f"file.history.{kind}": Facet(f"the file holds the histories as lists of floats, given {kind}",
                                     _file_part("history", pick=lambda r, k=kind: r[k]), record="file.kinds")
       for kind in KINDS},
    "device.file": Facet("saved from the accelerator, each state tensor keeps its device in the file", _at_least,
                         rests=PROPERTY),
    "device.history": Facet("the seed's history of device tensors is saved as floats", _file_part("history")),
    "load.returns": Facet("load_checkpoint returns the epoch and the histories as saved",
                          project(lambda f: _returned(f["returned"])), record="load"),
    "load.model": Facet("load_checkpoint fills the caller's model with the saved state",
                        project(lambda f: [f["model"], f["same_objects"]], VALUES), record="load"),
    "load.optimizer": Facet("load_checkpoint fills the caller's optimizer with the saved state",
                            project(lambda f: f["optimizer"], VALUES), record="load"),
    "load.model_only": Facet("without an optimizer, load_checkpoint fills the model alone",
                             project(lambda f: [_returned(f["returned"]), f["model"]], VALUES)),
    "resume": Facet("training resumed from the file takes the steps of training that never stopped",
                    project(lambda f: f["continued"], VALUES), record="load"),
    "round_trip": Facet("any epoch and history come back as saved", project(lambda f: [_returned(r) for r in f])),
    "refuses": Facet("a file that would run code (of any kind) is refused with torch.load's error, and runs "
                     "nothing", rests=BEHAVIOUR),
    "device_none": Facet("device=None loads onto the model's own device, the optimizer's state beside it",
                         project(lambda f: [f["model"], f["placement"], f["continued"]], VALUES)),
    "device.moved": Facet("a given device takes the caller's model there first, the optimizer's state beside it",
                          project(lambda f: [f["model"], f["same_objects"], f["held"], f["placement"],
                                             f["continued"]], VALUES)),
    "device.resume": Facet("training resumed on the accelerator takes the steps of training that never stopped",
                           project(lambda f: f["continued"], VALUES)),
    "elsewhere.opens": Facet("a file saved on the accelerator opens for a CPU model, epoch and histories as saved",
                             project(lambda f: [_returned(r["returned"]) for r in f]), record="elsewhere"),
    "elsewhere": Facet("a file saved on the accelerator loads onto a CPU model, and training goes on there",
                       project(lambda f: [[_returned(r["returned"]), r["model"], r["placement"], r["continued"]]
                                          for r in f], ON_DEVICE)),
}
