"""A third independent implementation, in today's idioms: devices."""

from functools import singledispatch

import numpy as np
import torch
from torch import nn


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    elif torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def device_of(obj):
    if isinstance(obj, torch.Tensor):
        return obj.device
    if isinstance(obj, nn.Module):
        tensors = list(obj.parameters()) + list(obj.buffers())
        return tensors[0].device if tensors else None
    return None


@singledispatch
def _walk(obj, f):
    return f(obj)


@_walk.register
def _(obj: list, f):
    return [_walk(v, f) for v in obj]


@_walk.register
def _(obj: tuple, f):
    if hasattr(obj, "_fields"):
        return type(obj)(*[_walk(v, f) for v in obj])
    return tuple(_walk(v, f) for v in obj)


@_walk.register
def _(obj: dict, f):
    return {k: _walk(v, f) for k, v in obj.items()}


def to_device(obj, device):
    return _walk(obj, lambda x: x.to(device) if isinstance(x, torch.Tensor) else x)


def _py(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu")
        if x.dim() == 0:
            if x.dtype == torch.bool:
                return bool(x)
            if x.is_floating_point():
                return float(x)
            return int(x)
        return x.numpy().tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def to_python(obj):
    return _walk(obj, _py)


def host_copy(t):
    out = torch.empty(t.shape, dtype=t.dtype, device="cpu")
    out.copy_(t.detach())
    return out
