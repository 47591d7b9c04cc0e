"""The device as PyTorch sees it: PrivateUse1 renamed ``simgpu``, its device module
``torch.simgpu``, and whether this process can have it (:func:`support`).

Setting the backend up (:func:`set_up`) is torch's own work for Python backends,
reached through :mod:`kata.sim._compat`; the kernels and the tensors are
:mod:`kata.sim._device`'s.
"""

from __future__ import annotations

import contextlib
import threading
import types

import torch

from ._compat import backend_name, setup_python_backend, version_support
from ._syncs import record

__all__ = ["DEVICE", "NAME", "DeviceModule", "available", "check_device", "is_sim", "reported_available", "set_up",
           "support"]

NAME = "simgpu"
# The one device.  A PrivateUse1 device: it prints as simgpu:0 once set_up() renamed the backend.
DEVICE = torch.device("privateuseone", 0)
_FREE = "privateuseone"  # PrivateUse1's name until someone renames it (once per process)

_lock = threading.Lock()
_set_up = False
_available_depth = 0


def check_device(device) -> bool:
    """True if `device` (a torch.device, str or None) means simgpu."""
    if device is None:
        return False
    device = torch.device(device)
    if device.type != NAME:
        return False
    if device.index not in (None, 0):
        raise RuntimeError(f"{NAME}: invalid device ordinal {device.index}: "
                           f"the simulator has one device, {NAME}:0")
    return True


class DeviceModule(types.ModuleType):
    """``torch.simgpu``: what PyTorch asks a PrivateUse1 backend's module."""

    def is_available(self) -> bool:
        return reported_available()

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device) -> None:
        if not check_device(device if isinstance(device, (str, torch.device)) else f"{NAME}:{device}"):
            raise ValueError(f"not a {NAME} device: {device!r}")

    def synchronize(self, device=None) -> None:
        record("synchronize")  # the host waits for the device: the copies to the host in flight land

    def _is_in_bad_fork(self) -> bool:  # (the name PyTorch asks a backend module for)
        return False

    def get_amp_supported_dtype(self) -> list:  # torch.autocast's question: the dtypes CUDA's autocast takes
        return [torch.float16, torch.bfloat16]

    def manual_seed(self, seed) -> None:
        torch.default_generator.manual_seed(int(seed))  # the device draws from the CPU's generator

    def manual_seed_all(self, seed) -> None:  # (what torch.manual_seed calls, after seeding the CPU)
        torch.default_generator.manual_seed(int(seed))


def support(version: str | None = None) -> tuple[bool, str]:
    """Whether the simulated accelerator can run in this process: ``(True, why)``, or
    ``(False, reason)`` with a one-line reason such as "the simulated accelerator
    supports torch 2.11 to 2.14; this is torch 2.10.0".

    With a `version` string, says whether that torch version is supported (from the
    table in :mod:`kata.sim._compat` alone).  Without, it checks this torch: its
    version, the internals the simulator uses, and that PyTorch's PrivateUse1 backend
    is still free (or already ours)."""
    ok, why = version_support(version)
    if not ok or version is not None or _set_up:
        return ok, why
    taken = backend_name()
    if taken != _FREE:
        return False, (f"PyTorch's PrivateUse1 backend is already named '{taken}' in this process, "
                       f"and it can be named only once, so the simulated accelerator can't be '{NAME}'")
    return ok, why


def set_up() -> None:
    """Rename PrivateUse1 ``simgpu`` and register ``torch.simgpu``, the generated
    ``.simgpu()`` methods, and the Python hooks and device guard autograd asks for.
    Once per process; RuntimeError (with :func:`support`'s reason) where it can't."""
    global _set_up
    with _lock:
        if _set_up:
            return
        ok, why = support()
        if not ok:
            raise RuntimeError(f"kata.sim can't install: {why}")
        setup_python_backend(NAME, DeviceModule(f"torch.{NAME}"))
        _set_up = True


def reported_available() -> bool:
    """Whether the device reports itself available now: inside :func:`available` (kata.sim.active())."""
    return _available_depth > 0


@contextlib.contextmanager
def available():
    """``torch.simgpu.is_available()`` (so ``torch.accelerator.is_available()``) is True inside."""
    global _available_depth
    _available_depth += 1
    try:
        yield
    finally:
        _available_depth -= 1


def is_sim(obj) -> bool:
    """True for a simgpu tensor, a module whose first parameter (else buffer) is on
    simgpu, a simgpu ``torch.device``, or a device string such as ``"simgpu:0"``."""
    if isinstance(obj, torch.Tensor):
        return obj.device.type == NAME
    if isinstance(obj, torch.nn.Module):
        for t in obj.parameters():
            return t.device.type == NAME
        for t in obj.buffers():
            return t.device.type == NAME
        return False
    if isinstance(obj, torch.device):
        return obj.type == NAME
    if isinstance(obj, str):
        return obj.split(":")[0] == NAME
    return False
