"""The exercises' import path for CelebA: ``from kata.celeba import CelebA``.

Learners, the exercises and the graders import the loader from here, and the
checks read ``kata.celeba.ATTRIBUTE_NAMES`` and monkeypatch
``kata.celeba.CelebA``; keep this path stable. The loader itself lives in
kata.data.celeba (torchvision's CelebA, which also accepts the synthetic set
that `kata data` draws); this module re-exports its public names.
"""

from kata.data.celeba import (
    ATTRIBUTE_NAMES,
    MARKER_NAME,
    SMILING,
    TEXT_FILES,
    CelebA,
    CelebAError,
    DatasetChecksumError,
    DatasetNotFoundError,
    is_synthetic,
    read_marker,
)

__all__ = [
    "ATTRIBUTE_NAMES", "SMILING", "MARKER_NAME", "TEXT_FILES", "CelebA", "CelebAError",
    "DatasetNotFoundError", "DatasetChecksumError", "is_synthetic", "read_marker",
]
