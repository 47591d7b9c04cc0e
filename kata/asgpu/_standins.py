"""Stand-ins for optional packages a script imports but a run can do without.

``torch.utils.tensorboard`` needs the tensorboard package; a script that imports its
``SummaryWriter`` (the seed's does, and never writes with it) runs without it under ``kata run``:
the writer records nothing, and the run says so once, when the script first makes one.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys

from kata.i18n import N_, say

__all__ = ["SummaryWriter", "TensorboardFinder", "missing"]

NO_TENSORBOARD = N_("kata run: tensorboard is not installed, so this SummaryWriter writes nothing "
                    "(pip install tensorboard for its logs)")


def missing(name: str) -> bool:
    return importlib.util.find_spec(name) is None


class SummaryWriter:
    """torch.utils.tensorboard.SummaryWriter, writing nothing (tensorboard is not installed)."""

    told = False

    def __init__(self, *args, **kwargs):
        if not SummaryWriter.told:
            SummaryWriter.told = True
            print(say(NO_TENSORBOARD), file=sys.stderr)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.SummaryWriter = SummaryWriter


class TensorboardFinder(importlib.abc.MetaPathFinder):
    """Finds the stand-in ``torch.utils.tensorboard`` where tensorboard is not installed."""

    NAME = "torch.utils.tensorboard"

    def find_spec(self, name, path=None, target=None):
        if name != self.NAME or not missing("tensorboard"):
            return None
        return importlib.machinery.ModuleSpec(name, _Loader())
