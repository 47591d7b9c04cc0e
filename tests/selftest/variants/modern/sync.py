"""A third independent implementation, in today's idioms: sync."""

import torch


def train_epoch(model, dl, loss_fn, optimizer, device):
    model.train()
    stats = torch.zeros(2, device=device)
    n = 0
    for x, y in dl:
        # non_blocking: a blocking copy from the host makes the host wait for the device (a sync on CUDA)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        p = model(x).flatten()
        loss = loss_fn(p, y.to(torch.float32))
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            stats[0] += loss * y.numel()
            stats[1] += (p.ge(0.5) == y.bool()).sum()
        n += y.numel()
    loss_sum, correct = stats.cpu().numpy()
    return float(loss_sum) / n, float(correct) / n
