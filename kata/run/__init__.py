"""``kata run``: any PyTorch script, unmodified, as if this machine had a GPU.

    from kata.run import Options, run_script
    status = run_script("train.py", ["--epochs", "3"], Options(quick=2))

The script runs as ``python PATH ARGS`` would (as ``__main__``, with ``sys.argv`` set) and sees a
one-GPU CUDA machine backed by the simulated accelerator (:mod:`kata.sim`): ``torch.cuda``
answers as one GPU does, ``cuda`` device arguments go to the simulated device, and its tensors say
``cuda:0`` (:mod:`kata.run._gpu`).  A failure prints PyTorch's message in CUDA's words at the
script's line, with the kata's lesson where it has one; at the end, the syncs that kept the GPU
waiting, by kind and by line (:mod:`kata.run._report`).  ``--quick N`` cuts every DataLoader pass to
N batches and saves matplotlib's figures instead of showing them (:mod:`kata.run._loops`);
``torchvision.datasets.CelebA`` reads the kata's synthetic CelebA, or ``--celeba DIR``
(:mod:`kata.run._data`).

Installing the machine changes the process for good (the simulator can't be uninstalled), so the
command runs each script in a process of its own.
"""

from kata.run._limits import NotSimulated
from kata.run._runner import Options, run_script

__all__ = ["NotSimulated", "Options", "run_script"]
