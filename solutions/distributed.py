"""Reference solution: the book's epoch on several processes, with the whole dataset's figures."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Subset


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    sampler = DistributedSampler(train, num_replicas=world_size, rank=rank, shuffle=True)
    train_dl = DataLoader(train, batch_size=batch_size, sampler=sampler)
    valid_dl = DataLoader(Subset(valid, range(rank, len(valid), world_size)), batch_size=batch_size)
    return train_dl, valid_dl


def run_epoch(model, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    train_dl.sampler.set_epoch(epoch)
    sums = torch.zeros(6, device=device)   # training's loss, correct, count; then validation's
    model.train()
    for x_batch, y_batch in train_dl:
        x_batch = x_batch.to(device, non_blocking=True)
        y_batch = y_batch.to(device, non_blocking=True)
        pred = model(x_batch)[:, 0]
        loss = loss_fn(pred, y_batch.float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        sums[0] += loss.detach() * y_batch.size(0)
        sums[1] += ((pred >= 0.5).float() == y_batch).sum()
        sums[2] += y_batch.size(0)
    model.eval()
    with torch.no_grad():
        for x_batch, y_batch in valid_dl:
            x_batch = x_batch.to(device, non_blocking=True)
            y_batch = y_batch.to(device, non_blocking=True)
            pred = model(x_batch)[:, 0]
            sums[3] += loss_fn(pred, y_batch.float()) * y_batch.size(0)
            sums[4] += ((pred >= 0.5).float() == y_batch).sum()
            sums[5] += y_batch.size(0)
    dist.all_reduce(sums)   # every rank's sums, added up on every rank
    loss_t, correct_t, n_t, loss_v, correct_v, n_v = sums.tolist()   # the one sync
    return loss_t / n_t, loss_v / n_v, correct_t / n_t, correct_v / n_v


def save_checkpoint(path, model, epoch, history):
    if dist.get_rank() == 0:
        plain = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
        torch.save({"model": plain.state_dict(), "epoch": int(epoch),
                    "history": [[float(v) for v in h] for h in history]}, path)
    dist.barrier()   # no rank goes on (and reads the file) before it is written


def load_checkpoint(path, model, device=None):
    plain = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    if device is None:
        first = next(plain.parameters(), None)
        device = first.device if first is not None else torch.device("cpu")
    state = torch.load(path, map_location=device, weights_only=True)
    plain.load_state_dict(state["model"])
    return state["epoch"], tuple(state["history"])
