"""Inputs the records share, drawn from a record's :class:`~kata.audit.Draw`: tensors, nests of them,
tiny models and DataLoaders (the checks' doubles, without their spies)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, namedtuple

__all__ = ["DTYPES", "Pair", "half_model", "loader", "nest", "tensor", "tiny_data", "tiny_model"]

Pair = namedtuple("Pair", ["first", "second"])
DTYPES = ("float32", "float64", "int64", "int32", "bool")


def tensor(draw, dtype: str | None = None, ndim: int | None = None, grad: bool | None = None):
    """A small CPU tensor of a drawn dtype and shape (0-d included), values from the draw."""
    import torch

    dtype = getattr(torch, dtype or draw.choice(DTYPES))
    ndim = draw.int(0, 2) if ndim is None else ndim
    shape = [draw.int(1, 3) for _ in range(ndim)]
    g = draw.generator()
    if dtype.is_floating_point:
        t = (torch.randn(shape, generator=g, dtype=torch.float64) * 8).to(dtype)
        if grad if grad is not None else draw.int(0, 3) == 0:
            t.requires_grad_()
    elif dtype == torch.bool:
        t = torch.rand(shape, generator=g) < 0.5
    else:
        t = torch.randint(-50, 50, shape, generator=g, dtype=dtype)
    return t


def _leaf(draw):
    kind = draw.int(0, 5)
    if kind <= 2:
        return tensor(draw)
    return (draw.int(-9, 9), draw.int(-90, 90) / 8, f"s{draw.int(0, 99)}", None)[kind - 2]


def nest(draw, depth: int = 3):
    """A nest of lists, tuples, named tuples and dicts (plain, ordered, default) with tensors and plain leaves."""
    if depth == 0 or draw.int(0, 3) == 0:
        return _leaf(draw)
    kind = draw.int(0, 5)
    items = [nest(draw, depth - 1) for _ in range(draw.int(1, 3))]
    if kind == 0:
        return items
    if kind == 1:
        return tuple(items)
    if kind == 2:
        return Pair(items[0], nest(draw, depth - 1))
    pairs = [(f"k{draw.int(0, 9)}{i}", v) for i, v in enumerate(items)]
    return (dict(pairs), OrderedDict(pairs), defaultdict(list, pairs))[kind - 3]


def tiny_model(seed: int, dropout: bool = False):
    """The checks' tiny model (Flatten, Linear, Sigmoid on 3x4x4 inputs), initialised from ``seed``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers = [nn.Flatten(), nn.Linear(3 * 4 * 4, 1), nn.Sigmoid()]
    return nn.Sequential(*([nn.Dropout(0.5)] if dropout else []) + layers)


def half_model():
    """A model that says exactly 0.5 for every input, however it is trained (its one weight gets a zero gradient)."""
    import torch
    from torch import nn

    class Half(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(3 * 4 * 4, 1))

        def forward(self, x):
            return 0.5 + 0.0 * (x.flatten(1) @ self.weight)

    return Half()


def tiny_data(draw, n: int):
    """(x, y): n inputs of 3x4x4 and int64 labels (the mean of the first channel above one half)."""
    import torch

    g = draw.generator()
    x = torch.rand(n, 3, 4, 4, generator=g)
    return x, (x[:, 0].mean(dim=(1, 2)) > 0.5).long()


def loader(draw, n: int, batch: int):
    """A DataLoader of ``n`` drawn samples in batches of ``batch``, in order (the DataLoader a learner's code meets
    in ordinary use, nothing that tells the audit's records from it). One more sample where the last batch would
    hold one alone: that case is its own check's (tests/test_training.py, any sizes), not every record's."""
    from torch.utils.data import DataLoader, TensorDataset

    n += n % batch == 1 and batch > 1
    return DataLoader(TensorDataset(*tiny_data(draw, n)), batch_size=batch)
