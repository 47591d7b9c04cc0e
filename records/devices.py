"""Records of exercise 1, devices: where each function says a tensor lives, what it moves, what it copies.

The device that is not the CPU is PyTorch's ``meta`` device (tensors there have a shape and a dtype but no
data), on every machine; the records marked ``accelerator`` use the run's accelerator (the simulated one
where there is no GPU). What a function did to its input is its answer too: ``input`` is the first change
found in what it was given (None: unchanged).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from unittest.mock import patch

import numpy as np
import torch
from hypothesis import strategies as st
from torch import nn

from kata.records import CONSTANT, PROPERTY, SHAPE, WORK, context, record
from kata.records.snapshots import change, snapshot
from kata.records.strategies import Pair, nested_tensors, plain_leaves, tensors

META = "meta"
CONTAINERS = ("dict", "OrderedDict", "defaultdict", "named tuple", "list", "tuple")
MODULES = ("built on the CPU", "moved", "buffers only", "nothing")


def integers():
    """0-d tensors of each dtype kind but float, first: each becomes its own Python type (one search may miss them)."""
    return [torch.tensor(7), (torch.tensor(-3, dtype=torch.int32), torch.tensor(True)), {"n": torch.tensor(12)}]


def unchanged(before, obj):
    """The first change in ``obj`` since ``before`` was taken, as data (None: none)."""
    found = change(before, obj)
    return None if found is None else {"path": found.path, "kind": found.kind, "before": str(found.before),
                                       "after": str(found.after)}


@record(lambda draw: draw.shuffled([(True, True), (True, False), (False, True), (False, False)]), rests=CONSTANT)
def pick_device(devices, cuda, mps):
    """pick_device() while torch.cuda.is_available() and torch.backends.mps.is_available() say ``cuda``, ``mps``"""
    with patch("torch.cuda.is_available", lambda: cuda), patch("torch.backends.mps.is_available", lambda: mps):
        return devices.pick_device()


@record(rests=CONSTANT, accelerator=True)
def pick_device_with_cuda(devices):
    """pick_device() where CUDA is available (made to say so where the accelerator is not CUDA)"""
    return pick_device.ask(devices, True, torch.backends.mps.is_available())


@record(lambda draw: [(t, draw.choice(("cpu", META))) for t in draw.examples(tensors())])
def device_of_tensor(devices, t, where):
    """device_of of a drawn tensor, on the CPU or moved off it"""
    return devices.device_of(t if where == "cpu" else t.detach().to(META))


@record(lambda draw: draw.shuffled(MODULES))
def device_of_module(devices, kind):
    """device_of of a model on the CPU, moved off it, with buffers only, holding nothing"""
    if kind == "nothing":
        return devices.device_of(nn.ReLU())
    if kind == "buffers only":
        module = nn.Module()
        module.register_buffer("mean", torch.zeros(3))
        return devices.device_of(module.to(META))
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    return devices.device_of(model.to(META) if kind == "moved" else model)


@record(lambda draw: draw.examples(st.one_of(plain_leaves, st.lists(st.integers(), max_size=3),
                                             st.floats(width=32).map(np.float32),
                                             st.integers(-5, 5).map(np.int64))), rests=CONSTANT)
def device_of_other(devices, value):
    """device_of of a value that is neither a tensor nor a module"""
    return devices.device_of(value)


@record(rests=CONSTANT)
def device_of_scenes(devices):
    """The seed's questions: `b = a; a = a.to(device)`, Module.to, a Tensor.to thrown away, 0 + sum(), .float()"""
    a = torch.ones(3)
    b = a                    # b names the same tensor as a
    a = a.to(META)           # a now names a NEW tensor; b still names the old one
    model = nn.Linear(3, 1)
    model.to(META)           # a module moves in place
    t = torch.ones(2)
    t.to(META)               # the result is thrown away: t has not moved
    total = 0 + torch.tensor([True, False, True], device=META).sum()
    return {"assignment": [devices.device_of(b), devices.device_of(a)], "module_to": devices.device_of(model),
            "thrown_away": devices.device_of(t), "float": [devices.device_of(total), devices.device_of(total.float())]}


@record(rests=CONSTANT, accelerator=True)
def device_of_accelerator(devices):
    """device_of on the accelerator: a model moved there, .float() there, `b = a; a = a.to(device)`, a.cpu()"""
    acc = context().accelerator
    model = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
    model.to(acc)
    a = torch.ones(3)
    b = a
    a = a.to(acc)
    return {"model": devices.device_of(model), "float": devices.device_of(torch.ones(3, 4).to(acc).float()),
            "assignment": [devices.device_of(a), devices.device_of(b)], "cpu": devices.device_of(a.cpu())}


@record(lambda draw: draw.examples(nested_tensors()), rests=(WORK, PROPERTY))
def to_device_nest(devices, obj):
    """to_device of a drawn nest of tensors to the meta device, and what it did to the nest"""
    before = snapshot(obj)
    out = devices.to_device(obj, META)
    return {"out": out, "input": unchanged(before, obj)}


@record(lambda draw: draw.shuffled(CONTAINERS), rests=(SHAPE, PROPERTY))
def to_device_kind(devices, kind):
    """to_device of each kind of container, holding a named tuple of two tensors and a number"""
    inner = Pair(torch.ones(2), torch.zeros(2, dtype=torch.int64))
    items = {"batch": inner, "step": 3}
    obj = {"dict": lambda: dict(items), "OrderedDict": lambda: OrderedDict(items),
           "defaultdict": lambda: defaultdict(list, items), "named tuple": lambda: Pair(inner, 3),
           "list": lambda: [inner, 3], "tuple": lambda: (inner, 3)}[kind]()
    before = snapshot(obj)
    out = devices.to_device(obj, META)
    return {"out": out, "input": unchanged(before, obj)}


@record(lambda draw: draw.examples(nested_tensors(), explicit=[integers()]), rests=(WORK, PROPERTY))
def to_python_nest(devices, obj):
    """to_python of a drawn nest of tensors, and what it did to the nest"""
    before = snapshot(obj)
    out = devices.to_python(obj)
    return {"out": out, "input": unchanged(before, obj)}


@record([("float32", 0.5, False), ("float64", 2.5, False), ("int64", 7, False), ("int32", -3, False),
         ("bool", True, False), ("float32", 1.5, True)], rests=CONSTANT)
def to_python_scalar(devices, dtype, value, grad):
    """to_python of a 0-d tensor of each dtype (and one that requires grad)"""
    return devices.to_python(torch.tensor(value, dtype=getattr(torch, dtype), requires_grad=grad))


@record([("float64", 1.5), ("float32", 0.25), ("int64", 7), ("bool", True)], rests=CONSTANT)
def to_python_numpy(devices, dtype, value):
    """to_python of a NumPy scalar"""
    return devices.to_python(np.dtype(dtype).type(value))


@record(rests=CONSTANT)
def to_python_grad(devices):
    """to_python([[loss], [tensor(0.5)], [tensor(3)]]), the loss requiring grad"""
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    return devices.to_python([[loss], [torch.tensor(0.5)], [torch.tensor(3)]])


@record(lambda draw: draw.examples(tensors()), rests=(WORK, PROPERTY))
def host_copy(devices, t):
    """host_copy of a drawn tensor, and whether one of the two changes when the other is written"""
    original = t.detach().clone()
    out = devices.host_copy(t)
    found = {"out": out, "is_t": out is t, "shares": None, "t_after_write": None}
    if isinstance(out, torch.Tensor) and out.numel() and out.device.type == "cpu":
        found["shares"] = out.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        with torch.no_grad():
            first = out.detach().view(-1)
            kept = first[0].clone()
            first[0] = 0 if first.dtype != torch.bool else not bool(kept)
            found["t_after_write"] = t.detach().clone()
            first[0] = kept
            t.detach().copy_(original)
    return found


@record(rests=CONSTANT)
def host_copy_view(devices):
    """host_copy(base[:, 1]) of a 3x4 tensor, and base after the copy is written"""
    base = torch.arange(12.0).reshape(3, 4)
    out = devices.host_copy(base[:, 1])
    found = {"out": out, "base_after_write": base}
    if isinstance(out, torch.Tensor) and out.numel():
        out = out.detach().clone() if out.requires_grad else out
        found["out"] = out.clone()
        out[0] = -1
    return found


@record(lambda draw: draw.examples(nested_tensors(), n=10, explicit=[integers()]), rests=(WORK, PROPERTY),
        accelerator=True)
def round_trip(devices, obj):
    """to_device of a drawn nest to the accelerator, to_python of what came back, and what they did to the nest"""
    acc = context().accelerator
    before = snapshot(obj)
    moved = devices.to_device(obj, acc)
    return {"moved": moved, "plain": devices.to_python(moved), "input": unchanged(before, obj)}


@record(lambda draw: [draw.int(-50, 50) / 8], accelerator=True)
def host_copy_accelerator(devices, scale):
    """host_copy of a 2x3 float tensor on the accelerator that requires grad"""
    t = (torch.arange(6.0).reshape(2, 3).to(context().accelerator) * scale).requires_grad_()
    return devices.host_copy(t)


@record(lambda draw: [tuple(draw.int(0, 1) == 1 for _ in range(4))], accelerator=True)
def seeds_history(devices, *correct):
    """to_python of the seed's history on the accelerator: [0 + correct.sum() / 4, correct.float().mean(), sum()]"""
    on = torch.tensor(correct, device=context().accelerator)
    return devices.to_python([0 + on.sum() / 4, 0 + on.float().mean(), on.sum()])
