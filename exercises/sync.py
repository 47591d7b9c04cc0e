"""Exercise 6 · sync: keep the GPU busy, with one device-to-host sync per epoch.

A GPU runs ahead of Python: each call only queues work. `.item()`, `.cpu()`,
`.tolist()`, `float(t)` or printing a device tensor must wait until the GPU has
finished everything queued, so the book's `loss.item()` in every batch stalls
the GPU once per batch. The seed's buggy loop kept its sums on the GPU, which
was closer to fast code than the fix; this exercise keeps the sums on the
device on purpose and converts them once, at the end.

Run `pytest exercises/sync.py` to check just this file.
"""

import torch


def train_epoch(model, dl, loss_fn, optimizer, device):
    """Train one epoch as `training.train` does; return `(mean_loss, accuracy)`
    as Python floats, with at most ONE device-to-host synchronisation.

    Keep the running sums as tensors on `device` (`loss.detach() * n`, the
    count of correct predictions), and turn them into Python numbers once,
    after the last batch (e.g. `torch.stack([a, b]).tolist()`).
    """
    raise NotImplementedError("accumulate on the device; convert once at the end of the epoch")
