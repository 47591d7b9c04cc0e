"""``torch.save`` and ``torch.load`` of device tensors, as for CUDA tensors.

A simgpu tensor is saved as a CUDA tensor is: its data as a storage with the
location tag ``cuda:0``, rebuilt by ``torch._utils._rebuild_tensor_v2`` (or
``_rebuild_parameter``), which ``torch.load``'s default ``weights_only=True``
accepts.  The simulator stands for CUDA, and a checkpoint it writes is one a CUDA
machine wrote:

- ``torch.load(f, map_location="cpu")`` (or ``torch.device("cpu")``, or a function)
  gives CPU tensors, anywhere;
- in a process without CUDA and without the simulator installed (a fresh process,
  a CPU-only machine), ``torch.load(f)`` raises PyTorch's own error, word for word:
  "Attempting to deserialize object on a CUDA device but torch.cuda.is_available()
  is False. If you are running on a CPU-only machine, please use torch.load with
  map_location=torch.device('cpu') to map your storages to the CPU."
  (torch/serialization.py, ``_validate_device``);
- on a machine with CUDA, it loads onto ``cuda:0``;
- in a process with the simulator installed and no CUDA, ``torch.load(f)`` and
  ``map_location`` of ``simgpu`` (or ``cuda``, for which the simulator stands in)
  load onto ``simgpu:0``, as CUDA loads onto ``cuda:0``.  Where real CUDA is there
  too, CUDA's checkpoints load onto CUDA, except inside ``kata.sim.active()``, where
  the simulator is the accelerator.

Both go through PyTorch's public hook for devices,
``torch.serialization.register_package`` (:func:`register`): a tagger that
recognises the storages behind device tensors, and a deserializer that hands
``torch.load`` a storage that reports ``simgpu:0`` as its device, so that
``_rebuild_tensor`` makes a device tensor of it.
"""

from __future__ import annotations

import re

import torch

from ._backend import DEVICE, NAME, reported_available

__all__ = ["SAVED_AS", "DeviceStorage", "as_device_storage", "deserialize", "pickled", "register", "tag"]

SAVED_AS = "cuda:0"
_MARK = "_kata_simgpu"  # on the CPU storage behind a device tensor, while it is being saved
_PRIORITY = 5  # before the CPU's tagger (10) and CUDA's deserializer (20)
_SIMULATED = re.compile(rf"({NAME}|cuda)(:0)?$")
_registered = False


class DeviceStorage(torch.UntypedStorage):
    """Host memory that holds a loaded device tensor's data, and says it is on the device."""

    @property
    def device(self):
        return DEVICE


def pickled(cpu: torch.Tensor, requires_grad: bool, parameter: bool):
    """``__reduce_ex__`` of a device tensor whose data is `cpu`: PyTorch's own reduction of a CPU
    tensor (or Parameter) over the same memory, its storage marked for :func:`tag`."""
    host = cpu.detach()
    setattr(host.untyped_storage(), _MARK, True)
    if parameter:
        return torch.nn.Parameter(host, requires_grad=requires_grad).__reduce_ex__(2)
    if requires_grad:
        host.requires_grad_()
    return host.__reduce_ex__(2)


def tag(storage) -> str | None:
    """The location ``torch.save`` writes for a storage: ``cuda:0`` for a device tensor's."""
    return SAVED_AS if getattr(storage, _MARK, False) else None


def deserialize(storage, location: str):
    """``torch.load``'s restore for `location` (a checkpoint's tag, or map_location's device):
    onto the device for ``simgpu``, ``simgpu:0``, and ``cuda``, ``cuda:0`` when there is no CUDA here
    (or inside kata.sim.active())."""
    if not _SIMULATED.match(location):
        return None
    if location.startswith("cuda") and torch.cuda.is_available() and not reported_available():
        return None
    return as_device_storage(storage)


def as_device_storage(storage):
    """A host storage as the device's: the tensors ``torch.load`` rebuilds over it are device tensors."""
    if type(storage) is torch.UntypedStorage:
        storage.__class__ = DeviceStorage
    return storage


def register() -> None:
    """Register :func:`tag` and :func:`deserialize` with torch.serialization (once per process)."""
    global _registered
    if not _registered:
        torch.serialization.register_package(_PRIORITY, tag, deserialize)
        _registered = True
