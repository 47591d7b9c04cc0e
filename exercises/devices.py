"""Exercise 1 · devices: where tensors live, and what assignment does.

The note this kata grew from: a learner ran the book's CelebA smile classifier
on a GPU, and plotting the learning curves crashed. The loss history held
Python floats, the accuracy history held GPU tensors, and matplotlib can't read
GPU memory ("can't convert cuda:0 device type tensor to numpy. Use
Tensor.cpu() to copy the tensor to host memory first."). Why?

- `loss.item()` returns a Python float: a plain number in host memory.
- `is_correct.sum()` is a tensor on the GPU; `0 + that` is still a tensor on the
  GPU, and so is `.float()` of it: `.float()` changes the dtype, never the device.
- Only explicit calls move data: `t.to(device)`, `t.cuda()`, `t.cpu()`. A new
  tensor like `torch.tensor([1, 2])` is made on the CPU.
- `Tensor.to` returns a NEW tensor and leaves `t` where it was (so
  `x.to(device)` on its own line does nothing useful: write `x = x.to(device)`);
  it returns `t` itself when `t` is already there. `Module.to` moves the
  module's parameters in place and returns the same module.
- Assignment never moves or copies: `a = b` makes the name `a` refer to the
  object `b` refers to. Assigning a GPU tensor to a name that held a CPU tensor
  rebinds the name; the CPU tensor is untouched.

Run `pytest exercises/devices.py` to check just this file.
"""

import numpy as np
import torch
from torch import nn


def pick_device():
    """Return `torch.device('cuda')` if CUDA is available, else
    `torch.device('mps')` if Apple's MPS is, else `torch.device('cpu')`.

    Hint: `torch.cuda.is_available()`, `torch.backends.mps.is_available()`.
    """
    raise NotImplementedError("return the best torch.device available: cuda, then mps, then cpu")


def device_of(obj):
    """Where does `obj` live? A tensor's `.device`; a module's is the device of
    its first parameter (else its first buffer, else None); anything else (a
    Python number, a list, a NumPy value) lives in no torch device: None.
    """
    raise NotImplementedError("return obj.device for a tensor, the first parameter's device for a module, else None")


def to_device(obj, device):
    """Return `obj` with every tensor moved to `device`, looking inside lists,
    tuples (a named tuple keeps its type) and dicts; other values pass through.

    Never change the containers you were given: build new ones. Remember that
    `t.to(device)` RETURNS the moved tensor.
    """
    raise NotImplementedError("rebuild lists/tuples/dicts, with t.to(device) for each tensor")


def to_python(obj):
    """Return `obj` with every tensor turned into plain Python values on the
    host: a 0-d tensor becomes a `float`, `int` or `bool` (by its dtype), a
    larger one nested lists (`.tolist()`); containers are rebuilt as in
    `to_device`. Python numbers pass through; NumPy scalars become Python ones.

    Must work for tensors on any device and with `requires_grad=True`.
    Hint: `.item()` and `.tolist()` copy to the host for you; `.detach()` first.
    """
    raise NotImplementedError("turn tensors into Python numbers/lists with .item()/.tolist(), recursively")


def host_copy(t):
    """Return a CPU tensor equal to `t` that shares no memory with `t` and has no
    autograd history, whatever device `t` is on.

    The trap: `t.cpu()` returns `t` ITSELF when `t` is already on the CPU, so
    writing into the "copy" would change the original.
    """
    raise NotImplementedError("detach, then make a real copy on the CPU")
