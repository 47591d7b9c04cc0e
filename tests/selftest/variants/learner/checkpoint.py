"""A learner's checkpoint, from the stub's specification alone: the history as a dict of its four names,
each entry converted with .detach().cpu().item() or float(), the device a torch.device built from a string."""

import torch


def _to_float(x):
    if torch.is_tensor(x):
        return x.detach().cpu().item()
    return float(x)


def save_checkpoint(path, model, optimizer, epoch, history):
    loss_train, loss_valid, acc_train, acc_valid = history
    torch.save({
        "epoch": int(epoch),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "history": {
            "loss_hist_train": [_to_float(x) for x in loss_train],
            "loss_hist_valid": [_to_float(x) for x in loss_valid],
            "accuracy_hist_train": [_to_float(x) for x in acc_train],
            "accuracy_hist_valid": [_to_float(x) for x in acc_valid],
        },
    }, path)


def load_checkpoint(path, model, optimizer=None, device=None):
    if device is None:
        params = list(model.parameters())
        device = params[0].device if params else torch.device("cpu")
    else:
        device = torch.device(device)
        if next(model.parameters()).device != device:
            model.to(device)
    ckpt = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(ckpt["model"])
    if optimizer is not None:
        optimizer.load_state_dict(ckpt["optimizer"])
    h = ckpt["history"]
    return ckpt["epoch"], (h["loss_hist_train"], h["loss_hist_valid"], h["accuracy_hist_train"],
                           h["accuracy_hist_valid"])
