"""Exercise 8 from CONTRACT.md alone: contiguous validation blocks, separate device sums stacked at the end."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, Sampler


class Block(Sampler):
    """Rank ``rank``'s contiguous block of ``range(n)``: the first ``n % world`` ranks hold one more."""

    def __init__(self, n, rank, world):
        base, extra = divmod(n, world)
        self.start = rank * base + min(rank, extra)
        self.stop = self.start + base + (1 if rank < extra else 0)

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    shuffled = DistributedSampler(train, num_replicas=world_size, rank=rank)
    return (DataLoader(train, batch_size=batch_size, sampler=shuffled),
            DataLoader(valid, batch_size=batch_size, sampler=Block(len(valid), rank, world_size)))


def _unwrapped(model):
    return model.module if isinstance(model, DistributedDataParallel) else model


def run_epoch(model, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    train_dl.sampler.set_epoch(epoch)
    t_loss, t_hits, t_count, v_loss, v_hits, v_count = (torch.zeros((), device=device) for _ in range(6))
    model.train()
    for inputs, labels in train_dl:
        inputs, labels = inputs.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        probs = model(inputs)[:, 0]
        loss = loss_fn(probs, labels.float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        t_loss = t_loss + loss.detach() * labels.numel()
        t_hits = t_hits + ((probs >= 0.5) == labels.bool()).sum()
        t_count = t_count + labels.numel()
    model.eval()
    with torch.no_grad():
        for inputs, labels in valid_dl:
            inputs, labels = inputs.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            probs = model(inputs)[:, 0]
            v_loss = v_loss + loss_fn(probs, labels.float()) * labels.numel()
            v_hits = v_hits + ((probs >= 0.5) == labels.bool()).sum()
            v_count = v_count + labels.numel()
    totals = torch.stack([t_loss, t_hits, t_count, v_loss, v_hits, v_count])
    dist.all_reduce(totals, op=dist.ReduceOp.SUM)
    tl, th, tn, vl, vh, vn = totals.tolist()
    return tl / tn, vl / vn, th / tn, vh / vn


def save_checkpoint(path, model, epoch, history):
    if dist.get_rank() == 0:
        history = [list(map(float, values)) for values in history]
        torch.save({"model": _unwrapped(model).state_dict(), "epoch": int(epoch), "history": history}, path)
    dist.barrier()


def load_checkpoint(path, model, device=None):
    inner = _unwrapped(model)
    if device is None:
        device = next(inner.parameters()).device
    found = torch.load(path, map_location=device, weights_only=True)
    inner.load_state_dict(found["model"])
    return found["epoch"], found["history"]
