"""``kata run``: any PyTorch script, unmodified, as if this machine had a GPU.

    import kata
    status = kata.run("train.py", "--epochs", "3", quick=2)   # in a process of its own, as `kata run` does

    from kata.asgpu import Options, run_script                  # in this process, for good
    status = run_script("train.py", ["--epochs", "3"], Options(quick=2))

The script runs as ``python PATH ARGS`` would (as ``__main__``, with ``sys.argv`` set) and sees a
one-GPU CUDA machine backed by the simulated accelerator (:mod:`kata.sim`): ``torch.cuda``
answers as one GPU does, ``cuda`` device arguments go to the simulated device, and its tensors say
``cuda:0`` (:mod:`kata.asgpu._gpu`).  A failure prints PyTorch's message in CUDA's words at the
script's line, with the kata's lesson where it has one; at the end, the syncs that kept the GPU
waiting, by kind and by line (:mod:`kata.asgpu._report`).  ``--quick N`` cuts every DataLoader pass to
N batches and saves matplotlib's figures instead of showing them (:mod:`kata.asgpu._loops`);
``torchvision.datasets.CelebA`` reads the kata's synthetic CelebA, or ``--celeba DIR``
(:mod:`kata.asgpu._data`).

Installing the machine changes the process for good (the simulator can't be uninstalled), so the
command runs each script in a process of its own.
"""

import subprocess
import sys

from kata.asgpu._limits import NotSimulated
from kata.asgpu._runner import Options, run_script

__all__ = ["NotSimulated", "Options", "run", "run_script"]


def run(path, *args, quick: int | None = None, celeba: str | None = None, out: str | None = None,
        report: bool = True) -> int:
    """``kata run PATH ARGS`` from Python (a notebook's cell, a CI script): the script runs in a new
    process, whose output is printed here as it comes; returns its exit status (1 for a failure)."""
    command = [sys.executable, "-m", "kata", "run"]
    command += ["--quick", str(quick)] if quick is not None else []
    command += ["--celeba", str(celeba)] if celeba is not None else []
    command += ["--out", str(out)] if out is not None else []
    command += [] if report else ["--no-report"]
    with subprocess.Popen([*command, "--", str(path), *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        for line in proc.stdout:
            print(line, end="", flush=True)
    return proc.returncode
