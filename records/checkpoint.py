"""Records of exercise 7, checkpoint: the tiny run of kata/records/doubles.py (its seed and the epoch saved drawn)
saved by save_checkpoint, the file read back as a stranger's (weights_only=True, onto the CPU) as data; a fresh model
and optimizer filled by load_checkpoint, then trained on; files with code hidden in them; on the accelerator, the
devices a file's tensors are tagged for, and a laptop (kata/records/elsewhere.py: a fresh process without one) opening
a file saved there with load_checkpoint (:func:`on_laptop`).
"""

from __future__ import annotations

import io
import pickle
import tempfile
from pathlib import Path

import torch
from hypothesis import strategies as st

from kata.records import BEHAVIOUR, CONSTANT, PROPERTY, WORK, caught, context, record
from kata.records.doubles import MORE, fixed_batches, history_of, host, tiny_model, tiny_run, train_batches
from kata.records.elsewhere import NotRun, open_elsewhere
from kata.records.history import HISTORY, History
from kata.records.payloads import KINDS, RunsCode

# An epoch, and up to four entries of each history (of 16 distinct values): any of them comes back as saved.
ROUND_TRIP = st.tuples(st.integers(0, 9999), st.integers(0, 10_000), st.integers(0, 4),
                       st.lists(st.floats(0, 10, allow_nan=False), min_size=16, max_size=16, unique=True))
# The laptop's calls of load_checkpoint: how each is said, and its device argument (None: none given).
CALLS = {"load_checkpoint(path, model, optimizer)": None,
         "load_checkpoint(path, model, optimizer, device='cpu')": "cpu"}


def seeded(*kinds):
    """Cases of one drawn seed (the tiny model's) and epoch (the one saved), one per kind."""
    def cases(draw):
        seed, epoch = draw.int(0, 9999), draw.int(3, 60)
        return [(seed, epoch, kind) for kind in kinds] or [(seed, epoch)]
    return cases


def saved(checkpoint, seed, epoch, device=None, history=HISTORY, name="run.pt"):
    """The tiny run of ``seed`` on ``device`` saved by save_checkpoint at ``name``, in a folder of its own."""
    model, optimizer = tiny_run(seed, device=device)
    path = Path(tempfile.mkdtemp(dir=context().tmp)) / name
    checkpoint.save_checkpoint(path, model, optimizer, epoch, history)
    return path, model, optimizer


def held(path) -> dict:
    """The file as a stranger reads it: ``{"file"}``, ``{"error": {"type", "message"}}`` or ``{"missing"}``."""
    if not Path(path).is_file():
        return {"missing": True}
    try:
        return {"file": torch.load(path, weights_only=True, map_location="cpu")}
    except Exception as err:  # noqa: BLE001 - what the safe read said is the answer
        return {"error": {"type": type(err).__name__, "message": str(err)}}


def tagged(path, model, optimizer) -> dict:
    """The file read, how many of its storages are tagged for a device other than the CPU, and as many of the two
    state_dicts torch.save'd as they are; where the model's parameters are after the save."""
    def tags(source) -> int:
        seen: list[str] = []
        torch.load(source, weights_only=True, map_location=lambda storage, location: seen.append(location) or storage)
        return sum(t != "cpu" for t in seen)
    buffer, read = io.BytesIO(), held(path)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    return {"read": read, "tags": tags(path) if "file" in read else 0, "want": tags(buffer),
            "devices": sorted({str(p.device) for p in model.parameters()})}


def cpu(x):   # each tensor in x's dicts and lists as a CPU copy
    if isinstance(x, dict):
        return {k: cpu(v) for k, v in x.items()}
    return [cpu(v) for v in x] if isinstance(x, list) else host(x)


def filled(model, adam) -> dict:
    """What a load left in ``model`` and ``adam`` (built on it before the load): the model's state and devices, the
    optimizer's state, ``replaced`` (the model's parameters ``adam`` does not hold: Parameter objects the load put in
    place of its own) and ``placement`` (per parameter of ``adam``: its device, and its same-shaped state tensors')."""
    params = [p for group in adam.param_groups for p in group["params"]]
    return {"state": cpu(dict(model.state_dict())), "optimizer": cpu(adam.state_dict()),
            "devices": sorted({p.device.type for p in model.parameters()}),
            "replaced": [name for name, p in model.named_parameters() if not any(p is q for q in params)],
            "placement": [[str(p.device), {name: str(t.device) for name, t in adam.state.get(p, {}).items()
                                           if isinstance(t, torch.Tensor) and t.shape == p.shape}] for p in params]}


def loaded(checkpoint, path, seed, on=None, optimizer=True, **kwargs) -> dict:
    """A fresh model (another seed) on device ``on`` and its Adam, filled by load_checkpoint (``optimizer``: given it):
    what it returned and what it left (:func:`filled`); then MORE epochs where the model goes: the weights after, or
    the error."""
    model, adam = tiny_run(seed + 1, 0, on)
    returned = checkpoint.load_checkpoint(path, model, *([adam] if optimizer else []), **kwargs)
    found = {"returned": returned, **filled(model, adam)}
    if not optimizer:
        return found
    try:
        train_batches(model, adam, fixed_batches(), MORE, kwargs.get("device", on))
    except RuntimeError as err:   # the next step's error, for the check to explain
        return {**found, "step_error": f"{type(err).__name__}: {err}", "step_raised": caught(err, checkpoint)}
    return {**found, "after": [host(p) for p in model.parameters()]}


@record(seeded("floats", "cpu_tensors", "grad_tensors", "numpy", "load", "model only"), rests=(WORK, CONSTANT))
def run(checkpoint, seed, epoch, kind):
    """The tiny run saved (histories of floats, CPU tensors, grad tensors, NumPy scalars), read back; or loaded"""
    if kind in ("load", "model only"):
        return loaded(checkpoint, saved(checkpoint, seed, epoch)[0], seed, optimizer=kind == "load")
    path = saved(checkpoint, seed, epoch, history=history_of(kind))[0]
    return {"read": held(path), "others": sorted(p.name for p in path.parent.iterdir() if p.name != path.name)}


@record(lambda draw: [(*e, kind) for e in draw.examples(ROUND_TRIP, explicit=[(0, 0, 0, [i / 2 for i in range(16)])])
                      for kind in ("save", "load")], rests=WORK)
def round_trip(checkpoint, seed, epoch, n, values, kind):
    """Any epoch and histories (none to four entries each, of drawn values) saved and read back; or loaded"""
    path = saved(checkpoint, seed, epoch, history=History(*[values[i * 4:i * 4 + n] for i in range(4)]))[0]
    return held(path) if kind == "save" else checkpoint.load_checkpoint(path, *tiny_run(seed + 1, 0))


def with_code(obj, hidden):
    """What a checkpoint held, with ``hidden`` beside it."""
    if isinstance(obj, (list, tuple)):
        return [*obj, hidden] if isinstance(obj, list) else (*obj, hidden)
    return {**obj, "notes": hidden} if isinstance(obj, dict) else {"checkpoint": obj, "notes": hidden}


@record(lambda draw: [(draw.int(0, 9999), draw.int(3, 60), [(kind, f"ran-{draw.int(0, 99_999)}-{i}.txt") for i, kind
                                                             in enumerate(draw.shuffled(KINDS))])], rests=BEHAVIOUR)
def refuses(checkpoint, seed, epoch, hidden):
    """Files with a call of each kind hidden (drawn order, drawn markers) loaded: raised or not, ran, model changed"""
    path = saved(checkpoint, seed, epoch)[0]
    obj, found = torch.load(path, weights_only=True, map_location="cpu"), []
    for index, (kind, name) in enumerate(hidden):
        marker, file = path.with_name(name), path.with_name(f"hidden-{index}.pt")
        torch.save(with_code(obj, RunsCode(marker, kind, source=path)), file)
        model, optimizer = tiny_run(seed + 1, 0)
        before, one = {k: v.clone() for k, v in model.state_dict().items()}, {"error": None, "returned": None}
        try:
            one["returned"] = checkpoint.load_checkpoint(file, model, optimizer)
        except NotImplementedError:
            raise
        except Exception as err:  # noqa: BLE001 - which error it raised is the answer
            one["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            one["refused"] = isinstance(err, pickle.UnpicklingError)
            one["raised"] = None if one["refused"] else caught(err, checkpoint)
        found.append({**one, "ran": marker.exists(),
                      "unchanged": all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())})
    return found


@record(seeded("floats", "seed", "device=None", "device given", "resume"), rests=(WORK, PROPERTY), accelerator=True)
def on_accelerator(checkpoint, seed, epoch, kind):
    """Saved on the accelerator, read back (its device tags too); loaded onto it (device=None, given); resumed there"""
    device = context().accelerator
    if kind == "device given":
        return loaded(checkpoint, saved(checkpoint, seed, epoch)[0], seed, device=device)
    if kind in ("device=None", "resume"):   # a file saved on the CPU, or on the accelerator
        return loaded(checkpoint, saved(checkpoint, seed, epoch, device if kind == "resume" else None)[0], seed, device)
    return tagged(*saved(checkpoint, seed, epoch, device, history_of(kind, device)))


@record(lambda draw: [(*seeded()(draw)[0], CALLS)], rests=BEHAVIOUR, accelerator=True)
def laptop(checkpoint, seed, epoch, calls):
    """Saved on the accelerator, read here, and opened by load_checkpoint in a fresh process without one, trained on"""
    device = context().accelerator
    if device.type == "mps":
        return {}
    path, model, optimizer = saved(checkpoint, seed, epoch, device, name="from-the-gpu.pt")
    found = tagged(path, model, optimizer)
    file = getattr(checkpoint.save_checkpoint, "__globals__", {}).get("__file__")   # a notebook's functions have none
    if "file" not in found["read"] or not file:
        return {**found, "notebook": not file}
    try:
        found["laptop"] = open_elsewhere(on_laptop, Path(file).parent, dict(file=str(path), seed=seed, calls=calls))
    except NotRun as err:
        return {**found, "not_run": str(err)}
    if any((c["error"] or {}).get("not_written") for c in found["laptop"]["calls"].values()):
        try:   # a stub's NotImplementedError, raised here, where it reads as every stub's does
            checkpoint.load_checkpoint(path, tiny_model(seed + 1))
        except Exception as err:  # noqa: BLE001 - only a stub's error is raised here; the laptop's is the answer
            if isinstance(err, NotImplementedError):
                raise
    return found


def on_laptop(target, file, seed, calls) -> dict:
    """On the laptop (kata.records.elsewhere): PyTorch's own torch.load(file), then each of ``calls`` of the
    learner's load_checkpoint (label -> its device argument) into a fresh model (another seed) and its Adam, trained
    on where the model is; as plain values and CPU tensors."""
    found = {"torch_load": "", "calls": {}}
    try:
        torch.load(file)
    except Exception as exc:  # noqa: BLE001 - PyTorch's own error is the lesson
        found["torch_load"] = f"{type(exc).__name__}: {exc}"
    checkpoint = target.load("checkpoint")
    for label, device in calls.items():
        model, optimizer = tiny_run(seed + 1, 0)
        try:
            returned = checkpoint.load_checkpoint(file, model, optimizer, **({} if device is None else
                                                                              {"device": device}))
        except Exception as exc:  # noqa: BLE001 - the learner's error is what this machine found
            place = target.place_of(exc)
            found["calls"][label] = {"error": {
                "type": type(exc).__name__, "message": str(exc)[:1500], "where": place.where if place else "",
                "source": place.source if place else "", "not_written": isinstance(exc, NotImplementedError)}}
            continue
        one = found["calls"][label] = {"error": None, "returned": _plain(returned), **filled(model, optimizer)}
        try:
            train_batches(model, optimizer, fixed_batches(), MORE, device=next(model.parameters()).device)
        except Exception as exc:  # noqa: BLE001 - the next step's error, for the check to explain
            one["step_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        one["after"] = [host(p) for p in model.parameters()]
    return found


def _plain(value, depth: int = 0):
    """A returned value as the laptop's file can hold it (read with weights_only=True): lists and tuples (a namedtuple
    as a tuple) of plain values and CPU tensors, else its repr; None deeper than 4, or for another list or tuple."""
    if depth > 4:
        return None
    if isinstance(value, torch.Tensor):
        return host(value)
    if not isinstance(value, (list, tuple)):
        return value if type(value) in (int, float, bool, str, type(None)) else repr(value)[:80]
    items = [_plain(v, depth + 1) for v in value]
    if type(value) is list:
        return items
    return tuple(items) if type(value) is tuple or hasattr(type(value), "_fields") else None
