"""More of a learner's devices (issue #19): singledispatch-free isinstance chains, a mapping rebuilt
with its own class (OrderedDict stays one, a defaultdict keeps its factory), t.cpu() then .clone()."""

from collections import defaultdict

import numpy as np
import torch
from torch import nn


def pick_device():
    for available, name in ((torch.cuda.is_available, "cuda"), (torch.backends.mps.is_available, "mps")):
        if available():
            return torch.device(name)
    return torch.device("cpu")


def device_of(obj):
    if isinstance(obj, torch.Tensor):
        return obj.device
    if isinstance(obj, nn.Module):
        for t in [*obj.parameters(), *obj.buffers()]:
            return t.device
    return None


def _walk(obj, leaf):
    if isinstance(obj, defaultdict):
        out = defaultdict(obj.default_factory)
        for k, v in obj.items():
            out[k] = _walk(v, leaf)
        return out
    if isinstance(obj, dict):
        return obj.__class__((k, _walk(v, leaf)) for k, v in obj.items())
    if isinstance(obj, tuple):
        items = [_walk(v, leaf) for v in obj]
        return obj.__class__(*items) if hasattr(obj, "_asdict") else tuple(items)
    if isinstance(obj, list):
        return list(map(lambda v: _walk(v, leaf), obj))
    return leaf(obj)


def to_device(obj, device):
    def move(x):
        if isinstance(x, torch.Tensor):
            return x.to(device)
        return x
    return _walk(obj, move)


def to_python(obj):
    def plain(x):
        if isinstance(x, torch.Tensor):
            values = x.detach().cpu()
            return values.tolist() if values.ndim else values.item()
        if isinstance(x, (np.floating, np.integer, np.bool_)):
            return x.item()
        return x
    return _walk(obj, plain)


def host_copy(t):
    return t.detach().cpu().clone()
