"""Exercise 8 in another style: DistributedSampler without its padding, one reduce to rank 0 then a broadcast."""

from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler


class UnpaddedSampler(DistributedSampler):
    """DistributedSampler, in order, minus the repeated indices it pads the last shares with."""

    def __init__(self, dataset, num_replicas, rank):
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=False)

    def __iter__(self):
        # position p of the padded list goes to rank p % num_replicas; positions past len(dataset) are the repeats
        positions = range(self.rank, self.total_size, self.num_replicas)
        return (i for p, i in zip(positions, super().__iter__()) if p < len(self.dataset))

    def __len__(self):
        return len(range(self.rank, len(self.dataset), self.num_replicas))


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    train_dl = DataLoader(train, batch_size,
                          sampler=DistributedSampler(train, num_replicas=world_size, rank=rank, shuffle=True))
    valid_dl = DataLoader(valid, batch_size, sampler=UnpaddedSampler(valid, world_size, rank))
    return train_dl, valid_dl


@dataclass
class Tally:
    """Running sums of one phase, kept on the device."""

    device: torch.device
    sums: torch.Tensor = field(init=False)

    def __post_init__(self):
        self.sums = torch.zeros(3, device=self.device)   # loss x samples, correct, samples

    def add(self, pred, target, loss):
        hits = (pred.ge(0.5).to(target.dtype) == target).sum()
        count = torch.full_like(loss, target.shape[0])   # filled on the device: no copy from the host
        self.sums += torch.stack([loss * count, hits.to(self.sums.dtype), count])


def run_epoch(model: nn.Module, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    train_dl.sampler.set_epoch(epoch)
    train, valid = Tally(device), Tally(device)
    model.train()
    for xb, yb in train_dl:
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        out = model(xb).squeeze(1)
        loss = loss_fn(out, yb.float())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train.add(out.detach(), yb, loss.detach())
    model.eval()
    with torch.no_grad():
        for xb, yb in valid_dl:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            out = model(xb).squeeze(1)
            valid.add(out, yb, loss_fn(out, yb.float()))
    both = torch.cat([train.sums, valid.sums])
    dist.reduce(both, dst=0)       # rank 0 adds up every rank's sums...
    dist.broadcast(both, src=0)    # ...and hands the totals back to every rank
    (t_loss, t_hit, t_n), (v_loss, v_hit, v_n) = both.view(2, 3).tolist()
    return t_loss / t_n, v_loss / v_n, t_hit / t_n, v_hit / v_n


def _inner(model: nn.Module) -> nn.Module:
    return getattr(model, "module", model)


def save_checkpoint(path, model, epoch, history):
    if dist.get_rank() == 0:
        entry = {"model": _inner(model).state_dict(), "epoch": int(epoch),
                 "history": [[float(x) for x in values] for values in history]}
        torch.save(entry, path)
    done = torch.zeros(1)
    dist.all_reduce(done)   # a collective every rank calls: none returns before rank 0 has saved


def load_checkpoint(path, model, device=None):
    target = _inner(model)
    device = device if device is not None else next(target.parameters()).device
    entry = torch.load(path, map_location=device, weights_only=True)
    target.load_state_dict(entry["model"])
    return entry["epoch"], entry["history"]
