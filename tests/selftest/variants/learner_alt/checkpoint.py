"""More of a learner's checkpoint: a tuple of the two states and a dict of the rest, each entry made a float
through a float64 tensor, the map_location given as a string, the optimizer's state loaded before the
model's (after the move), the histories returned as a list."""

import torch


def save_checkpoint(path, model, optimizer, epoch, history):
    rest = {"epoch": int(epoch),
            "history": [[float(torch.as_tensor(v, dtype=torch.float64).detach().cpu()) for v in h] for h in history]}
    torch.save((model.state_dict(), optimizer.state_dict(), rest), path)


def load_checkpoint(path, model, optimizer=None, device=None):
    if device is not None:
        model = model.to(device)
    else:
        device = next(iter(model.parameters())).device
    device = torch.device(device)
    model_state, optimizer_state, rest = torch.load(path, map_location=str(device), weights_only=True)
    if optimizer is not None:
        optimizer.load_state_dict(optimizer_state)
    model.load_state_dict(model_state)
    return rest["epoch"], [list(h) for h in rest["history"]]
