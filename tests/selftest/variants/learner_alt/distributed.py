"""A learner's other spellings: shard indices sliced with [rank::world_size], one loop over both phases under
torch.set_grad_enabled, a (2, 3) table of sums on the device, every rank's gathered in one all_gather and added up,
ge(0.5) for the threshold."""

import torch
from torch import distributed
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, Subset


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    sampler = DistributedSampler(dataset=train, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    indices = list(range(len(valid)))[rank::world_size]
    return (DataLoader(dataset=train, batch_size=batch_size, sampler=sampler, drop_last=False),
            DataLoader(dataset=Subset(valid, indices), batch_size=batch_size))


def run_epoch(model, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    train_dl.sampler.set_epoch(epoch)
    table = torch.zeros(2, 3, device=device)   # rows: training, validation; columns: loss sum, correct, samples
    for phase, loader in enumerate((train_dl, valid_dl)):
        training = phase == 0
        model.train(training)
        with torch.set_grad_enabled(training):
            for _i, (x, y) in enumerate(loader):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                pred = model(x)[:, 0]
                loss = loss_fn(pred, y.float())
                if training:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                table[phase, 0] += loss.detach() * y.size(0)
                table[phase, 1] += (pred.detach().ge(0.5).to(y.dtype) == y).sum()
                table[phase, 2] += y.size(0)
    tables = [torch.empty_like(table) for _ in range(distributed.get_world_size())]
    distributed.all_gather(tables, table)   # every rank's table, on every rank
    (t_loss, t_ok, t_n), (v_loss, v_ok, v_n) = torch.stack(tables).sum(dim=0).tolist()
    return t_loss / t_n, v_loss / v_n, t_ok / t_n, v_ok / v_n


def save_checkpoint(path, model, epoch, history):
    plain = model.module if isinstance(model, DistributedDataParallel) else model
    if distributed.get_rank() == 0:
        torch.save(dict(model=plain.state_dict(), epoch=int(epoch),
                        history=[list(map(float, h)) for h in history]), path)
    distributed.barrier()


def load_checkpoint(path, model, device=None):
    plain = model.module if isinstance(model, DistributedDataParallel) else model
    where = device if device is not None else next(iter(plain.parameters())).device
    saved = torch.load(path, map_location=where, weights_only=True)
    plain.load_state_dict(saved["model"])
    return saved["epoch"], saved["history"]
