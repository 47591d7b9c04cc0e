"""One training epoch with a single sync at the end."""

import torch


def train_epoch(model, dl, loss_fn, optimizer, device):
    model.train()
    totals = torch.zeros(2, device=device)
    for x, y in dl:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        pred = model(x)[:, 0]
        loss = loss_fn(pred, y.float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        totals += torch.stack([loss.detach() * y.size(0), ((pred >= 0.5).float() == y).sum().to(totals.dtype)])
    loss_sum, correct = totals.tolist()
    n = len(dl.dataset)
    return loss_sum / n, correct / n
