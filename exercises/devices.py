"""Exercise 1 · devices: where tensors live, and what assignment does.

The note this kata grew from: a learner ran the book's CelebA smile classifier
on a GPU. Training went fine; plotting the learning curves crashed with

    can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy
    the tensor to host memory first.

The loss panel drew; the accuracy panel did not: the loss history held plain
Python numbers, the accuracy history held tensors that were still on the GPU.
The note asks the questions this exercise answers, one function at a time:

- Where is a tensor created, and what, exactly, moves it?
- When a tensor is "moved", what happens to the tensor you started from?
- What does `.float()` change, and what does it keep?
- What turns a value on a device into a number matplotlib can plot?
- Can assigning a GPU tensor to a name that held a CPU tensor move anything?

Try each question in a Python shell first: the `meta` device works on every
machine (`torch.ones(2, device='meta')`), so you can watch placements without
a GPU.

Run `pytest exercises/devices.py` to check just this file, and `kata hint
devices` (or `kata hint devices FUNCTION`) when you are stuck.
"""

import numpy as np
import torch
from torch import nn


def pick_device():
    """Return the best device this machine offers, as a `torch.device`.

    Specification:
    - CUDA when PyTorch reports CUDA as available; otherwise Apple's MPS when
      PyTorch reports MPS as available; otherwise the CPU.
    - Ask PyTorch's own availability functions for CUDA and for MPS (the checks
      pretend each answer in turn), not an environment variable or a device
      count.
    - The result is a `torch.device` object (the generic 'cuda', 'mps' or
      'cpu' device, without an index), never a string.

    Concept: a device is a place where tensors live and are computed on; your
    code chooses it once and then places tensors and models there.
    """
    raise NotImplementedError(
        "`pick_device` is not written yet: see its docstring, and `kata hint devices pick_device`")


def device_of(obj):
    """Where does `obj` live? Return a `torch.device`, or None.

    Specification:
    - a tensor: the device it is on;
    - a module (`nn.Module`): the device of its first parameter; a module
      without parameters: that of its first buffer; a module holding no
      tensors at all (an `nn.ReLU()`): None;
    - anything else (a Python number, a list, a NumPy array or scalar): None,
      since it lives in ordinary host memory, on no torch device.

    Concept: a tensor carries its placement with it; a module has no place of
    its own, only the tensors it holds do.
    """
    raise NotImplementedError(
        "`device_of` is not written yet: see its docstring, and `kata hint devices device_of`")


def to_device(obj, device):
    """Return `obj` with every tensor in it moved to `device`.

    Specification:
    - `obj` may be a tensor, or lists, tuples, named tuples and dicts nested in
      each other to any depth, with tensors and other values as leaves.
    - The result has the same structure: a list stays a list, a tuple a tuple,
      a named tuple that named tuple; any dict (an `OrderedDict`, a
      `defaultdict`...) comes back as a dict with the same keys in the same
      order (keeping its own type too is welcome, not required).
    - Every tensor, however deep, is on `device` in the result, with its shape,
      dtype and values unchanged. Other leaves (numbers, strings, None...)
      come back as they are.
    - Never change what you were given: the caller may still be using `obj`,
      its containers and its tensors, so build new containers.

    Concept: what moving a tensor gives you, and what becomes of the tensor you
    moved. Find out before you write the recursion.
    """
    raise NotImplementedError(
        "`to_device` is not written yet: see its docstring, and `kata hint devices to_device`")


def to_python(obj):
    """Return `obj` with every tensor in it turned into plain Python values on
    the host.

    Specification:
    - A 0-d tensor becomes one Python scalar whose type follows the tensor's
      dtype: `bool` for a boolean tensor, `float` for a floating-point one,
      `int` for an integer one.
    - A tensor with one or more dimensions becomes nested Python lists of such
      scalars, one level per dimension.
    - A NumPy scalar becomes the Python scalar of the same kind (a real Python
      `float`, `int` or `bool`, not a NumPy type).
    - Containers (lists, tuples, named tuples, dicts) are rebuilt as in
      `to_device`; other values (Python numbers, strings...) come back as they
      are; `obj` itself is never changed.
    - It works for tensors on any device, and for tensors that require grad.

    Concept: a tensor that holds one number is still a tensor, on its device;
    a Python number lives in host memory and is what matplotlib, `json` or
    `print` understand. This is the seed's fix.
    """
    raise NotImplementedError(
        "`to_python` is not written yet: see its docstring, and `kata hint devices to_python`")


def host_copy(t):
    """Return a copy of the tensor `t` in host (CPU) memory.

    Specification, whatever device `t` is on (the CPU included):
    - the result is a tensor on the CPU, equal to `t`: the same shape, dtype
      and values;
    - it is a different tensor object, and it shares no memory with `t`:
      writing into the copy never changes `t`, nor anything `t` is a view of
      (the copy of a view holds only the view's elements);
    - it has no autograd history: it does not require grad and has no
      `grad_fn`, even when `t` has;
    - `t` is left as it was.

    Concept: a new tensor, a view of the same memory and the very same object
    look alike until you write into one of them.
    """
    raise NotImplementedError(
        "`host_copy` is not written yet: see its docstring, and `kata hint devices host_copy`")
