"""An independent implementation of exercise 7, written from CONTRACT.md alone: a dict of named parts,
the histories under their own names."""

import torch

NAMES = ("loss_hist_train", "loss_hist_valid", "accuracy_hist_train", "accuracy_hist_valid")


def _number(value):
    if isinstance(value, torch.Tensor):
        return float(value.detach().cpu())
    return float(value)


def save_checkpoint(path, model, optimizer, epoch, history):
    histories = {name: [_number(v) for v in values] for name, values in zip(NAMES, history)}
    torch.save({"format": "device-kata checkpoint", "epoch": int(epoch), "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "histories": histories}, path)


def load_checkpoint(path, model, optimizer=None, device=None):
    if device is None:
        first = next(model.parameters(), None)
        device = first.device if first is not None else torch.device("cpu")
    else:
        device = torch.device(device)
        model.to(device)
    saved = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(saved["model"])
    if optimizer is not None:
        optimizer.load_state_dict(saved["optimizer"])
    return saved["epoch"], tuple(list(saved["histories"][name]) for name in NAMES)
