"""An independent implementation of exercise 1, written from CONTRACT.md alone."""

import numbers

import numpy as np
import torch


def pick_device():
    for kind, available in (("cuda", torch.cuda.is_available), ("mps", torch.backends.mps.is_available)):
        if available():
            return torch.device(kind)
    return torch.device("cpu")


def device_of(obj):
    if torch.is_tensor(obj):
        return obj.device
    if isinstance(obj, torch.nn.Module):
        first = next(obj.parameters(), None)
        if first is None:
            first = next(obj.buffers(), None)
        return None if first is None else first.device
    return None


def _walk(obj, leaf):
    # Mappings come back as plain dicts, the same keys in the same order.
    if isinstance(obj, dict):
        return {key: _walk(value, leaf) for key, value in obj.items()}
    if isinstance(obj, tuple):
        items = [_walk(value, leaf) for value in obj]
        return type(obj)(*items) if hasattr(type(obj), "_fields") else tuple(items)
    if isinstance(obj, list):
        return [_walk(value, leaf) for value in obj]
    return leaf(obj)


def to_device(obj, device):
    return _walk(obj, lambda x: x.to(device) if torch.is_tensor(x) else x)


def _plain(x):
    if torch.is_tensor(x):
        x = x.detach().to("cpu")
        if x.dim() == 0:
            if x.dtype == torch.bool:
                return bool(x)
            return float(x) if x.is_floating_point() else int(x)
        return x.tolist()
    if isinstance(x, np.generic):
        if isinstance(x, np.bool_):
            return bool(x)
        return int(x) if isinstance(x, numbers.Integral) else float(x)
    return x


def to_python(obj):
    return _walk(obj, _plain)


def host_copy(t):
    return t.detach().cpu().clone()
