"""A learner's devices, written from the stub's specification alone (issue #19): type hints,
torch.is_tensor, next(..., None), a plain dict for every mapping (the contract allows it),
._make for named tuples, and a host copy that clones first."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn


def pick_device() -> torch.device:
    if torch.cuda.is_available():
        name = "cuda"
    elif torch.backends.mps.is_available():
        name = "mps"
    else:
        name = "cpu"
    return torch.device(name)


def device_of(obj: Any) -> torch.device | None:
    if torch.is_tensor(obj):
        return obj.device
    if isinstance(obj, nn.Module):
        first = next(obj.parameters(), None)
        if first is None:
            first = next(obj.buffers(), None)
        return None if first is None else first.device
    return None


def _map(obj: Any, leaf) -> Any:
    if isinstance(obj, dict):
        return {key: _map(value, leaf) for key, value in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)._make(_map(value, leaf) for value in obj)
    if isinstance(obj, list):
        return [_map(value, leaf) for value in obj]
    if isinstance(obj, tuple):
        return tuple(_map(value, leaf) for value in obj)
    return leaf(obj)


def to_device(obj: Any, device: torch.device | str) -> Any:
    return _map(obj, lambda x: x.to(device=device) if torch.is_tensor(x) else x)


def _plain(x: Any) -> Any:
    if torch.is_tensor(x):
        x = x.detach().to("cpu")
        if x.dim() == 0:
            return x.item()
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def to_python(obj: Any) -> Any:
    return _map(obj, _plain)


def host_copy(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().cpu()
