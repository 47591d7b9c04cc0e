"""A simulated accelerator, ``simgpu``: a device that is not the CPU as far as
PyTorch's device checks go, while it computes on the CPU.

It lets the kata's checks catch the mistakes of the learner's note (a history of
device tensors handed to matplotlib, a CPU batch fed to a model on the device,
one ``.item()`` per batch) on machines without a GPU, and count device-to-host
synchronisations.

API::

    install() -> torch.device          # idempotent; torch.device("simgpu:0")
    active() -> ContextManager[torch.device]
                                       # install(), and torch.simgpu.is_available()
                                       # (so torch.accelerator.is_available()) is True inside
    count_syncs() -> ContextManager[Syncs]
                                       # .total, .by_kind {kind: n}, .events [(kind, "file:line")], .reset()
    is_sim(obj) -> bool                # a simgpu tensor, module (by its first parameter),
                                       # torch.device or device string
    NAME = "simgpu"; SimTensor         # the tensor class of the device's tensors

Usage::

    from kata import simulator
    dev = simulator.install()
    model = build_model().to(dev)                    # moves the parameters in place
    with simulator.count_syncs() as syncs:
        loss = loss_fn(model(x.to(dev))[:, 0], y.to(dev).float()); loss.item()
    assert syncs.by_kind == {"item": 1}

What behaves as on a real GPU (CUDA):

- ``t.device`` is ``simgpu:0``; ``x.to(dev)`` copies to it; ``t.to(dev)`` of a tensor
  already there returns ``t`` itself; ``.float()`` and other dtype casts keep the
  device; ``t.cpu()`` / ``t.to("cpu")`` returns a new CPU tensor (a copy);
  ``torch.zeros(..., device=dev)``, ``torch.tensor(..., device=dev)``,
  ``torch.arange(..., device=dev)``, ``torch.randn(..., device=dev)`` and the
  ``*_like`` factories make device tensors; ``torch.tensor([...])`` with no device
  is a CPU tensor.  ``t.simgpu()`` and ``model.simgpu()`` work like ``.cuda()``.
- ``Module.to(dev)`` moves the parameters in place (the same ``Parameter``
  objects, now of class :class:`SimTensor`; ``isinstance(p, nn.Parameter)`` stays
  True); autograd, ``BCELoss``, ``torch.optim.Adam``, ``torch.no_grad()``,
  ``state_dict()``, ``load_state_dict()`` and ``copy.deepcopy(model)`` work.
- Mixing devices raises ``RuntimeError: Expected all tensors to be on the same
  device, but found at least two devices, simgpu:0 and cpu!``.  A 0-d CPU tensor
  passed directly as an operand is a scalar, as on CUDA (``sim_t + torch.tensor(2.)``
  works); copies (``copy_``, ``.to``) and CPU index tensors may cross devices.
- ``t.numpy()``, ``np.asarray(t)``, ``np.array([t0, t1])`` and matplotlib's
  ``ax.plot([t0, t1])`` raise ``TypeError: can't convert simgpu:0 device type
  tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.``
  (PyTorch's own check); ``float(t)``, ``int(t)``, ``bool(t)``, ``t.item()``,
  ``t.tolist()`` and ``print(t)`` work and return host values, as on CUDA.

Synchronisations counted, by kind (in a :func:`count_syncs` block):
``"item"`` (``t.item()``, and ``.item()`` inside library code such as
``torch.allclose``), ``"float"`` / ``"int"`` / ``"bool"`` (``float(t)``,
``int(t)``/``operator.index(t)``, ``bool(t)`` and ``if t:``), ``"cpu"``
(``t.cpu()``, ``t.to("cpu")``, ``cpu_t.copy_(t)``, ``numpy(force=True)``),
``"tolist"``, ``"numpy"`` (every attempt, failing or not: ``t.numpy()``,
``np.asarray(t)``), ``"repr"`` (``repr``/``str``/``print``/``format`` of a device
tensor), and ops whose result size or value the host must read:
``"equal"`` (``torch.equal``), ``"nonzero"``, ``"masked_select"``, ``"unique"``,
``"index"`` (indexing with a boolean mask).  One Python-level call counts once.
Host-to-device copies are not syncs.

How it works: PyTorch's PrivateUse1 backend is renamed ``simgpu``.  A device
tensor is a wrapper tensor subclass (:class:`SimTensor`) with the device
``simgpu:0`` and no storage of its own; it holds a plain CPU tensor.  Its
``__torch_dispatch__`` (below autograd, so autograd works unchanged) checks the
devices, unwraps to the CPU tensors, runs the same CPU kernel and wraps the
results.  Factory calls that name the device (``torch.zeros(..., device=dev)``,
and the ``empty`` inside ``cpu_t.to(dev)``) reach a few PrivateUse1 kernels
registered from Python that do the same.  No dispatch or torch-function mode
is ever pushed, so plain CPU tensors and real devices never see this code.
Overhead: about 15 us of Python per op (about 140 ops per training step of the
book's CNN), within a few per cent of the CPU's time for that step.

Opting in, and what it changes for the process: nothing happens on import.
:func:`install` renames the PrivateUse1 backend (once per process; it fails with
a clear error if something else already took it) and registers the
``torch.simgpu`` device module, Python hooks and device guard (autograd asks
them), and the kernels.  This cannot be undone in the process.  From then on:

- ``torch.accelerator.current_accelerator()`` returns ``simgpu`` (PyTorch prefers
  a registered PrivateUse1 backend to CUDA), and ``torch.accelerator.is_available()``
  and ``torch.simgpu.is_available()`` are True only inside :func:`active`, so code
  that picks "the accelerator if available" does not pick the simulator unless
  asked to.  ``torch.cuda.is_available()``, ``torch.backends.mps.is_available()``,
  CPU tensors and ``.cuda()`` tensors are unchanged.
- On a machine with a real GPU this does change what goes through
  ``torch.accelerator``: ``is_available()`` is False outside :func:`active`,
  ``DataLoader(pin_memory=True)`` stops pinning (with PyTorch's warning), and
  ``t.pin_memory()`` without a device raises.  Use the simulator in processes that
  don't rely on ``torch.accelerator`` or pinned memory for the real GPU.
- Pinned memory is not simulated: inside :func:`active`, ``DataLoader(...,
  pin_memory=True)`` raises NotImplementedError; outside it, it pins nothing.

Differences from a real GPU (CUDA):

- It computes synchronously on the CPU with the CPU's kernels and the CPU's random
  generator (``torch.manual_seed`` seeds it; the same seed gives the same numbers
  on simgpu as on the CPU), in the CPU's precision; there are no streams, and
  ``non_blocking=True`` copies are plain copies; ``torch.simgpu.synchronize()``
  does nothing.  Only one device, ``simgpu:0``.  ``t.data_ptr()`` is 0.
- ``F.dropout`` in training becomes ``native_dropout``, as on CUDA, but is computed
  as the CPU computes ``F.dropout``; ``torch.optim`` takes its single-tensor code
  path, as on the CPU, not CUDA's ``foreach`` one (it takes that only for plain
  ``Tensor``/``Parameter`` classes).  So a simgpu run gives a CPU run's numbers.
- The device-mixing message is always the TensorIterator one, with the simgpu
  device first.  Real CUDA words some ops differently: a convolution fed a CPU
  input says "Input type (torch.FloatTensor) and weight type
  (torch.cuda.FloatTensor) should be the same ...", ``addmm`` names the argument
  ("... (when checking argument for argument mat1 in method wrapper_CUDA_addmm)"),
  and an elementwise op names the devices in operand order.  All are RuntimeErrors.
- A model moved to simgpu has parameters of class :class:`SimTensor` (with
  ``isinstance(p, nn.Parameter)`` True), not of class ``Parameter``; moving it
  back with ``model.to("cpu")`` makes new ``Parameter`` objects (CUDA keeps the
  same ones), so make the optimizer after the last move.
- ``torch.save``/pickle of device tensors works, but ``torch.load`` needs
  ``weights_only=False`` (the loader must import this module) and loads them
  back on simgpu whatever ``map_location`` says: save ``.cpu()`` copies instead.  Not simulated:
  pinned memory, streams and events, sharing tensors between processes,
  ``torch.compile``, sparse and quantized tensors, more than one device.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
from collections import Counter
from dataclasses import dataclass, field

import torch

NAME = "simgpu"
SUPPORTED_TORCH = ("2.14",)  # major.minor versions this file was written for (tested on 2.14.1)

__all__ = ["NAME", "SimTensor", "Syncs", "active", "count_syncs", "install", "is_sim"]

_aten = torch.ops.aten
_CPU = torch.device("cpu")
_DEVICE: torch.device | None = None  # torch.device("simgpu:0") once installed
_install_lock = threading.Lock()
_library = None  # the torch.library.Library holding the simgpu kernels (kept alive)
_active_depth = 0


# --------------------------------------------------------------------------- syncs

@dataclass
class Syncs:
    """Device-to-host synchronisations counted in a :func:`count_syncs` block."""

    by_kind: Counter = field(default_factory=Counter)
    events: list = field(default_factory=list)  # (kind, "file:line") in order

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def reset(self) -> None:
        self.by_kind.clear()
        self.events.clear()

    def __repr__(self) -> str:
        return f"Syncs(total={self.total}, by_kind={dict(self.by_kind)})"


_counters: list[Syncs] = []
_quiet = 0  # > 0 while a counted Python-level call runs: its inner copies are not counted again
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_SKIP_DIRS = (_TORCH_DIR, os.path.dirname(_TORCH_DIR) + os.sep + "numpy",
              os.path.dirname(_TORCH_DIR) + os.sep + "matplotlib", contextlib.__file__)


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename != __file__ and not filename.startswith(_SKIP_DIRS):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def _record(kind: str) -> None:
    if _quiet or not _counters:
        return
    where = _caller()
    for syncs in _counters:
        syncs.by_kind[kind] += 1
        syncs.events.append((kind, where))


@contextlib.contextmanager
def _counted(kind: str):
    """Count one sync of `kind`, and none for what the block does inside."""
    global _quiet
    _record(kind)
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1


@contextlib.contextmanager
def count_syncs():
    """Count device-to-host synchronisations of simgpu tensors in the block.

    Yields a :class:`Syncs`: ``.total``, ``.by_kind`` (a Counter: ``{"item": 3}``),
    ``.events`` (``[(kind, "file:line"), ...]``) and ``.reset()``.  Blocks may nest;
    each counts what happens inside it.
    """
    syncs = Syncs()
    _counters.append(syncs)
    try:
        yield syncs
    finally:
        _counters.remove(syncs)


# --------------------------------------------------------------------------- the tensor

def _mixing_error(other: torch.device) -> RuntimeError:
    return RuntimeError("Expected all tensors to be on the same device, but found at least "
                        f"two devices, {_DEVICE} and {other}!")


class SimTensor(torch.Tensor):
    """A tensor on ``simgpu:0``: a wrapper with no storage around a CPU tensor."""

    @staticmethod
    def __new__(cls, cpu: torch.Tensor):
        if cpu.layout is not torch.strided or cpu.is_quantized:
            raise NotImplementedError(f"{NAME}: only dense (strided) tensors are simulated")
        r = torch.Tensor._make_wrapper_subclass(
            cls, cpu.size(), strides=cpu.stride(), storage_offset=cpu.storage_offset(),
            dtype=cpu.dtype, layout=cpu.layout, device=_DEVICE, requires_grad=False)
        r._cpu = cpu
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl  # no Python on every op

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})

    # A traceable wrapper subclass: lets Module.to swap parameters in place.
    def __tensor_flatten__(self):
        return ["_cpu"], None

    @staticmethod
    def __tensor_unflatten__(inner_tensors, meta, outer_size, outer_stride):
        return SimTensor(inner_tensors["_cpu"])

    # Host transfers whose kind the dispatcher can't tell apart ------------------

    def numpy(self, *, force=False):
        with _counted("numpy"):
            if not force:  # PyTorch's own check and words (tensor_numpy.cpp)
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. "
                                f"Use Tensor.cpu() to copy the tensor to host memory first.")
            return self._cpu.detach().clone().numpy(force=True)  # a host copy, as .cpu() makes

    def tolist(self):
        with _counted("tolist"):
            return self._cpu.tolist()  # (Tensor.tolist refuses tensor subclasses)

    def __float__(self):
        with _counted("float"):
            return super().__float__()

    def __int__(self):
        with _counted("int"):
            return super().__int__()

    def __index__(self):
        with _counted("int"):
            return super().__index__()

    def __bool__(self):
        with _counted("bool"):
            return super().__bool__()

    def __repr__(self, *, tensor_contents=None):
        with _counted("repr"):
            text = torch._tensor_str._str(self, tensor_contents=tensor_contents)
        if text.startswith("Parameter(SimTensor(") and text.endswith(")"):
            text = text[len("Parameter("):-1]
        if text.startswith("SimTensor("):  # print as a real device's tensor prints
            shift = len("SimTensor(") - len("tensor(")
            lines = text[len("SimTensor("):].split("\n")
            text = "\n".join(["tensor(" + lines[0]] + [
                line[shift:] if line.startswith(" " * shift) else line for line in lines[1:]])
        if self.__dict__.get("_is_param"):
            return "Parameter containing:\n" + text
        return text

    def __format__(self, format_spec):
        if self.dim() == 0:
            with _counted("repr"):
                return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __reduce_ex__(self, proto):  # pickle, torch.save: the data, back on simgpu when loaded
        return _restore, (self._cpu.detach(), self.requires_grad)


def _restore(cpu, requires_grad):
    install()
    return SimTensor(cpu).requires_grad_(requires_grad)


# --------------------------------------------------------------------------- dispatch

# Ops whose tensors may be on both devices: copies, and (as on CUDA) CPU index
# tensors for indexing a device tensor.
_ANY_DEVICE = {_aten.copy_.default, _aten._copy_from.default,
               _aten._copy_from_and_resize.default, _aten._to_copy.default}
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


def _check_device(device) -> bool:
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


def _run(func, args, kwargs):
    """Run `func` on the CPU tensors behind any SimTensor arguments, and wrap results."""
    any_device = func in _ANY_DEVICE
    if func in _INDEX_OPS and not isinstance(args[0], SimTensor):
        raise RuntimeError("indices should be either on cpu or on the same device as the "
                           f"indexed tensor ({args[0].device})")
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
            raise _mixing_error(x.device)
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
                if _check_device(value):
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
            _record("cpu")  # a SimTensor's data copied into a CPU tensor
        if func is not _COPY_FROM[0]:
            dst.resize_(src.shape)
        dst.copy_(src, *cpu_args[2:3])
        return args[1]
    if func in _COPIES_TO_HOST:
        if not isinstance(args[0], SimTensor) and isinstance(args[1], SimTensor):
            _record("cpu")
    elif func is _TO_COPY:
        if target == "cpu":
            _record("cpu")
    elif func in _DATA_DEPENDENT:
        _record(_DATA_DEPENDENT[func])
    elif func is _INDEX and any(i is not None and i.dtype in (torch.bool, torch.uint8)
                                for i in cpu_args[1]):
        _record("index")

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
            _set_metadata(same, out)  # resize_, an out= tensor resized, squeeze_, t_ ...
        return same
    if to_host:
        return out
    return SimTensor(out)


_SET_ = _aten.set_.source_Storage_storage_offset
_META = torch._C.DispatchKey.Meta


def _set_metadata(wrapper, cpu):
    """Give `wrapper` the sizes, strides and offset of its CPU tensor after an
    in-place op changed them: the Meta kernel of ``set_`` sets exactly these."""
    _SET_._op_dk(_META, wrapper, wrapper.untyped_storage(), cpu.storage_offset(),
                 cpu.size(), cpu.stride())


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
        return _run(op, args, kwargs)
    return kernel


# --------------------------------------------------------------------------- device module

class _DeviceModule(types.ModuleType):
    """``torch.simgpu``: what PyTorch asks a PrivateUse1 backend's module."""

    def is_available(self) -> bool:
        return _active_depth > 0

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device) -> None:
        if not _check_device(device if isinstance(device, (str, torch.device)) else f"{NAME}:{device}"):
            raise ValueError(f"not a {NAME} device: {device!r}")

    def synchronize(self, device=None) -> None:
        pass  # everything already ran, synchronously, on the CPU

    def _is_in_bad_fork(self) -> bool:
        return False

    def manual_seed(self, seed) -> None:
        pass  # the simulator uses the CPU's generator: torch.manual_seed seeds it

    def manual_seed_all(self, seed) -> None:
        pass


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, device_index) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _DeviceGuard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


# --------------------------------------------------------------------------- opting in

def _check_torch_version(version: str) -> None:
    if not version.split("+")[0].startswith(tuple(v + "." for v in SUPPORTED_TORCH)):
        raise RuntimeError(
            f"kata.simulator needs torch {' or '.join(v + '.x' for v in SUPPORTED_TORCH)}: it "
            f"relies on PyTorch internals that change between versions, and this is torch "
            f"{version}. Install the versions pinned in pyproject.toml "
            f"(pip install -e .), or run on the CPU or a real GPU.")


def install() -> torch.device:
    """Register the simulated device (once per process) and return ``simgpu:0``.

    Idempotent and thread-safe.  Raises RuntimeError on an unsupported torch, or if
    PyTorch's PrivateUse1 backend was already given another name in this process.
    """
    global _DEVICE, _library
    if _DEVICE is not None:
        return _DEVICE
    with _install_lock:
        if _DEVICE is not None:
            return _DEVICE
        _check_torch_version(torch.__version__)
        taken = torch._C._get_privateuse1_backend_name()
        if taken not in ("privateuseone", NAME):
            raise RuntimeError(
                f"kata.simulator can't install: PyTorch's PrivateUse1 backend is already "
                f"named '{taken}' in this process, and it can be renamed only once.")
        if taken != NAME:
            torch.utils.rename_privateuse1_backend(NAME)
        if not hasattr(torch, NAME):
            torch._register_device_module(NAME, _DeviceModule(f"torch.{NAME}"))
        if not hasattr(torch.Tensor, NAME):  # t.simgpu(), t.is_simgpu, model.simgpu()
            torch.utils.generate_methods_for_privateuse1_backend(
                for_tensor=True, for_module=True, for_storage=False, for_packed_sequence=False)
        # Autograd asks the backend's hooks and device guard (streams, devices).
        torch._C._acc.register_python_privateuseone_hook(_Hooks())
        torch._C._acc.register_python_privateuseone_device_guard(_DeviceGuard())
        library = torch.library.Library("aten", "IMPL")
        for name in _BACKEND_OPS:
            library.impl(name, _backend_kernel(name), "PrivateUse1")
        _library = library
        _DEVICE = torch.device(NAME, 0)
        _check_autograd(_DEVICE)
    return _DEVICE


def _check_autograd(device: torch.device) -> None:
    """Fail clearly if autograd can't run on the device in this process.

    PyTorch's autograd engine sizes its per-device queues at the process's
    first backward pass; a backend registered after that crashes it with an
    internal assert. So install() must come before any backward pass (the
    kata's pytest plugin installs the simulator while collecting, before any
    test runs)."""
    probe = torch.ones(1, device=device, requires_grad=True)
    try:
        (probe * 2).sum().backward()
    except RuntimeError as err:
        if "device_ready_queues_" not in str(err):
            raise
        raise RuntimeError(
            "kata.simulator.install() came after this process's first backward pass, and PyTorch's autograd "
            "engine can't take a new device then: install the simulator before any training step (the kata's "
            "pytest plugin does it while collecting the tests)") from None


@contextlib.contextmanager
def active():
    """Install, and make the device report itself available inside the block:
    ``torch.simgpu.is_available()`` and ``torch.accelerator.is_available()`` are
    True there.  Yields ``torch.device("simgpu:0")``.  Tensors on the device work
    outside the block too; only the availability report depends on it."""
    global _active_depth
    device = install()
    _active_depth += 1
    try:
        yield device
    finally:
        _active_depth -= 1


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
