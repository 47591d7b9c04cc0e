"""Did the learner's code change what it was given? One snapshot, one comparison.

``snapshot(obj)`` records a nest of lists, tuples and dicts: every container
and leaf by identity, and every tensor's device, ``requires_grad`` and values.
``change(before, obj)`` says what differs now, as a :class:`Change` with a path
(``history[2][0]``) and a kind, so a check can name the lesson that goes with
it (a list assigned into, a tensor detached in place, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from kata.i18n import N_, say

__all__ = ["Change", "Snapshot", "change", "snapshot"]


@dataclass(frozen=True)
class Snapshot:
    obj: Any
    items: tuple | None          # (key, Snapshot) for a container; None for a leaf
    tensor: tuple | None = None  # (device, requires_grad, a copy of the values) for a tensor


@dataclass(frozen=True)
class Change:
    """What changed, where: kind is one of 'replaced' (another object at that place),
    'resized' (a container with other keys or length), 'requires_grad', 'device',
    'values' (a tensor modified in place)."""

    path: str          # "history[2][0]"
    keys: tuple        # (2, 0): the keys from the top to the place that changed
    kind: str
    before: Any
    after: Any

    def __str__(self) -> str:
        template = {"replaced": N_("{path} now holds another object"), "resized": N_("{path} has other items"),
                    "requires_grad": N_("{path} had requires_grad={before} and now has {after}"),
                    "device": N_("{path} moved from {before} to {after} in place"),
                    "values": N_("{path} had its values changed in place")}[self.kind]
        return say(template, path=self.path, before=self.before, after=self.after)


def _items(obj):
    if isinstance(obj, dict):
        return list(obj.items())
    if isinstance(obj, (list, tuple)):
        return list(enumerate(obj))
    return None


def snapshot(obj) -> Snapshot:
    items = _items(obj)
    if items is not None:
        return Snapshot(obj, tuple((key, snapshot(value)) for key, value in items))
    if isinstance(obj, torch.Tensor):
        return Snapshot(obj, None, (obj.device, obj.requires_grad, obj.detach().clone()))
    return Snapshot(obj, None)


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.device != b.device:
        a, b = a.cpu(), b.cpu()
    return bool(torch.equal(a, b)) or (a.is_floating_point() and bool(torch.equal(a.isnan(), b.isnan()))
                                        and bool(torch.equal(a.nan_to_num(), b.nan_to_num())))


def change(before: Snapshot, obj, path: str = "obj", keys: tuple = ()) -> Change | None:
    """The first difference between ``before`` and ``obj`` now, or None."""
    if obj is not before.obj:
        return Change(path, keys, "replaced", before.obj, obj)
    if before.items is not None:
        now = _items(obj)
        if now is None or [k for k, _ in now] != [k for k, _ in before.items]:
            return Change(path, keys, "resized", [k for k, _ in before.items], [k for k, _ in now or []])
        for (key, inner), (_, value) in zip(before.items, now, strict=True):
            found = change(inner, value, f"{path}[{key!r}]", (*keys, key))
            if found is not None:
                return found
        return None
    if before.tensor is not None:
        device, grad, values = before.tensor
        if obj.requires_grad != grad:
            return Change(path, keys, "requires_grad", grad, obj.requires_grad)
        if obj.device != device:
            return Change(path, keys, "device", device, obj.device)
        if not _same_values(obj.detach(), values):
            return Change(path, keys, "values", values, obj.detach().clone())
    return None
