"""What a process the kata forks does first, and how it is ended.

Two kinds of process are forked from a long-lived one: the grader's children
(kata/grading/server.py), which run a submission, and the checkpoint checks'
laptops (kata/records/elsewhere.py). Each starts with its standard streams on one
file and none of its parent's other descriptors, and each is ended with its
process group, whatever it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

__all__ = ["end", "end_with_parent", "streams_to", "warm_torch"]


def streams_to(out: int, keep: int | None = None) -> int | None:
    """Standard input from /dev/null, output and errors into ``out``, and Python's streams on them; every other
    descriptor closed but ``keep``, which moves to 3 (returned)."""
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    if keep is not None:
        keep = os.dup2(keep, 3)
    os.closerange(3 if keep is None else 4, 1 << 16)
    # On 0, 1 and 2, never closing them: a later call's streams, collected, must not close what it moved to 3.
    sys.stdin, sys.stdout, sys.stderr = (os.fdopen(0, closefd=False), os.fdopen(1, "w", buffering=1, closefd=False),
                                         os.fdopen(2, "w", buffering=1, closefd=False))
    return keep


def end(pid: int) -> None:
    """SIGKILL to ``pid`` and to its process group (once it has made its own session)."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


def end_with_parent() -> None:
    """This process gets SIGKILL when its parent ends, however it ends (Linux's PR_SET_PDEATHSIG; elsewhere
    nothing)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)


def warm_torch() -> None:
    """What torch imports on its first use, imported once by a process the kata forks from, so that no fork pays it
    (about 1.2 s each): torch.distributed.tensor and SymPy, which its first tensor on a device of the PrivateUse1
    backend pulls in (the simulated accelerator's install), and torch._dynamo, which its first optimizer does.
    Neither starts a thread, so the process stays safe to fork."""
    import torch

    with contextlib.suppress(ImportError):   # a torch built without distributed support has none
        import torch.distributed.tensor  # noqa: F401 - imported for its import's sake
    torch.optim.Adam(torch.nn.Linear(1, 1).parameters())
