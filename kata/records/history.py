"""A history: what the book's `train` returns and hands to `on_epoch`.

Four lists, one entry per epoch, in this order and by these names. A named
tuple is welcome; a plain tuple of the four lists works too. (No torch here:
`kata train` reads these names without importing it.)
"""

from __future__ import annotations

from collections import namedtuple

from kata.records.wire import known_tuple

__all__ = ["HISTORY", "HISTORY_NAMES", "History"]

HISTORY_NAMES = ("loss_hist_train", "loss_hist_valid", "accuracy_hist_train", "accuracy_hist_valid")
History = known_tuple(namedtuple("History", HISTORY_NAMES))
# Four histories with distinct values, as train gives them (the checkpoint's records save them; its checks find them).
HISTORY = History([0.6931, 0.5417, 0.4873], [0.7012, 0.5884, 0.5521], [0.5, 0.75, 0.8125], [3 / 7, 5 / 7, 6 / 7])
