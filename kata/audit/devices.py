"""Records of exercise 1, devices: where each function says a tensor lives, what it moves, what it copies.

The device that is not the CPU is PyTorch's ``meta`` device, as in the checks;
the records named ``accelerator`` use the run's accelerator (the simulated one
where there is no GPU). Each record asks one function one kind of question, so
that a mistake in one answer costs only the facets that rest on it.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict

from kata.audit import CONSTANT, PROPERTY, Facet, project, typed
from kata.audit._draws import DTYPES, Pair, nest, tensor

__all__ = ["FACETS", "RECORDS"]

META = "meta"
CONTAINERS = ("dict", "OrderedDict", "defaultdict", "named tuple", "list", "tuple")


def _pick_device(mod, draw, ctx):
    import torch

    found = []
    cuda, mps = torch.cuda.is_available, torch.backends.mps.is_available
    try:
        for has_cuda, has_mps in draw.shuffled([(True, True), (True, False), (False, True), (False, False)]):
            torch.cuda.is_available = lambda has=has_cuda: has
            torch.backends.mps.is_available = lambda has=has_mps: has
            found.append([has_cuda, has_mps, typed(mod.pick_device())])
    finally:
        torch.cuda.is_available, torch.backends.mps.is_available = cuda, mps
    return found


def _device_of_tensors(mod, draw, ctx):
    """Tensors on the CPU and moved off it, in a drawn order (the answers are the hand-in's to find, each time)."""
    tensors = []
    for _ in range(4):
        t = tensor(draw)
        tensors += [t, t.detach().to(META)]
    return [typed(mod.device_of(t)) for t in draw.shuffled(tensors)]


def _device_of_modules(mod, draw, ctx):
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(draw.int(1, 4), 2), nn.ReLU())
    moved = nn.Sequential(nn.Linear(draw.int(1, 4), 2), nn.ReLU()).to(META)
    buffers = nn.Module()
    buffers.register_buffer("mean", torch.zeros(draw.int(1, 4)))
    kept = nn.Module()
    kept.register_buffer("mean", torch.zeros(draw.int(1, 4)))
    modules = [model, moved, buffers.to(META), kept, nn.ReLU()]
    return [typed(mod.device_of(m)) for m in draw.shuffled(modules)]


def _device_of_others(mod, draw, ctx):
    import numpy as np

    others = [draw.int(-9, 9), draw.int(-9, 9) / 4, "x", None, [draw.int(0, 5)], (1, 2), np.float32(draw.int(0, 9)),
              np.int64(draw.int(-5, 5)), np.bool_(draw.int(0, 1))]
    return [typed(mod.device_of(v)) for v in draw.shuffled(others)]


def _device_of_scenes(mod, draw, ctx):
    """The seed's questions: assignment, Module.to, a Tensor.to thrown away, 0 + sum(), .float()."""
    import torch
    from torch import nn

    a = torch.ones(draw.int(1, 4))
    b = a
    a = a.to(META)
    linear = nn.Linear(draw.int(1, 4), 1)
    linear.to(META)
    t = torch.ones(2)
    t.to(META)
    total = 0 + torch.tensor([True, False, True], device=META).sum()
    return {"assignment": [typed(mod.device_of(x)) for x in (b, a)],
            "module_to": [typed(mod.device_of(x)) for x in (linear, t)],
            "float": [typed(mod.device_of(x)) for x in (total, total.float())]}


def _device_of_accelerator(mod, draw, ctx):
    import torch
    from torch import nn

    acc = ctx.accelerator
    a = torch.ones(draw.int(1, 4))
    b = a
    a = a.to(acc)
    return {"model": [typed(mod.device_of(nn.Sequential(nn.Linear(draw.int(1, 4), 2), nn.ReLU()).to(acc))),
                      typed(mod.device_of(torch.ones(3, 4).to(acc).float()))],
            "assignment": [typed(mod.device_of(x)) for x in (a, b, a.cpu())]}


def _to_device_nests(mod, draw, ctx):
    found = []
    for _ in range(4):
        obj = nest(draw)
        out = mod.to_device(obj, META)
        found.append({"out": typed(out, values=False), "input": typed(obj)})
    return found


def _to_device_kinds(mod, draw, ctx):
    found = {}
    for kind in draw.shuffled(CONTAINERS):
        inner = Pair(tensor(draw, "float32", 1), tensor(draw, "int64", 1))
        items = {"batch": inner, "step": draw.int(0, 9)}
        obj = _container(kind, items, inner)
        found[kind] = {"out": typed(mod.to_device(obj, META), values=False), "input": typed(obj)}
    return found


def _container(kind: str, items: dict, inner):
    if kind in ("dict", "OrderedDict"):
        return dict(items) if kind == "dict" else OrderedDict(items)
    if kind == "defaultdict":
        return defaultdict(list, items)
    return {"named tuple": Pair(inner, 3), "list": [inner, 3], "tuple": (inner, 3)}[kind]


def _to_device_accelerator(mod, draw, ctx):
    obj = nest(draw)
    return {"out": typed(mod.to_device(obj, ctx.accelerator)), "input": typed(obj)}


def _to_python_nests(mod, draw, ctx):
    found = []
    for _ in range(4):
        obj = nest(draw)
        found.append({"out": typed(mod.to_python(obj)), "input": typed(obj)})
    return found


def _to_python_scalars(mod, draw, ctx):
    """Keyed as the check's cases are: 'torch.DTYPE-REQUIRES_GRAD'."""
    cases = [(dtype, False) for dtype in draw.shuffled(DTYPES)] + [("float32", True)]
    return {f"torch.{dtype}-{grad}": typed(mod.to_python(tensor(draw, dtype, 0, grad=grad))) for dtype, grad in cases}


def _to_python_numpy(mod, draw, ctx):
    import numpy as np

    values = (np.float64(draw.int(0, 99) / 8), np.float32(draw.int(0, 99) / 4), np.int64(draw.int(-9, 9)),
              np.bool_(draw.int(0, 1)))
    return {str(v.dtype): typed(mod.to_python(v)) for v in draw.shuffled(values)}


def _to_python_grad(mod, draw, ctx):
    import torch

    loss = (torch.ones(draw.int(1, 4), requires_grad=True) * draw.int(1, 5)).sum()
    return typed(mod.to_python([[loss], [tensor(draw, "float32", 0)], [tensor(draw, "int64", 0)],
                                tensor(draw, "float32", 1, grad=True)]))


def _to_python_accelerator(mod, draw, ctx):
    import torch

    acc = ctx.accelerator
    moved = [t.to(acc) for t in (tensor(draw, "float32", 1), tensor(draw, "int64", 0), tensor(draw, "bool", 1))]
    correct = torch.rand(4, generator=draw.generator()).to(acc) < 0.5
    return typed(mod.to_python([moved, 0 + correct.sum() / 4, 0 + correct.float().mean()]))


def _write(t) -> None:
    """Change every value of ``t`` in place (a copy that shares its memory changes with it)."""
    import torch

    with torch.no_grad():
        if t.dtype == torch.bool:
            t.logical_not_()
        elif t.numel():
            t.add_(1)


def _host_copy(mod, draw, ctx):
    """Each result, then each written in turn: what the other holds afterwards shows shared memory."""
    import torch

    found = []
    for _ in range(5):
        t = tensor(draw)
        out = mod.host_copy(t)
        case = {"out": typed(out)}
        _write(t)
        case["out_after_input_written"] = typed(out)
        if isinstance(out, torch.Tensor) and out is not t:
            _write(out)
        case["input_after_out_written"] = typed(t)
        found.append(case)
    return found


def _host_copy_view(mod, draw, ctx):
    import torch

    base = torch.rand(3, 4, generator=draw.generator()) * 10
    out = mod.host_copy(base[:, draw.int(0, 3)])
    found = {"out": typed(out)}
    if isinstance(out, torch.Tensor):
        _write(out)
    found["base_after_out_written"] = typed(base)
    return found


def _host_copy_accelerator(mod, draw, ctx):
    t = (tensor(draw, "float32", 2, grad=False).to(ctx.accelerator) * 2).requires_grad_()
    return typed(mod.host_copy(t))


RECORDS = {"pick_device": _pick_device, "device_of.tensors": _device_of_tensors,
           "device_of.modules": _device_of_modules, "device_of.others": _device_of_others,
           "device_of.scenes": _device_of_scenes,
           "device_of.accelerator": _device_of_accelerator, "to_device.nests": _to_device_nests,
           "to_device.kinds": _to_device_kinds, "to_device.accelerator": _to_device_accelerator,
           "to_python.nests": _to_python_nests, "to_python.scalars": _to_python_scalars,
           "to_python.numpy": _to_python_numpy, "to_python.grad": _to_python_grad,
           "to_python.accelerator": _to_python_accelerator, "host_copy": _host_copy, "host_copy.view": _host_copy_view,
           "host_copy.accelerator": _host_copy_accelerator}


def _device_type(node):
    return {"t": "device", "v": node["v"].split(":")[0]} if node.get("t") == "device" else node


def _pick(cuda: bool, mps: bool, exact: bool):
    def pick(cases):
        found = next(r for c, m, r in cases if (c, m) == (cuda, mps))
        return found if exact else _device_type(found)
    return project(pick)


def _scalar(found_key: str):
    return project(lambda found: found[found_key])


def _each(key):
    return project(lambda found: [case[key] for case in found])


FACETS = {
    **{f"pick_device[{cuda}-{mps}]": Facet(f"pick_device() with CUDA {cuda} and MPS {mps}: the device type, a "
                                           "torch.device", _pick(cuda, mps, exact=False), record="pick_device",
                                           rests=CONSTANT)
       for cuda in (True, False) for mps in (True, False)},
    "pick_device.exact": Facet("the very devices pick_device() returns (no index)", record="pick_device",
                               rests=CONSTANT),
    "device_of.tensors": Facet("device_of of tensors on the CPU and moved off it, in a drawn order"),
    "device_of.modules": Facet("device_of of modules: the first parameter's device, then the first buffer's, "
                               "else None (in a drawn order)"),
    "device_of.others": Facet("device_of of values that are neither tensors nor modules: None", rests=CONSTANT),
    **{f"device_of.{scene}": Facet(f"device_of after {about}", _scalar(scene), record="device_of.scenes",
                                   rests=CONSTANT)
       for scene, about in (("assignment", "`b = a; a = a.to(device)`"),
                            ("module_to", "Module.to, and a Tensor.to thrown away"),
                            ("float", "0 + sum() and .float()"))},
    "device_of.accelerator": Facet("device_of of a model moved to the accelerator, and of .float() there",
                                   _scalar("model"), rests=CONSTANT),
    "device_of.accelerator.assignment": Facet("device_of after `b = a; a = a.to(device)`, and of a.cpu()",
                                              _scalar("assignment"), record="device_of.accelerator", rests=CONSTANT),
    "to_device.nests": Facet("to_device of nests of tensors: every tensor moved, the structure kept", _each("out")),
    **{f"to_device.kinds[{kind}]": Facet(f"to_device of a {kind}", project(lambda f, k=kind: f[k]["out"]),
                                         record="to_device.kinds") for kind in CONTAINERS},
    "to_device.input": Facet("the nests given to to_device, afterwards: unchanged", _each("input"),
                             record="to_device.nests", rests=PROPERTY),
    "to_device.accelerator": Facet("to_device to the accelerator"),
    "to_python.nests": Facet("to_python of nests of tensors: plain Python values, the structure kept", _each("out")),
    "to_python.input": Facet("the nests given to to_python, afterwards: unchanged", _each("input"),
                             record="to_python.nests", rests=PROPERTY),
    **{f"to_python.scalars[torch.{dtype}-{grad}]": Facet(f"to_python of a 0-d {dtype} tensor"
                                                         + (" that requires grad" if grad else ""),
                                                         _scalar(f"torch.{dtype}-{grad}"), record="to_python.scalars")
       for dtype, grad in [(d, False) for d in DTYPES] + [("float32", True)]},
    **{f"to_python.numpy[{dtype}]": Facet(f"to_python of a NumPy {dtype} scalar", _scalar(dtype),
                                          record="to_python.numpy")
       for dtype in ("float64", "float32", "int64", "bool")},
    "to_python.grad": Facet("to_python of tensors that require grad"),
    "to_python.accelerator": Facet("to_python of accelerator tensors"),
    "host_copy": Facet("host_copy's result: a CPU tensor of t's values and dtype, without autograd history",
                       _each("out")),
    "host_copy.independent": Facet(
        "host_copy's result shares no memory with t (each written in turn, the other read)",
        project(lambda found: [[c["out_after_input_written"], c["input_after_out_written"]] for c in found]),
        record="host_copy"),
    "host_copy.view": Facet("host_copy of a view: the view's values only, in memory of their own"),
    "host_copy.accelerator": Facet("host_copy of an accelerator tensor"),
}
