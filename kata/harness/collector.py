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
"""

from __future__ import annotations

import atexit
import gc

import pytest

__all__ = ["freeze_at_exit", "freeze_collected", "pause", "thaw"]

_PAUSED = pytest.StashKey[bool]()   # this run disabled the collector, and enables it again
_FROZE = pytest.StashKey[bool]()    # this run froze what it had collected, and thaws it
_at_exit = False                    # freeze_at_exit registered in this process


def pause(config: pytest.Config) -> None:
    if gc.isenabled() and gc.get_freeze_count() == 0:
        gc.disable()
        config.stash[_PAUSED] = True


def _resume(config: pytest.Config) -> None:
    if config.stash.get(_PAUSED, False):
        config.stash[_PAUSED] = False
        gc.enable()


def freeze_collected(config: pytest.Config) -> None:
    if config.stash.get(_PAUSED, False) or (gc.isenabled() and gc.get_freeze_count() == 0):
        gc.freeze()
        config.stash[_FROZE] = True
    _resume(config)


def thaw(config: pytest.Config) -> None:
    _resume(config)   # a run that ended before its checks were collected
    if config.stash.get(_FROZE, False):
        config.stash[_FROZE] = False
        gc.unfreeze()


def freeze_at_exit() -> None:
    global _at_exit
    if not _at_exit:
        _at_exit = True
        atexit.register(gc.freeze)
