"""What a learner writes from the stub alone: a Subset of every world_size-th index, 0-d sums on the device put
together at the end, one all_reduce, .cpu() then .tolist()."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Subset
from torch.utils.data.distributed import DistributedSampler


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    train_sampler = DistributedSampler(train, num_replicas=world_size, rank=rank)
    train_dl = DataLoader(train, batch_size=batch_size, sampler=train_sampler)
    mine = [i for i in range(len(valid)) if i % world_size == rank]
    valid_dl = DataLoader(Subset(valid, mine), batch_size=batch_size, shuffle=False)
    return train_dl, valid_dl


def run_epoch(model, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    train_dl.sampler.set_epoch(epoch)

    model.train()
    loss_train = torch.zeros((), device=device)
    correct_train = torch.zeros((), device=device)
    n_train = 0
    for x_batch, y_batch in train_dl:
        x_batch = x_batch.to(device, non_blocking=True)
        y_batch = y_batch.to(device, non_blocking=True)
        model.zero_grad()
        pred = model(x_batch)[:, 0]
        loss = loss_fn(pred, y_batch.float())
        loss.backward()
        optimizer.step()
        loss_train += loss.detach() * x_batch.size(0)
        correct_train += ((pred >= 0.5).float() == y_batch).float().sum()
        n_train += x_batch.size(0)

    model.eval()
    loss_valid = torch.zeros((), device=device)
    correct_valid = torch.zeros((), device=device)
    n_valid = 0
    with torch.no_grad():
        for x_batch, y_batch in valid_dl:
            x_batch = x_batch.to(device, non_blocking=True)
            y_batch = y_batch.to(device, non_blocking=True)
            pred = model(x_batch)[:, 0]
            loss_valid += loss_fn(pred, y_batch.float()) * x_batch.size(0)
            correct_valid += ((pred >= 0.5).float() == y_batch).float().sum()
            n_valid += x_batch.size(0)

    # the counts are Python ints here: they join the sums on the device (a fill, no copy from the host)
    counts = torch.zeros(2, device=device)
    counts[0] += n_train
    counts[1] += n_valid
    totals = torch.cat([torch.stack([loss_train, correct_train, loss_valid, correct_valid]), counts])
    dist.all_reduce(totals)
    totals = totals.cpu().tolist()
    loss_train, correct_train, loss_valid, correct_valid, n_train, n_valid = totals
    return loss_train / n_train, loss_valid / n_valid, correct_train / n_train, correct_valid / n_valid


def save_checkpoint(path, model, epoch, history):
    if dist.get_rank() == 0:
        if hasattr(model, "module"):
            state = model.module.state_dict()
        else:
            state = model.state_dict()
        loss_train, loss_valid, acc_train, acc_valid = history
        torch.save({
            "model": state,
            "epoch": int(epoch),
            "history": [[float(v) for v in loss_train], [float(v) for v in loss_valid],
                        [float(v) for v in acc_train], [float(v) for v in acc_valid]],
        }, path)
    dist.barrier()


def load_checkpoint(path, model, device=None):
    if hasattr(model, "module"):
        model = model.module
    if device is None:
        device = next(model.parameters()).device
    checkpoint = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    return checkpoint["epoch"], checkpoint["history"]
