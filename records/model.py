"""Records of exercise 3, model: the CNN build_model() builds (each layer: its class, the kind the checks name it by,
its settings as set), its initial weights, what it outputs; the checks ask them of the book's CNN too."""

from __future__ import annotations

import torch
from torch import nn

from kata.records import BEHAVIOUR, CONSTANT, PROPERTY, SHAPE, SOURCE, WORK, record
from kata.records.declared import read
from kata.records.strategies import batch_sizes
from kata.records.wire import typed

KINDS = (("Conv2d", nn.Conv2d), ("pool", (nn.MaxPool2d, nn.AvgPool2d)), ("Dropout", nn.Dropout),
         ("Linear", nn.Linear), ("Flatten", nn.Flatten))


def leaves(net) -> list:   # the leaf layers in order (a nested nn.Sequential is looked into)
    return [m for m in net.modules() if not list(m.children())]


def settings(layer) -> dict:
    kind = next((k for k, cls in KINDS if isinstance(layer, cls)), None)
    found = {k: v for k, v in vars(layer).items() if not k.startswith("_")}   # kernel_size, stride, padding, p, ...
    found |= {"p": getattr(layer, "p", None)} if kind == "Dropout" else {}    # p as the layer shows it
    return dict(found, name=type(layer).__name__, kind=kind, bias=getattr(layer, "bias", None) is not None)


def forward(net, x) -> dict:
    """net(x): {"out": y}, or {"stuck": ...} where a leaf layer can't take what it gets (which, the shapes before)."""
    try:
        return {"out": net(x)}
    except RuntimeError as err:
        error = err
    trail, out = [list(x.shape)], x
    for index, layer in enumerate(leaves(net)):
        try:
            out = layer(out)
        except RuntimeError as err:
            return {"stuck": {"index": index, "layer": settings(layer), "shape": list(out.shape), "trail": trail,
                              "error": str(err).splitlines()[0]}}
        trail += [list(out.shape)] if list(out.shape) != trail[-1] else []
    raise error


@record(rests=(CONSTANT, PROPERTY, BEHAVIOUR))
def built(model):
    """build_model() with nn.Module's moves spied on: the model's kind, layers, size, place and moves; a second call"""
    moves, saved = [], {name: getattr(nn.Module, name) for name in ("to", "cuda", "cpu", "to_empty")}
    for name, move in saved.items():
        setattr(nn.Module, name, lambda self, *args, _name=name, _move=move, **kwargs: moves.append(
            f".{_name}({', '.join(map(repr, args))})") or _move(self, *args, **kwargs))
    try:
        net = model.build_model()
    finally:
        for name, method in saved.items():
            setattr(nn.Module, name, method)
    found = {"kind": type(net).__name__, "sequential": isinstance(net, nn.Sequential), "moves": moves}
    if isinstance(net, nn.Module):
        second = model.build_model()
        found.update(layers=[settings(m) for m in leaves(net)], count=sum(p.numel() for p in net.parameters()),
                     devices=sorted({p.device.type for p in net.parameters()}), same=second is net,
                     shared=bool({id(p) for p in net.parameters()} & {id(p) for p in second.parameters()}),
                     same_weights=isinstance(second, nn.Module) and any(True for _ in net.parameters()) and all(
                         a.shape == b.shape and torch.equal(a.detach().cpu(), b.detach().cpu())
                         for a, b in zip(net.parameters(), second.parameters(), strict=False)))
    return found


@record(lambda draw: [(batch, draw.seed()) for batch in draw.examples(batch_sizes, explicit=[1] * 4)], rests=SHAPE)
def output(model, batch, seed):
    """The model built under a drawn seed, in eval mode, on random 3x64x64 images (4 more models on one image each)"""
    torch.manual_seed(seed)
    net = model.build_model().eval()
    with torch.no_grad():
        return forward(net, torch.rand(batch, 3, 64, 64, generator=torch.Generator().manual_seed(seed)))


@record(lambda draw: [1, draw.seed()], rests=(WORK, PROPERTY))
def initial(model, seed):
    """The layers with weights built under torch.manual_seed(seed): settings, shapes, digests; the last one's values"""
    torch.manual_seed(seed)
    weighted = [m for m in leaves(model.build_model()) if list(m.parameters(recurse=False))]
    return {"weighted": [dict(settings(m), shapes=[list(p.shape) for p in m.parameters(recurse=False)],
                              sha=[typed(p, "digest")["sha"] for p in m.parameters(recurse=False)]) for m in weighted],
            "last": list(weighted[-1].parameters(recurse=False)) if weighted else []}


@record(lambda draw: [draw.seed()], rests=PROPERTY)
def dropout(model, seed):
    """Two forward passes of one batch of 4 random images in train() mode, then two in eval() mode"""
    net, x = model.build_model(), torch.rand(4, 3, 64, 64, generator=torch.Generator().manual_seed(seed))
    torch.manual_seed(seed)
    found = {"train": [forward(net.train(), x), forward(net, x)]}
    with torch.no_grad():
        return dict(found, eval=[forward(net.eval(), x), forward(net, x)])


@record(rests=SOURCE)
def declared(files):
    """What model.py (and the helpers beside it) declares, read from its source: each dropout's p"""
    return read(files, "model")
