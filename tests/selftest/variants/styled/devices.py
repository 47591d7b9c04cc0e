"""Where tensors live: an independent implementation (not the reference's)."""

from __future__ import annotations

import numbers
from collections import OrderedDict
from collections.abc import Mapping
from functools import singledispatch
from typing import Any

import numpy as np
import torch
from torch import nn


def pick_device() -> torch.device:
    for kind, available in (("cuda", torch.cuda.is_available), ("mps", torch.backends.mps.is_available)):
        if available():
            return torch.device(kind)
    return torch.device("cpu")


def device_of(obj: Any) -> torch.device | None:
    if isinstance(obj, torch.Tensor):
        return obj.device
    if isinstance(obj, nn.Module):
        first = next(iter(obj.parameters()), None)
        if first is None:
            first = next(iter(obj.buffers()), None)
        return None if first is None else first.device
    return None


def _is_named_tuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _map(obj: Any, leaf) -> Any:
    if isinstance(obj, Mapping):
        items = [(key, _map(value, leaf)) for key, value in obj.items()]
        if type(obj) is OrderedDict:
            return OrderedDict(items)
        try:
            rebuilt = obj.copy()
            rebuilt.clear()
            rebuilt.update(items)
            return rebuilt
        except (AttributeError, TypeError):
            return dict(items)
    if _is_named_tuple(obj):
        return type(obj)._make(_map(value, leaf) for value in obj)
    if isinstance(obj, tuple):
        return tuple(_map(value, leaf) for value in obj)
    if isinstance(obj, list):
        return [_map(value, leaf) for value in obj]
    return leaf(obj)


def to_device(obj: Any, device) -> Any:
    return _map(obj, lambda x: x.to(device) if isinstance(x, torch.Tensor) else x)


@singledispatch
def _plain(value):
    return value


@_plain.register
def _(value: torch.Tensor):
    host = value.detach().to("cpu")
    return host.item() if host.dim() == 0 else host.tolist()


@_plain.register
def _(value: np.generic):
    return value.item()


def to_python(obj: Any) -> Any:
    def leaf(x):
        out = _plain(x)
        if isinstance(out, numbers.Number) or not isinstance(x, (torch.Tensor, np.generic)):
            return out
        return out
    return _map(obj, leaf)


def host_copy(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().clone()
