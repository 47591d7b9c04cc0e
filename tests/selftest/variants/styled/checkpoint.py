"""The checkpoint as a list of four parts, written through an open file, with functools.singledispatch."""

from functools import singledispatch

import torch


@singledispatch
def _plain(value) -> float:
    return float(value)


@_plain.register
def _(value: torch.Tensor) -> float:
    return value.detach().to("cpu").item()


def save_checkpoint(path, model, optimizer, epoch, history):
    parts = [model.state_dict(), optimizer.state_dict(), int(epoch), [list(map(_plain, h)) for h in history]]
    with open(path, "wb") as f:
        torch.save(parts, f)


def _device_of(model):
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def load_checkpoint(path, model, optimizer=None, device=None):
    if device is not None:
        model.to(device)
    target = _device_of(model)
    with open(path, "rb") as f:
        model_state, optimizer_state, epoch, history = torch.load(f, map_location=target, weights_only=True)
    model.load_state_dict(model_state)
    if optimizer is not None:
        optimizer.load_state_dict(optimizer_state)
    return epoch, [list(h) for h in history]
