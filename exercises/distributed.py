"""Exercise 8 · distributed: the book's epoch on several processes, and figures that belong to the whole dataset.

Where a tensor lives does not stop at one process. With
`torch.distributed`, the same script runs as several processes (ranks),
each with its own copy of the model and its own share of the data;
`DistributedDataParallel` averages the gradients, so the copies stay equal.
What it does NOT do is add up what you measure: each rank only sees its own
images, so an accuracy computed on one rank is that rank's, and two ranks'
means averaged are not the dataset's mean when their shares differ. Nor
does it remember to reshuffle: a sampler that shards the data shows the same
order every epoch unless it is told which epoch it is.

The checks run your code on two real ranks (the gloo backend, over
loopback, on the CPU; each rank on the accelerator where the checks are
about devices). Run `pytest exercises/distributed.py` to check just this
file, and `kata hint distributed` when you are stuck.
"""

import torch


def shard_loaders(train, valid, rank, world_size, batch_size=32):
    """Return `(train_dl, valid_dl)`: the DataLoaders of rank `rank` of `world_size`.

    Specification:
    - `train_dl` loads this rank's share of `train`, in batches of
      `batch_size`, shuffled: its sampler is a
      `torch.utils.data.DistributedSampler` for this rank and world size
      (every rank uses the same seed, the default), so that the ranks'
      shares together are the whole training set, and a new epoch number
      (given to the sampler by `run_epoch`) gives a new order.
    - `valid_dl` loads this rank's share of `valid`, in batches of
      `batch_size`, in order, so that the ranks' shares together hold every
      validation image exactly ONCE, whatever `len(valid)` is: no image
      left out and none counted twice (a sampler that pads the shares to
      equal lengths repeats images when `len(valid)` does not divide by
      `world_size`, and the validation figures then change with the number
      of processes).
    - `rank` and `world_size` are given: nothing here needs the process
      group.

    Concept: sharding a dataset across processes, and which shards may
    repeat an item.
    """
    raise NotImplementedError(
        "`shard_loaders` is not written yet: see its docstring, and `kata hint distributed`")


def run_epoch(model, train_dl, valid_dl, loss_fn, optimizer, device, epoch):
    """Train one epoch and validate; return the WHOLE dataset's
    `(train_loss, valid_loss, train_acc, valid_acc)`, the same on every rank.

    Specification:
    - Runs on every rank of an initialised process group, at once. `model`
      is on `device` and its gradients are averaged across ranks (a
      `DistributedDataParallel`, or a model that behaves like one);
      `train_dl` and `valid_dl` are this rank's loaders, as `shard_loaders`
      makes them.
    - First, tell the training loader's sampler which `epoch` this is
      (0-based), so that every epoch sees a new order.
    - Training as in `training.train`, in training mode: per batch, moved to
      `device`, predict (the first column of the (N, 1) output), the loss
      against the labels as floats, backward, step, zero the gradients.
      Then validation, in evaluation mode, without gradients, on this
      rank's share. EVERY rank runs both: a collective operation that one
      rank skips makes the others wait for ever.
    - The figures are the whole dataset's, not this rank's: the loss is the
      mean over every sample any rank saw (batch loss times batch size,
      summed, divided by the number of samples), and the accuracy the share
      of those samples whose prediction (probability >= 0.5) matches the
      label. Add up sums and counts across the ranks
      (`torch.distributed`'s collectives), never means: 3 images on one
      rank and 2 on the other make the mean of the two means wrong.
    - Four Python floats, equal on every rank, and at most ONE
      synchronisation with the device for them in the whole epoch (as in
      `sync.train_epoch`): keep the sums on the device, reduce them
      together, bring them to the host once.

    Concept: collectives (all-reduce), and why sums and counts add up
    across processes while means do not.
    """
    raise NotImplementedError(
        "`run_epoch` is not written yet: see its docstring, and `kata hint distributed`")


def save_checkpoint(path, model, epoch, history):
    """Write one checkpoint at `path` that a one-process model opens; every
    rank calls it, and it returns on every rank once the file is complete.

    Specification:
    - The file, written with `torch.save`, is a dict:
      `{"model": state, "epoch": epoch, "history": history}`. `state` is the
      `state_dict` of the model itself, not of its `DistributedDataParallel`
      wrapper: a wrapper's keys all start with `module.`, and a plain model
      of the same class refuses them. `epoch` is a Python int; `history` the
      four lists of `training.train`, as lists of Python floats.
    - It is written ONCE, by rank 0: the ranks hold the same weights, and
      several processes writing one file at once can leave it torn.
    - No rank returns before the file is written: the others wait for rank
      0 (a collective every rank calls), so that a rank may open the file
      as soon as `save_checkpoint` returns.

    Concept: one writer among many processes, and a state_dict that does
    not depend on how the model was wrapped.
    """
    raise NotImplementedError(
        "`save_checkpoint` is not written yet: see its docstring, and `kata hint distributed`")


def load_checkpoint(path, model, device=None):
    """Load the checkpoint at `path` into `model` and return `(epoch, history)`.

    Specification:
    - `model` is a plain model or a `DistributedDataParallel` wrapping one;
      either way the weights go into the model itself.
    - `device=None` means the model's own device (its first parameter's); the
      file's tensors are mapped there as they are read, so a file saved on a
      GPU opens on a machine without one. It reads with `weights_only=True`
      (a file never runs code).
    - Returns the file's epoch and its four histories (lists of floats).
    - Any rank may call it, or one process without a process group at all.

    Concept: a checkpoint that does not care how many processes wrote it or
    read it.
    """
    raise NotImplementedError(
        "`load_checkpoint` is not written yet: see its docstring, and `kata hint distributed`")
