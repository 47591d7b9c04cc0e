"""Opting in: :func:`install` registers the device once per process, :func:`active`
makes it report itself available.

What install() registers: the backend and device module (:mod:`kata.sim._backend`),
the PrivateUse1 kernels below, CUDA's autocast rules (:mod:`kata.sim._autocast`), the answer
to ``_has_compatible_shallow_copy_type`` that lets ``Module.to("cpu")`` keep its Parameters,
and the tagger and deserializer that let ``torch.save``/``torch.load`` treat device tensors as CUDA tensors
(:mod:`kata.sim._saving`).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time

import torch

from ._autocast import register as register_autocast
from ._backend import DEVICE, available, set_up
from ._compat import is_late_backend_error
from ._device import AS_FOR_CUDA, run
from ._rules import shallow_copy_compatible
from ._saving import register

__all__ = ["active", "install"]

_aten = torch.ops.aten

# The PrivateUse1 (simgpu) kernels: what runs with no SimTensor argument to dispatch
# on (factories with device=simgpu, below which everything else is composite), or
# with the Python key excluded (the copy inside torch.tensor(..., device=simgpu)).
# A Python *fallback* for the key fails an internal assert for some ops on 2.14.
_BACKEND_OPS = ("empty.memory_format", "empty_strided", "tril_indices", "triu_indices",
                "_copy_from", "_copy_from_and_resize", "_local_scalar_dense", "scalar_tensor")


def _backend_kernel(name):
    packet, _, overload = name.partition(".")
    op = getattr(getattr(_aten, packet), overload or "default")

    def kernel(*args, **kwargs):
        return run(op, args, kwargs)
    return kernel


_install_lock = threading.Lock()
_installed = False
_library = None  # the torch.library.Library holding the simgpu kernels (kept alive)
_passed = None  # the global one: every op passed through at the autocast key but those of kata.sim._autocast
_failure: str | None = None  # why install() failed for good in this process


def install() -> torch.device:
    """Register the simulated device (once per process) and return ``simgpu:0``.

    Idempotent and thread-safe.  Raises RuntimeError, with a one-line reason, on a
    torch the simulator doesn't support (``kata.sim.support()`` says so beforehand),
    if PyTorch's PrivateUse1 backend was already given another name in this process,
    or after the process's first backward pass.
    """
    global _installed, _library, _passed, _failure
    if _installed:
        return DEVICE
    with _install_lock:
        if _installed:
            return DEVICE
        if _failure is not None:
            raise RuntimeError(_failure)
        set_up()  # RuntimeError if this torch or process can't have it
        if _library is None:
            library = torch.library.Library("aten", "IMPL")
            for name in _BACKEND_OPS:
                library.impl(name, _backend_kernel(name), "PrivateUse1")
            # Asked above the Python key (autograd's level) by `x.data = y` and Module._apply.
            library.impl("_has_compatible_shallow_copy_type", shallow_copy_compatible, "AutogradPrivateUse1")
            for op, kernel in AS_FOR_CUDA.items():
                for key in ("AutogradPrivateUse1", "PrivateUse1"):
                    library.impl(f"{op._opname}.{op._overloadname}", kernel, key)
            _passed = torch.library.Library("_", "IMPL")
            register_autocast(library, _passed)
            _library = library
            register()
        _failure = _check_autograd()
        if _failure is not None:
            raise RuntimeError(_failure)
        atexit.register(_let_autograd_finish)
        _installed = True
    return DEVICE


def _let_autograd_finish() -> None:
    """At exit, give autograd's device thread a moment to let go of its last graph.

    The device's autograd thread (``pt_autograd_0``) may still be releasing a
    graph task, which takes the GIL, while the interpreter finalizes; a thread
    that asks for the GIL then is ended by Python, and that ends the process
    with "terminate called without an active exception" (SIGABRT). Measured:
    8 of 40 processes that only installed the simulator aborted at exit without
    this pause, 0 of 40 with it (torch 2.14.1). 50 ms, once, at exit."""
    time.sleep(0.05)


def _check_autograd() -> str | None:
    """Why autograd can't run on the device in this process, or None if it can.

    PyTorch's autograd engine sizes its per-device queues at the process's
    first backward pass; a backend registered after that crashes it with an
    internal assert. So install() must come before any backward pass (the
    kata's pytest plugin installs the simulator while collecting, before any
    test runs)."""
    probe = torch.ones(1, device=DEVICE, requires_grad=True)
    try:
        (probe * 2).sum().backward()
    except RuntimeError as err:
        if not is_late_backend_error(err):
            raise
        return ("kata.sim.install() came after this process's first backward pass, and PyTorch's autograd "
                "engine can't take a new device then: install the simulator before any training step (the "
                "kata's pytest plugin does it while collecting the tests)")
    return None


@contextlib.contextmanager
def active():
    """Install, and make the device report itself available inside the block:
    ``torch.simgpu.is_available()`` and ``torch.accelerator.is_available()`` are
    True there.  Yields ``torch.device("simgpu:0")``.  Tensors on the device work
    outside the block too; only the availability report depends on it."""
    device = install()
    with available():
        yield device
