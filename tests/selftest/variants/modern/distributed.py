"""Exercise 8 in today's idioms: validation in contiguous chunks (tensor_split), torch.inference_mode, an async
all_reduce waited on, pathlib, match on the wrapper."""

from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, Subset


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    chunk = torch.arange(len(valid)).tensor_split(world_size)[rank]   # rank r: the r-th contiguous chunk
    return (
        DataLoader(train, batch_size=batch_size, sampler=DistributedSampler(train, world_size, rank, shuffle=True)),
        DataLoader(Subset(valid, chunk.tolist()), batch_size=batch_size, shuffle=False),
    )


def _plain(model):
    match model:
        case DDP(module=inner):
            return inner
        case _:
            return model


def _step(model, x, y, loss_fn, device):
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    pred = model(x)[:, 0]
    loss = loss_fn(pred, y.float())
    return loss, torch.stack([loss.detach() * len(y), (pred.ge(0.5).float() == y).float().sum(),
                              torch.ones_like(loss).mul(len(y))])


def run_epoch(model, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    train_dl.sampler.set_epoch(epoch)
    train_sums = torch.zeros(3, device=device)
    model.train()
    for x, y in train_dl:
        loss, sums = _step(model, x, y, loss_fn, device)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        train_sums += sums
    model.eval()
    valid_sums = torch.zeros(3, device=device)
    with torch.inference_mode():
        for x, y in valid_dl:
            valid_sums += _step(model, x, y, loss_fn, device)[1]
    every = torch.cat([train_sums, valid_sums])
    dist.all_reduce(every, async_op=True).wait()
    (loss_t, hits_t, n_t), (loss_v, hits_v, n_v) = every.reshape(2, 3).tolist()
    return loss_t / n_t, loss_v / n_v, hits_t / n_t, hits_v / n_v


def save_checkpoint(path, model, epoch, history):
    if dist.get_rank() == 0:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"model": _plain(model).state_dict(), "epoch": int(epoch),
                    "history": [[float(v) for v in values] for values in history]}, path)
    dist.barrier()


def load_checkpoint(path, model, device=None):
    inner = _plain(model)
    device = device or next(inner.parameters()).device
    state = torch.load(Path(path), map_location=device, weights_only=True)
    inner.load_state_dict(state["model"])
    return state["epoch"], [list(values) for values in state["history"]]
