"""Python's garbage collector in a run of the checks: what the run imports is never walked again.

A run of the checks holds about 350,000 objects once it has imported torch,
torchvision, matplotlib and Hypothesis and collected the checks, none of them
garbage. Python collects its oldest generation again and again as they are
made, and again as the checks make objects, and each such collection walks all
of them: measured on 2 cores, 9 of them cost ``pytest solutions`` 2.0 s, and the
interpreter's last collection at exit another 0.9 to 1.1 s. So:

- :func:`pause`, before the run imports its conftest files, and
  :func:`freeze_collected`, once the checks are collected: no collection while
  the run imports and collects, then what it holds is moved out of the
  collector's reach (``gc.freeze()``) for the rest of the run. What the checks
  make afterwards (the learner's modules, models, figures) is collected as ever.
- :func:`thaw`, the run's last clean-up (after pytest's own collections at the
  end, which then skip them too): a process that goes on (a notebook's kernel
  running ``kata.check``) collects those objects again. A run inside a run
  whose objects are frozen already (the kata's own tests of the harness)
  freezes and thaws nothing.
- :func:`freeze_at_exit`: registered at the end of a run, it is the first exit
  function to run; the interpreter's last collection then skips what the run
  made.
- :func:`preloading`: the same for a process that imports first and works
  after (a grading server, kata watch's next round, the grader's reference
  records): no collection while it imports, then, for a process that forks or
  runs its one job next, what it holds frozen for good.

It imports no pytest (a grading server of the records never does).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import weakref
from collections.abc import Iterator

__all__ = ["freeze_at_exit", "freeze_collected", "pause", "preloading", "thaw"]

# What each run did to the collector, to undo it: "paused" (disabled it), "froze" (froze what it had collected).
_done: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_at_exit = False   # freeze_at_exit registered in this process


def pause(config) -> None:
    if gc.isenabled() and gc.get_freeze_count() == 0:
        gc.disable()
        _done.setdefault(config, set()).add("paused")


def _resume(config) -> None:
    if "paused" in _done.get(config, ()):
        _done[config].discard("paused")
        gc.enable()


def freeze_collected(config) -> None:
    if "paused" in _done.get(config, ()) or (gc.isenabled() and gc.get_freeze_count() == 0):
        gc.freeze()
        _done.setdefault(config, set()).add("froze")
    _resume(config)


def thaw(config) -> None:
    _resume(config)   # a run that ended before its checks were collected
    if "froze" in _done.get(config, ()):
        _done[config].discard("froze")
        gc.unfreeze()


def freeze_at_exit() -> None:
    global _at_exit
    if not _at_exit:
        _at_exit = True
        atexit.register(gc.freeze)


@contextlib.contextmanager
def preloading(freeze: bool = True) -> Iterator[None]:
    """No collection inside the block; with ``freeze``, its garbage collected once at its end and what the
    process then holds frozen for good (for a process whose imports are done: it forks, or runs one job)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.collect()
            gc.freeze()
        if collecting:
            gc.enable()
