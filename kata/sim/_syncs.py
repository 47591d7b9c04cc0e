"""Counting synchronisations: :func:`count_syncs` and :class:`Syncs`; copies to the host that
arrive only at the next one: :func:`defer` and :func:`flush`.

The device's tensors report a sync with :func:`record` (one event) or
:func:`counted` (one event for a Python-level call, and none for what it does
inside).  Each event is put down in every open :func:`count_syncs` block, with
the file and line of the first caller outside torch, NumPy, matplotlib and the
kata package (its checks' helpers included): the learner's line.

A ``non_blocking=True`` copy to the host is not a sync on CUDA: it is queued behind
the work before it, and the host may read its destination before the data is
there.  The simulator shows that deterministically: the destination holds NaN (0
for integers, False for booleans) until the next synchronisation (any recorded
sync, ``torch.simgpu.synchronize()``, or a copy from the host, which the stream
orders after it), when the data lands.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

import torch

__all__ = ["CUDA_SYNC_WARNING", "Syncs", "count_cuda_syncs", "count_syncs", "counted", "defer", "flush",
           "get_sync_debug_mode", "record", "set_sync_debug_mode"]


@dataclass
class Syncs:
    """Device-to-host synchronisations counted in a :func:`count_syncs` block."""

    by_kind: Counter = field(default_factory=Counter)
    events: list = field(default_factory=list)  # (kind, "file:line") in order
    copies: list = field(default_factory=list)  # "file:line" of each non_blocking copy to the host (not a sync)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def reset(self) -> None:
        self.by_kind.clear()
        self.events.clear()
        self.copies.clear()

    def __repr__(self) -> str:
        return f"Syncs(total={self.total}, by_kind={dict(self.by_kind)})"


# What torch.cuda.set_sync_debug_mode("warn") says of each sync (c10/cuda/CUDAFunctions.cpp,
# warn_or_error_on_sync). Not every warning is one: the first "warn" of a process also says that
# "Synchronization debug mode is a prototype feature ..." (seen on an H200, docs/gpu-report.md).
CUDA_SYNC_WARNING = "called a synchronizing CUDA operation"

_counters: list[Syncs] = []
_quiet = 0  # > 0 while a counted Python-level call runs: its inner copies are not counted again
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_SKIP_DIRS = (_TORCH_DIR, os.path.dirname(_TORCH_DIR) + os.sep + "numpy",
              os.path.dirname(_TORCH_DIR) + os.sep + "matplotlib", contextlib.__file__,
              os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)  # kata/


def _caller() -> str:
    return _where(_callers_frame(3))


def _where(frame) -> str:
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _callers_frame(depth: int):
    """The frame of the code that asked for the sync: the first outside torch, NumPy, matplotlib and the kata,
    from `depth` frames up (1: the function that asks)."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    return frame


_debug_mode = 0  # as CUDA's sync debug mode: 0 default, 1 warn at each sync, 2 raise at each sync
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_sync_debug_mode(debug_mode) -> None:
    """``torch.cuda.set_sync_debug_mode`` for the simulated device: ``"warn"`` (1) warns "called a synchronizing
    CUDA operation" at each sync, at the line that asked for it; ``"error"`` (2) raises it; ``"default"`` (0) does
    neither (torch/cuda/__init__.py; c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync)."""
    global _debug_mode
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _DEBUG_MODES[debug_mode]
    _debug_mode = int(debug_mode)


def get_sync_debug_mode() -> int:
    return _debug_mode


def _debug(frame) -> None:
    """What CUDA's sync debug mode does at a sync."""
    import warnings

    if _debug_mode >= 2:
        raise RuntimeError(CUDA_SYNC_WARNING)
    if frame is None:
        warnings.warn(CUDA_SYNC_WARNING, UserWarning, stacklevel=4)
    else:   # at the line that asked, once per line under the default filter, as a warning from PyTorch's C++
        globals_ = frame.f_globals
        warnings.warn_explicit(CUDA_SYNC_WARNING, UserWarning, frame.f_code.co_filename, frame.f_lineno,
                               module=globals_.get("__name__"), registry=globals_.setdefault("__warningregistry__", {}),
                               module_globals=globals_)


class _InFlight:
    """The copies to the host queued and not yet landed: (destination on the host, the data on its way)."""

    def __init__(self):
        self.copies: list[tuple[torch.Tensor, torch.Tensor]] = []


_in_flight = _InFlight()


def defer(destination: torch.Tensor, data: torch.Tensor) -> None:
    """A copy to the host in flight: `destination` reads as not yet arrived until :func:`flush`."""
    with torch.no_grad():
        destination.fill_(float("nan") if destination.is_floating_point() or destination.is_complex() else 0)
    _in_flight.copies.append((destination, data))
    if _counters:
        where = _caller()
        for syncs in _counters:
            syncs.copies.append(where)


def flush() -> None:
    """The host and the device in step: every copy in flight lands."""
    with torch.no_grad():
        while _in_flight.copies:
            destination, data = _in_flight.copies.pop(0)
            destination.copy_(data)


def record(kind: str) -> None:
    """A sync of `kind`: the copies in flight land, and it is counted in every open
    :func:`count_syncs` block."""
    if _in_flight.copies:
        flush()
    if _quiet or not (_counters or _debug_mode):
        return
    frame = _callers_frame(2)
    if _debug_mode:
        _debug(frame)
    where = _where(frame)
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
    """Count the synchronisations of simgpu tensors with the host in the block.

    Yields a :class:`Syncs`: ``.total``, ``.by_kind`` (a Counter: ``{"item": 3}``),
    ``.events`` (``[(kind, "file:line"), ...]``), ``.copies`` (``["file:line", ...]``: the
    ``non_blocking=True`` copies to the host, which are no syncs) and ``.reset()``.  Blocks may
    nest; each counts what happens inside it.
    """
    syncs = Syncs()
    _counters.append(syncs)
    try:
        yield syncs
    finally:
        _counters.remove(syncs)


class _SyncsFirst(list):
    """``warnings.filters`` while CUDA's syncs are counted: its first filter lets each sync's warning through, and a
    filter added in front (``warnings.simplefilter("ignore")``, as notebooks often begin) goes after it."""

    def insert(self, index, item) -> None:
        super().insert(1 if index == 0 and self else index, item)


@contextlib.contextmanager
def count_cuda_syncs():
    """:func:`count_syncs` for real CUDA: the syncs that ``torch.cuda.set_sync_debug_mode("warn")``
    reports in the block, each of kind ``"sync"`` at the line that asked for it as it happens (the block's other
    warnings are shown as they would be), and the explicit
    ``torch.cuda.synchronize()`` and ``torch.accelerator.synchronize()`` calls, which the debug mode
    does not report (c10/cuda/CUDAFunctions.cpp: device_synchronize), of kind ``"synchronize"``, as
    the simulator counts them.  Work queued before the block is waited for first, so it is not counted."""
    import warnings

    syncs = Syncs()
    torch.cuda.synchronize()
    modules = [m for m in (torch.cuda, getattr(torch, "accelerator", None)) if hasattr(m, "synchronize")]
    originals = [m.synchronize for m in modules]

    def explicit(original):
        def synchronize(*args, **kwargs):
            where = _caller()
            result = original(*args, **kwargs)
            syncs.by_kind["synchronize"] += 1
            syncs.events.append(("synchronize", where))
            return result
        return synchronize

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if CUDA_SYNC_WARNING in str(message):   # counted as it happens (a DataLoader pass reads the count)
            syncs.by_kind["sync"] += 1
            syncs.events.append(("sync", f"{filename}:{lineno}"))
        else:   # the block's own warnings are shown as they would be
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the mode's notice that it is a prototype: no sync, nobody's warning
        torch.cuda.set_sync_debug_mode("warn")
    with warnings.catch_warnings():
        warnings.filterwarnings("always", message=".*" + re.escape(CUDA_SYNC_WARNING))
        warnings.filters = _SyncsFirst(warnings.filters)   # a script's "ignore" silences its own warnings only
        shown, warnings.showwarning = warnings.showwarning, showwarning
        for m, original in zip(modules, originals, strict=True):
            m.synchronize = explicit(original)
        try:
            yield syncs
        finally:
            for m, original in zip(modules, originals, strict=True):
                m.synchronize = original
            torch.cuda.set_sync_debug_mode("default")
