"""Exercise 6 · sync: keep the GPU busy, with one device-to-host sync per epoch.

A GPU runs behind Python: each PyTorch call on a device tensor only queues the
work and returns at once. Whenever Python needs a value that lives on the
device, it has to wait until the GPU has finished everything queued so far:
a synchronisation. The book's loop does that in every batch, so the GPU sits
idle while Python prepares the next batch. The seed's buggy loop, which kept
its accuracy sums on the GPU, was in that respect closer to fast code than
its fix: this exercise keeps the sums on the device on purpose, and brings
them to the host once.

Run `pytest exercises/sync.py` to check just this file (its `cuda` checks count
the synchronisations on a real or simulated accelerator), and `kata hint sync`
when you are stuck.
"""

import torch


def train_epoch(model, dl, loss_fn, optimizer, device):
    """Train `model` for one epoch over `dl`; return `(mean_loss, accuracy)`.

    Specification:
    - The model is already on `device` (the caller placed it); every batch
      `(x, y)` is moved there before the model sees it.
    - The epoch runs in training mode, whatever mode the model was left in,
      and follows `training.train`'s epoch with the given `loss_fn` and
      `optimizer`: per batch, in order, predict (the first column of the
      model's (N, 1) output), compute the loss against the labels as floats,
      backpropagate, step, zero the gradients.
    - `mean_loss`: the batch losses weighted by batch size, summed, divided by
      `len(dl.dataset)`; `accuracy`: the share of samples whose prediction
      (probability >= 0.5) matches the label. Both Python floats.
    - At most ONE synchronisation in the whole epoch, however many batches it
      has: a moment the host waits for the device, whether to read a value
      on the host (a Python number, a copy on the CPU, a printout), because
      a copy TO the device blocks until it is done, or because the code asks
      for it (`torch.cuda.synchronize()`). Several numbers brought to the
      host in one copy are one synchronisation; each number read on its own
      is one more.
    - Nothing of a batch's autograd graph outlives its batch: what the running
      sums keep is numbers, not graphs.

    Concept: asynchronous execution, and what makes the host wait for the
    device.
    """
    raise NotImplementedError(
        "`train_epoch` is not written yet: see its docstring, and `kata hint sync`")
