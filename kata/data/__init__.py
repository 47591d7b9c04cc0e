"""The kata's data: CelebA's on-disk layout, the synthetic CelebA, and the loader for both.

    kata.data.layout   CelebA's file and attribute names, image size, splits; default_root()
    kata.data.synth    the synthetic CelebA that `kata data` draws: generate(), plan(), render(), ...
    kata.data.celeba   CelebA: torchvision's loader, which also accepts the synthetic set
                       (the exercises import it as kata.celeba.CelebA)

Importing kata.data is cheap: it loads only the layout (standard library). The
generator (numpy, PIL) and the loader (torch, torchvision) are imported on the
first use of one of their names here, so drawing a set never imports torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from kata.data.layout import (
    ATTRIBUTE_NAMES,
    HEIGHT,
    IMAGE_FOLDER,
    MARKER_NAME,
    PARTIAL_NAME,
    SMILING,
    SPLITS,
    TEXT_FILES,
    WIDTH,
    default_root,
)

if TYPE_CHECKING:  # for type checkers and editors; at run time, __getattr__ imports these on first use
    from kata.data.celeba import (
        CelebA,
        CelebAError,
        DatasetChecksumError,
        DatasetNotFoundError,
        is_synthetic,
        read_marker,
    )
    from kata.data.synth import generate, plan, render

__all__ = [
    "ATTRIBUTE_NAMES", "SMILING", "IMAGE_FOLDER", "TEXT_FILES", "MARKER_NAME", "PARTIAL_NAME",
    "WIDTH", "HEIGHT", "SPLITS", "default_root",
    "generate", "plan", "render",
    "CelebA", "CelebAError", "DatasetNotFoundError", "DatasetChecksumError", "is_synthetic", "read_marker",
]

_LAZY = {
    "generate": "kata.data.synth", "plan": "kata.data.synth", "render": "kata.data.synth",
    **dict.fromkeys(["CelebA", "CelebAError", "DatasetNotFoundError", "DatasetChecksumError", "is_synthetic",
                     "read_marker"], "kata.data.celeba"),
}


def __getattr__(name: str):
    """Import the generator's or the loader's names on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
