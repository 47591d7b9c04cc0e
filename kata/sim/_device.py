"""The device's tensors and how ops run on them: :class:`SimTensor`, its
``__torch_dispatch__`` (:func:`run`), the PrivateUse1 kernels, and
:func:`install` / :func:`active`.

This is the hot path: every op on a device tensor runs :func:`run` once, so it
stays plain Python with no per-op lookups beyond a few set memberships.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time

import torch

from ._backend import DEVICE, NAME, available, check_device, set_up
from ._compat import (
    DISABLED_TORCH_FUNCTION,
    INDEX_DEVICE_ERROR,
    MIXING_ERROR,
    NUMPY_ERROR,
    is_late_backend_error,
    make_wrapper_subclass,
    set_metadata,
    tensor_repr,
)
from ._syncs import counted, record

__all__ = ["SimTensor", "active", "install", "restore", "run"]

_aten = torch.ops.aten
_CPU = torch.device("cpu")


# --------------------------------------------------------------------------- the tensor

_TENSOR_DATA = torch.Tensor.data  # the C++ getter and setter of Tensor.data


class _outside_inference_mode:
    """A method that exists only outside ``torch.inference_mode()`` (``hasattr`` is False inside)."""

    def __init__(self, method):
        self.method = method

    def __get__(self, obj, cls=None):
        if obj is not None and torch.is_inference_mode_enabled():
            raise AttributeError(self.method.__name__)
        return self.method.__get__(obj, cls)


class SimTensor(torch.Tensor):
    """A tensor on ``simgpu:0``: a wrapper with no storage around a CPU tensor."""

    @staticmethod
    def __new__(cls, cpu: torch.Tensor):
        if cpu.layout is not torch.strided or cpu.is_quantized:
            raise NotImplementedError(f"{NAME}: only dense (strided) tensors are simulated")
        r = make_wrapper_subclass(
            cls, cpu.size(), strides=cpu.stride(), storage_offset=cpu.storage_offset(),
            dtype=cpu.dtype, layout=cpu.layout, device=DEVICE, requires_grad=False)
        r._cpu = cpu
        return r

    __torch_function__ = DISABLED_TORCH_FUNCTION  # no Python on every op

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return run(func, args, kwargs or {})

    # A traceable wrapper subclass: lets Module.to swap parameters in place, keeping
    # each Parameter object, as CUDA's `param.data = moved` does.  Not in inference
    # mode, where torch.utils.swap_tensors fails on a parameter that has been through
    # backward; Module.to then takes the `param.data = moved` path (the setter below).
    @_outside_inference_mode
    def __tensor_flatten__(self):
        return ["_cpu"], None

    @staticmethod
    def __tensor_unflatten__(inner_tensors, meta, outer_size, outer_stride):
        return SimTensor(inner_tensors["_cpu"])

    # `x.data = y` replaces what x holds, keeping the object (Module.to, hand-written
    # updates).  PyTorch copies the tensor's metadata; the data behind it is ours to move.
    @property
    def data(self):
        return _TENSOR_DATA.__get__(self)

    @data.setter
    def data(self, new):
        if not isinstance(new, SimTensor):
            raise RuntimeError(f"{NAME}: `x.data = y` with x on {DEVICE} and y on {new.device} is not "
                               f"simulated: move y first (y.to(x.device)), or assign x = y")
        _TENSOR_DATA.__set__(self, new)
        self._cpu = new._cpu

    # Host transfers whose kind the dispatcher can't tell apart ------------------

    def numpy(self, *, force=False):
        with counted("numpy"):
            if not force:  # PyTorch's own check and words (tensor_numpy.cpp)
                raise TypeError(NUMPY_ERROR.format(self.device))
            return self._cpu.detach().clone().numpy(force=True)  # a host copy, as .cpu() makes

    def tolist(self):
        with counted("tolist"):
            return self._cpu.tolist()  # (Tensor.tolist refuses tensor subclasses)

    def __float__(self):
        with counted("float"):
            return super().__float__()

    def __int__(self):
        with counted("int"):
            return super().__int__()

    def __index__(self):
        with counted("int"):
            return super().__index__()

    def __bool__(self):
        with counted("bool"):
            return super().__bool__()

    def __repr__(self, *, tensor_contents=None):
        with counted("repr"):  # print as a real device's tensor prints
            return tensor_repr(self, tensor_contents, parameter=isinstance(self, torch.nn.Parameter))

    def __format__(self, format_spec):
        if self.dim() == 0:
            with counted("repr"):
                return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __reduce_ex__(self, proto):  # pickle, torch.save: the data, back on simgpu when loaded
        return restore, (self._cpu.detach(), self.requires_grad)


def restore(cpu: torch.Tensor, requires_grad: bool) -> SimTensor:
    """A pickled device tensor, loaded: installs the device first."""
    install()
    return SimTensor(cpu).requires_grad_(requires_grad)


# --------------------------------------------------------------------------- dispatch

# Ops whose tensors may be on both devices: copies, and (as on CUDA) CPU index
# tensors for indexing a device tensor.
_ANY_DEVICE = {_aten.copy_.default, _aten._copy_from.default,
               _aten._copy_from_and_resize.default, _aten._to_copy.default}
# Asked through the Python key only in inference mode (Module.to asks it of each parameter).
_SHALLOW_COPY_TYPE = _aten._has_compatible_shallow_copy_type.default
_INDEX_OPS = {_aten.index.Tensor, _aten.index_put_.default, _aten.index_put.default,
              _aten._index_put_impl_.default}
_COPIES_TO_HOST = {_aten.copy_.default, _aten._copy_from.default,
                   _aten._copy_from_and_resize.default}
_DATA_DEPENDENT = {  # the host must read the result (its size or value) before going on
    _aten.equal.default: "equal",
    _aten.nonzero.default: "nonzero",
    _aten.masked_select.default: "masked_select",
    _aten._unique2.default: "unique",
    _aten.unique_dim.default: "unique",
    _aten.unique_consecutive.default: "unique",
    _aten._local_scalar_dense.default: "item",
}
_INDEX = _aten.index.Tensor
_TO_COPY = _aten._to_copy.default
_COPY_FROM = (_aten._copy_from.default, _aten._copy_from_and_resize.default)
_NATIVE_DROPOUT = _aten.native_dropout.default


def _dropout(x, p, train):
    """``native_dropout`` (what F.dropout becomes on an accelerator) computed as the
    CPU's own F.dropout computes it: the same random numbers and values as a CPU
    run, and faster than the CPU's native_dropout kernel (a bool-mask bernoulli)."""
    if train is False or not 0 < p < 1 or x.numel() == 0:
        return _NATIVE_DROPOUT(x, p, train)
    noise = torch.empty_like(x).bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise, noise != 0


def run(func, args, kwargs):
    """Run `func` on the CPU tensors behind any SimTensor arguments, and wrap results."""
    if func is _SHALLOW_COPY_TYPE:  # what it answers outside inference mode
        return isinstance(args[0], SimTensor) == isinstance(args[1], SimTensor)
    any_device = func in _ANY_DEVICE
    if func in _INDEX_OPS and not isinstance(args[0], SimTensor):
        raise RuntimeError(INDEX_DEVICE_ERROR.format(args[0].device))
    known = {}  # id(tensor passed) -> what to return if an output is that very tensor

    def unwrap(x, in_list):
        if isinstance(x, SimTensor):
            cpu = x._cpu
            known[id(cpu)] = x
            return cpu
        # A tensor of another device: fine for copies, as a 0-d CPU operand (a scalar,
        # as on CUDA) or as a CPU index; else PyTorch's own error.
        if not (any_device or (x.device.type == "cpu" and (
                (x.dim() == 0 and not in_list) or (in_list and func in _INDEX_OPS)))):
            raise RuntimeError(MIXING_ERROR.format(DEVICE, x.device))
        known[id(x)] = x
        return x

    def unwrap_arg(x):
        if isinstance(x, torch.Tensor):
            return unwrap(x, False)
        if isinstance(x, (list, tuple)) and x and any(isinstance(y, torch.Tensor) for y in x):
            return type(x)(unwrap(y, True) if isinstance(y, torch.Tensor) else y for y in x)
        return x

    cpu_args = [unwrap_arg(a) for a in args]
    to_host = False  # results go to another device (`device=` says so): don't wrap them
    target = None
    if kwargs:
        cpu_kwargs = {}
        for key, value in kwargs.items():
            if key == "device" and value is not None:
                if check_device(value):
                    value = _CPU
                else:
                    to_host, target = True, torch.device(value).type
            else:
                value = unwrap_arg(value)
            cpu_kwargs[key] = value
        if "pin_memory" in cpu_kwargs:
            cpu_kwargs["pin_memory"] = None
    else:
        cpu_kwargs = kwargs

    if func in _COPY_FROM:  # CPU has no kernel of its own for these (its copy_ does it)
        src, dst = cpu_args[0], cpu_args[1]
        if dst is args[1] and src is not args[0]:
            record("cpu")  # a SimTensor's data copied into a CPU tensor
        if func is not _COPY_FROM[0]:
            dst.resize_(src.shape)
        dst.copy_(src, *cpu_args[2:3])
        return args[1]
    if func in _COPIES_TO_HOST:
        if not isinstance(args[0], SimTensor) and isinstance(args[1], SimTensor):
            record("cpu")
    elif func is _TO_COPY:
        if target == "cpu":
            record("cpu")
    elif func in _DATA_DEPENDENT:
        record(_DATA_DEPENDENT[func])
    elif func is _INDEX and any(i is not None and i.dtype in (torch.bool, torch.uint8)
                                for i in cpu_args[1]):
        record("index")

    if func is _NATIVE_DROPOUT:
        out = _dropout(*cpu_args, **cpu_kwargs)
    else:
        out = func(*cpu_args, **cpu_kwargs)

    if isinstance(out, torch.Tensor):
        return _wrap(out, known, to_host)
    if isinstance(out, (tuple, list)):
        return type(out)(_wrap(o, known, to_host) if isinstance(o, torch.Tensor) else o
                         for o in out)
    return out


def _wrap(out, known, to_host):
    same = known.get(id(out))
    if same is not None:  # an in-place or out= op hands back its argument
        if isinstance(same, SimTensor) and (same.shape != out.shape or same.stride() != out.stride()
                                            or same.storage_offset() != out.storage_offset()):
            set_metadata(same, out)  # resize_, an out= tensor resized, squeeze_, t_ ...
        return same
    if to_host:
        return out
    if out.is_inference() != torch.is_inference_mode_enabled():
        # An inference tensor is one *allocated* in inference mode: a view of a normal
        # tensor made there (detach, view) is a normal tensor, as on CUDA, and a view of
        # an inference tensor made outside it is an inference tensor.
        with torch.inference_mode(out.is_inference()):
            return SimTensor(out)
    return SimTensor(out)


# The PrivateUse1 (simgpu) kernels: what runs with no SimTensor argument to dispatch
# on (factories with device=simgpu, below which everything else is composite), or
# with the Python key excluded (the copy inside torch.tensor(..., device=simgpu)).
# A Python *fallback* for the key fails an internal assert for some ops on 2.14.
_BACKEND_OPS = ("empty.memory_format", "empty_strided", "tril_indices", "triu_indices",
                "_copy_from", "_copy_from_and_resize", "_local_scalar_dense")


def _backend_kernel(name):
    packet, _, overload = name.partition(".")
    op = getattr(getattr(_aten, packet), overload or "default")

    def kernel(*args, **kwargs):
        return run(op, args, kwargs)
    return kernel


# --------------------------------------------------------------------------- opting in

_install_lock = threading.Lock()
_installed = False
_library = None  # the torch.library.Library holding the simgpu kernels (kept alive)
_failure: str | None = None  # why install() failed for good in this process


def install() -> torch.device:
    """Register the simulated device (once per process) and return ``simgpu:0``.

    Idempotent and thread-safe.  Raises RuntimeError, with a one-line reason, on a
    torch the simulator doesn't support (``kata.sim.support()`` says so beforehand),
    if PyTorch's PrivateUse1 backend was already given another name in this process,
    or after the process's first backward pass.
    """
    global _installed, _library, _failure
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
            _library = library
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
