"""device-kata: learn where a PyTorch tensor lives, on the book's CelebA smile classifier.

``import kata`` is light (no torch, no pytest): the ``kata`` command's modules
import what they need when they run. In a notebook, ``kata.check("NAME")`` runs
an exercise's checks on the functions the notebook defines (kata/notebook.py,
imported on first use). ``kata.run("train.py", quick=2)`` is ``kata run --quick 2 train.py``
(kata/asgpu/): the script on one simulated CUDA GPU, in a process of its own.
"""

__all__ = ["check", "run"]


def __getattr__(name: str):
    if name == "check":  # lazily: kata.notebook imports pytest
        from kata.notebook import check

        return check
    if name == "run":
        from kata.asgpu import run

        return run
    raise AttributeError(f"module 'kata' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
