"""Records of exercise 3, model: the CNN's layers as they act, its initial weights under a fresh seed, its output.

The layers are recorded as what they do to an input (each leaf layer's class
and output shape, in the order they run), so ``padding='same'`` and
``padding=1`` agree, and a nested ``nn.Sequential`` is looked into, as the
checks do. Self-consistency facts (two calls give two models, dropout draws
only in train mode) are recorded as the values they produce. The dropout rates,
which no output in eval mode shows, are read from the source (kata/audit/declared.py).
"""

from __future__ import annotations

import math

from kata.audit import CONSTANT, PROPERTY, SHAPE, SOURCE, Facet, project, tensor_values, typed
from kata.audit.declared import dropouts_problem, read
from kata.i18n import _, say

__all__ = ["FACETS", "RECORDS", "SOURCE_READING"]


def _leaves(net):
    return [m for m in net.modules() if not list(m.children())]


def _built(mod, seed: int):
    import torch

    torch.manual_seed(seed)
    return mod.build_model()


def _kind(mod, draw, ctx):
    from torch import nn

    net = mod.build_model()
    return {"sequential": isinstance(net, nn.Sequential), "module": isinstance(net, nn.Module)}


def _layers(mod, draw, ctx):
    """Each leaf layer's class and output shape, in the order they run on a random batch."""
    import torch

    net = _built(mod, draw.seed()).eval()
    ran = []
    hooks = [m.register_forward_hook(lambda m, _, out: ran.append([type(m).__name__, list(getattr(out, "shape", []))]))
             for m in _leaves(net)]
    with torch.no_grad():
        net(torch.rand(1, 3, 64, 64, generator=draw.generator()))
    for hook in hooks:
        hook.remove()
    return {"ran": ran}


def _count(mod, draw, ctx):
    return sum(p.numel() for p in mod.build_model().parameters())


def _output(mod, draw, ctx):
    import torch

    batch = draw.int(1, 3)
    net = _built(mod, draw.seed()).eval()
    with torch.no_grad():
        return typed(net(torch.rand(batch, 3, 64, 64, generator=draw.generator())))


def _initial(mod, draw, ctx):
    """The weighted layers' parameters under a fresh seed (the reference's are the book's)."""
    net = _built(mod, draw.seed())
    weighted = [m for m in _leaves(net) if list(m.parameters(recurse=False))]
    return [[type(m).__name__, [typed(p, values=True if i == len(weighted) - 1 else "digest")
                                for p in m.parameters(recurse=False)]] for i, m in enumerate(weighted)]


def _placement(mod, draw, ctx):
    return sorted({p.device.type for p in mod.build_model().parameters()})


def _fresh(mod, draw, ctx):
    """Two models, the first one's parameters written to: the second's, before and after."""
    import torch

    first, second = mod.build_model(), mod.build_model()
    before = [typed(p, "digest") for p in second.parameters()]
    with torch.no_grad():
        for p in first.parameters():
            p.add_(1.0)
    after = [typed(p, "digest") for p in second.parameters()]
    with torch.no_grad():   # undone: a build_model that hands out one model must not carry this into other records
        for p in first.parameters():
            p.sub_(1.0)
    return {"before": before, "after": after}


def _dropout(mod, draw, ctx):
    import torch

    net = mod.build_model()
    x = torch.rand(2, 3, 64, 64, generator=draw.generator())
    torch.manual_seed(draw.seed())
    net.train()
    a, b = net(x), net(x)
    net.eval()
    with torch.no_grad():
        c, d = net(x), net(x)
    return [typed(v) for v in (a, b, c, d)]


RECORDS = {"kind": _kind, "layers": _layers, "count": _count, "output": _output, "initial": _initial,
           "placement": _placement, "fresh": _fresh, "dropout": _dropout}


def SOURCE_READING(files: dict[str, str]) -> dict:  # noqa: N802 - the name kata.audit looks up
    """What model.py (and the hand-in's helpers) declares: kata/audit/declared.py."""
    return read(files, "model")


def _probabilities(node):
    values = tensor_values(node) if node.get("t") == "tensor" else None
    inside = bool(values is not None and values.size and ((values > 0) & (values < 1)).all())
    return {"t": node.get("t"), "dtype": node.get("dtype"), "shape": node.get("shape"), "in_0_1": inside}


def _convolutions(found):
    return found[:-1]


def _last_layer(mine, ref):
    """The Linear layer: PyTorch's default initialisation (uniform in +-1/sqrt(in_features)), as the check has it."""
    (name, params), (ref_name, ref_params) = mine[-1], ref[-1]
    if name != ref_name or [p["shape"] for p in params] != [p["shape"] for p in ref_params]:
        return say("the last weighted layer is a {name}, the reference's a {ref}", name=name, ref=ref_name)
    weight, bias = (tensor_values(p) for p in params)
    bound = 1 / math.sqrt(params[0]["shape"][-1])
    if abs(weight).max() > bound or abs(bias).max() > bound or weight.std() <= 0.3 * bound:
        return _("the last layer's weights are not PyTorch's default initialisation")
    return None


def _same_model(mine, _ref):
    return None if mine["before"] == mine["after"] else _("writing into one model changed the other")


def _dropout(mine, _ref):
    a, b, c, d = (tensor_values(n) for n in mine)
    if a is None or b is None or (a.shape == b.shape and (a == b).all()):
        return _("in train mode two forward passes gave the same output")
    if c is None or d is None or c.shape != d.shape or not (c == d).all():
        return _("in eval mode the output changed between calls")
    return None


FACETS = {
    "kind": Facet("build_model() returns an nn.Sequential", rests=CONSTANT),
    "layers": Facet("the leaf layers, in order, and the shape each one gives", project(lambda f: f["ran"]),
                    rests=CONSTANT),
    "declared": Facet("the dropout rates build_model's source declares", dropouts_problem, record="source",
                      rests=SOURCE),
    "count": Facet("the number of parameters", rests=CONSTANT),
    "output": Facet("the output: float32 probabilities in (0, 1), shape (N, 1)", project(_probabilities), rests=SHAPE),
    "initial.convolutions": Facet("the convolutions' initial weights under a fresh seed: the book's",
                                  project(_convolutions), record="initial"),
    "initial.linear": Facet("the Linear layer's initial weights: PyTorch's default", _last_layer, record="initial",
                            rests=PROPERTY),
    "placement": Facet("a new model's parameters are on the CPU", rests=CONSTANT),
    "fresh": Facet("each call builds a new model, sharing no parameters", _same_model, rests=PROPERTY),
    "dropout": Facet("dropout draws in train mode only", _dropout, rests=PROPERTY),
}
