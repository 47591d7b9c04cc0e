"""A learner's one-sync epoch, from the stub's specification alone (issue #19): zero_grad first (with
set_to_none), enumerate, one 2-vector of sums on the device, labels compared as floats, one .tolist()."""

import torch


def train_epoch(model, dl, loss_fn, optimizer, device):
    model.train()
    sums = torch.zeros(2, device=device)
    for _, (x, y) in enumerate(dl):
        optimizer.zero_grad(set_to_none=True)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True).float()
        p = model(x)[:, 0]
        loss = loss_fn(p, y)
        loss.backward()
        optimizer.step()
        right = ((p.detach() >= 0.5).float() == y).sum()
        sums += torch.stack((loss.detach() * x.size(0), right))
    total_loss, total_right = sums.tolist()
    n = len(dl.dataset)
    return total_loss / n, total_right / n
