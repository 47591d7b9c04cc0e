"""``kata train``'s progress bar: the training DataLoader, with a bar over its batches and the running loss."""

from __future__ import annotations

import sys

from kata.i18n import _, say

__all__ = ["ProgressLoader"]


class ProgressLoader:
    """The training DataLoader, with a progress bar over its batches.

    It looks like the DataLoader to the learner's loop (`for x, y in dl`,
    `len(dl)`, `dl.dataset`, `dl.batch_size`). The running loss in the bar is
    computed from the model's output by a forward hook (`attach`), so the
    learner's loop needs no change; it copies each output to the host, which
    costs a GPU one sync per batch: fine for a progress bar, not for a benchmark.
    """

    def __init__(self, dl, epochs: int, done: int = 0):
        self.dl, self.epochs, self.epoch = dl, epochs, done
        self.dataset, self.batch_size = dl.dataset, dl.batch_size
        self._bar = None
        self._y = None
        self._loss_sum = 0.0
        self._seen = 0

    def __len__(self) -> int:
        return len(self.dl)

    def __getattr__(self, name: str):   # the rest is the DataLoader's: its sampler (set_epoch), ...
        if name == "dl":
            raise AttributeError(name)
        return getattr(self.dl, name)

    def attach(self, model):
        return model.register_forward_hook(self._on_forward)

    def _on_forward(self, module, args, output) -> None:
        if self._bar is None or self._y is None or not module.training:
            return
        import torch
        import torch.nn.functional as F

        with torch.no_grad():
            p = output.detach()[:, 0].float().cpu().clamp(1e-7, 1 - 1e-7)
            y = self._y.float().cpu()
            if p.shape == y.shape:
                self._loss_sum += F.binary_cross_entropy(p, y, reduction="sum").item()
                self._seen += len(y)
                self._bar.set_postfix(loss=f"{self._loss_sum / self._seen:.4f}", refresh=False)

    def __iter__(self):
        from tqdm import tqdm

        self.epoch += 1
        self._loss_sum, self._seen = 0.0, 0
        self._bar = tqdm(total=len(self.dl), desc=say("epoch {epoch}/{epochs}", epoch=self.epoch, epochs=self.epochs),
                         unit=_("batch"),
                         leave=False, file=sys.stderr, dynamic_ncols=True, disable=None)  # none in logs
        try:
            for x, y in self.dl:
                self._y = y
                yield x, y
                self._bar.update(1)
        finally:
            self._bar.close()
            self._bar = self._y = None
