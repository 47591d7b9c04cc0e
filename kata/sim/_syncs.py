"""Counting device-to-host synchronisations: :func:`count_syncs` and :class:`Syncs`.

The device's tensors report a sync with :func:`record` (one event) or
:func:`counted` (one event for a Python-level call, and none for what it does
inside).  Each event is put down in every open :func:`count_syncs` block, with
the file and line of the first caller outside torch, NumPy, matplotlib and this
package: the learner's line.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from dataclasses import dataclass, field

import torch

__all__ = ["Syncs", "count_syncs", "counted", "record"]


@dataclass
class Syncs:
    """Device-to-host synchronisations counted in a :func:`count_syncs` block."""

    by_kind: Counter = field(default_factory=Counter)
    events: list = field(default_factory=list)  # (kind, "file:line") in order

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def reset(self) -> None:
        self.by_kind.clear()
        self.events.clear()

    def __repr__(self) -> str:
        return f"Syncs(total={self.total}, by_kind={dict(self.by_kind)})"


_counters: list[Syncs] = []
_quiet = 0  # > 0 while a counted Python-level call runs: its inner copies are not counted again
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_SKIP_DIRS = (_TORCH_DIR, os.path.dirname(_TORCH_DIR) + os.sep + "numpy",
              os.path.dirname(_TORCH_DIR) + os.sep + "matplotlib", contextlib.__file__,
              os.path.dirname(os.path.abspath(__file__)) + os.sep)


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_SKIP_DIRS):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def record(kind: str) -> None:
    """Count one sync of `kind` in every open :func:`count_syncs` block."""
    if _quiet or not _counters:
        return
    where = _caller()
    for syncs in _counters:
        syncs.by_kind[kind] += 1
        syncs.events.append((kind, where))


@contextlib.contextmanager
def counted(kind: str):
    """Count one sync of `kind`, and none for what the block does inside."""
    global _quiet
    record(kind)
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1


@contextlib.contextmanager
def count_syncs():
    """Count device-to-host synchronisations of simgpu tensors in the block.

    Yields a :class:`Syncs`: ``.total``, ``.by_kind`` (a Counter: ``{"item": 3}``),
    ``.events`` (``[(kind, "file:line"), ...]``) and ``.reset()``.  Blocks may nest;
    each counts what happens inside it.
    """
    syncs = Syncs()
    _counters.append(syncs)
    try:
        yield syncs
    finally:
        _counters.remove(syncs)
