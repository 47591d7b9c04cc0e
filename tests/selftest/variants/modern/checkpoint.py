"""A third independent implementation, in today's idioms: the tutorial's flat keys, pathlib, torch.load's
default weights_only (True since PyTorch 2.6), the histories returned as a named tuple."""

from pathlib import Path
from typing import NamedTuple

import torch


class History(NamedTuple):
    loss_hist_train: list[float]
    loss_hist_valid: list[float]
    accuracy_hist_train: list[float]
    accuracy_hist_valid: list[float]


def save_checkpoint(path, model, optimizer, epoch, history):
    checkpoint = {"epoch": int(epoch), "model_state_dict": model.state_dict(),
                  "optimizer_state_dict": optimizer.state_dict()}
    checkpoint |= {name: [float(v) for v in values] for name, values in zip(History._fields, history)}
    torch.save(checkpoint, Path(path))


def load_checkpoint(path, model, optimizer=None, device=None):
    if device is None:
        device = next(model.parameters(), torch.empty(0)).device
    else:
        model.to(device)
    checkpoint = torch.load(Path(path), map_location=device)
    model.load_state_dict(checkpoint["model_state_dict"])
    if optimizer:
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    return checkpoint["epoch"], History(*(checkpoint[name] for name in History._fields))
