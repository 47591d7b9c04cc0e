"""The device's tensors and how ops run on them: :class:`SimTensor` and its
``__torch_dispatch__`` (:func:`run`).  CUDA's rules for particular ops are
:mod:`kata.sim._rules`'; opting in is :mod:`kata.sim._install`'s.

This is the hot path: every op on a device tensor runs :func:`run` once, so it
stays plain Python with no per-op lookups beyond a few set memberships.
"""

from __future__ import annotations

import copy

import torch

from ._backend import DEVICE, NAME, check_device
from ._cells import KERNELS as CELLS
from ._compat import (
    DEEPCOPY_ERROR,
    DISABLED_TORCH_FUNCTION,
    MIXING_ERROR,
    NUMPY_ERROR,
    make_wrapper_subclass,
    set_metadata,
    tensor_repr,
)
from ._rules import (
    ANY_DEVICE,
    ASKED,
    CHECKED,
    COPY_FROM,
    DECOMPOSED,
    DEFER,
    HOST_SIDE,
    INDEX_OPS,
    SCALAR_TENSOR,
    WATCHED,
    answer,
    from_number,
    refusal,
    scalar_refusal,
    sync_kind,
    written,
)
from ._saving import pickled
from ._syncs import counted, defer, record

__all__ = ["SimTensor", "run"]

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
    # With y on the CPU, x becomes a CPU tensor, as a CUDA tensor does (Module.to("cpu")).
    @property
    def data(self):
        return _TENSOR_DATA.__get__(self)

    @data.setter
    def data(self, new):
        if isinstance(new, SimTensor):
            _TENSOR_DATA.__set__(self, new)
            self._cpu = new._cpu
        elif isinstance(new, torch.Tensor) and new.device.type == "cpu" and new.layout is torch.strided:
            _become_host_tensor(self, new)
        else:
            raise RuntimeError(f"{NAME}: `x.data = y` with x on {DEVICE} and y on {new.device} is not "
                               f"simulated: move y first (y.to(x.device)), or assign x = y")

    def data_ptr(self) -> int:  # the address of the memory behind it: distinct per storage, never 0
        return self._cpu.data_ptr()

    def __copy__(self):  # copy.copy: a new tensor over the same memory, as Tensor's reduction rebuilds it
        new = SimTensor(self._cpu.detach())
        return new.requires_grad_(self.requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError(DEEPCOPY_ERROR)
        with torch.no_grad():
            new = SimTensor(self._cpu.clone())
        new.requires_grad_(self.requires_grad)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        for key, value in self.__dict__.items():
            if key != "_cpu":
                setattr(new, key, copy.deepcopy(value, memo))
        return new

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
        if format_spec:  # object.__format__'s refusal, in Tensor's name (torch/_tensor.py)
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    def __reduce_ex__(self, proto):  # pickle, torch.save: as a CUDA tensor (kata/sim/_saving.py)
        return pickled(self._cpu, self.requires_grad, isinstance(self, torch.nn.Parameter))


def _become_host_tensor(tensor: SimTensor, cpu: torch.Tensor) -> None:
    """``tensor.data = cpu``: the same Python object, now a CPU tensor over `cpu`'s memory
    (a Parameter stays one), its grad moved along.  torch.utils.swap_tensors does it, as
    Module.to does for tensor subclasses."""
    grad, tensor.grad = tensor.grad, None  # (a reference to the grad would block the swap)
    replacement = cpu.detach()
    if isinstance(tensor, torch.nn.Parameter):
        replacement = torch.nn.Parameter(replacement, requires_grad=tensor.requires_grad)
    else:
        replacement.requires_grad_(tensor.requires_grad)
    try:
        torch.utils.swap_tensors(tensor, replacement)
    except RuntimeError as err:
        tensor.grad = grad
        raise RuntimeError(f"{NAME}: could not move this tensor to the CPU in place (something else still holds "
                           f"it, such as an autograd graph not yet run backward): {err}") from err
    if grad is not None and grad.shape == cpu.shape and grad.dtype == cpu.dtype:
        tensor.grad = grad.to(cpu.device)


# --------------------------------------------------------------------------- dispatch

_NATIVE_DROPOUT = _aten.native_dropout.default
_TO_COPY = _aten._to_copy.default
_COPY = _aten.copy_.default


def _dropout(x, p, train):
    """``native_dropout`` (what F.dropout becomes on an accelerator) computed as the
    CPU's own F.dropout computes it: the same random numbers and values as a CPU
    run, and faster than the CPU's native_dropout kernel (a bool-mask bernoulli)."""
    if train is False or not 0 < p < 1 or x.numel() == 0:
        return _NATIVE_DROPOUT(x, p, train)
    noise = torch.empty_like(x).bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise, noise != 0


# Kernels computed here: dropout as the CPU's F.dropout draws it, and the fused RNN cells the CPU lacks.
_OWN = {_NATIVE_DROPOUT: _dropout, **CELLS}


def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """``ctc_loss`` given its lengths as tensors, as CUDA takes them: read on the host, where a device one is
    copied (a sync), and passed on as numbers (aten/src/ATen/native/LossCTC.cpp, ctc_loss). A tensor subclass
    would take PyTorch's other path there, which divides the loss by the CPU tensor of lengths: an error on a
    device that CUDA does not give."""
    lengths = []
    for name, tensor in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if tensor.dtype.is_floating_point or tensor.dtype.is_complex or tensor.dtype == torch.bool:
            raise RuntimeError(f"{name} must be integral")
        lengths.append(tensor.to("cpu", torch.long).tolist())
    return _aten.ctc_loss.IntList(log_probs, targets, *lengths, blank, reduction, zero_infinity)


# Composite ops that PyTorch runs otherwise for a tensor subclass than for CUDA's tensors, run as for CUDA's, on
# their own arguments: the install registers them at the device's keys (autograd's, where they would decompose),
# and run() takes them where they reach the Python key (in inference mode).
AS_FOR_CUDA = {_aten.ctc_loss.Tensor: _ctc_loss}


def run(func, args, kwargs):
    """Run `func` on the CPU tensors behind any SimTensor arguments, and wrap results."""
    if func in AS_FOR_CUDA:
        return AS_FOR_CUDA[func](*args, **kwargs)
    if func in ASKED:
        return answer(func, args)
    if func in DECOMPOSED:
        return func.decompose(*args, **kwargs)
    if func in CHECKED:
        err = refusal(func, args)
        if err is not None:
            raise err
    any_device = func in ANY_DEVICE
    writes = written(func)
    if writes[0] or writes[1]:
        if not any_device:
            _refuse_host_outputs(args, kwargs, writes)
    known = {}  # id(tensor passed) -> what to return if an output is that very tensor
    scalars = []  # the 0-d CPU tensors passed as inputs, beside device tensors

    def unwrap(x, in_list):
        if isinstance(x, SimTensor):
            cpu = x._cpu
            known[id(cpu)] = x
            return cpu
        # A tensor of another device: fine for copies, as a 0-d CPU operand (a scalar, as on
        # CUDA: scalar_refusal() says which ops take how many) or as a CPU index; else PyTorch's error.
        if not (any_device or (x.device.type == "cpu" and (
                (x.dim() == 0 and not in_list) or (in_list and func in INDEX_OPS)))):
            raise RuntimeError(MIXING_ERROR.format(DEVICE, x.device))
        if not (any_device or in_list):
            scalars.append(x)
        known[id(x)] = x
        return x

    taken_on_host, made_on_host = HOST_SIDE.get(func, ((), ()))
    cpu_args = [a if i in taken_on_host and _on_host(a) else _mapped(a, unwrap) for i, a in enumerate(args)]
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
                value = _mapped(value, unwrap)
            cpu_kwargs[key] = value
        if "pin_memory" in cpu_kwargs:
            cpu_kwargs["pin_memory"] = None
    else:
        cpu_kwargs = kwargs
    if scalars:
        err = scalar_refusal(func, args, scalars)
        if err is not None:
            raise err

    kind = sync_kind(func, args, kwargs, target) if func in WATCHED else None
    if kind is DEFER:
        return _copy_in_flight(func, args, cpu_args, cpu_kwargs)
    if kind is not None:
        record(kind)
    if func in COPY_FROM:  # CPU has no kernel of its own for these (its copy_ does it)
        src, dst = cpu_args[0], cpu_args[1]
        if func is not COPY_FROM[0]:
            dst.resize_(src.shape)
        dst.copy_(src, *cpu_args[2:3])
        return args[1]

    own = _OWN.get(func)   # computed here as CUDA computes it, not by the CPU's kernel
    out = own(*cpu_args, **cpu_kwargs) if own is not None else func(*cpu_args, **cpu_kwargs)

    if isinstance(out, torch.Tensor):
        result = _wrap(out, known, to_host)
        if func is SCALAR_TENSOR:
            from_number(result)
        return result
    if isinstance(out, (tuple, list)):
        return type(out)(_wrap(o, known, to_host or i in made_on_host) if isinstance(o, torch.Tensor) else o
                         for i, o in enumerate(out))
    return out


def _on_host(x) -> bool:
    return isinstance(x, torch.Tensor) and not isinstance(x, SimTensor) and x.device.type == "cpu"


def _mapped(x, unwrap, in_list=False):
    """``x`` with each tensor in it (in lists and tuples, and lists of lists: c10d's all_gather's outputs) given to
    ``unwrap(tensor, in_list)``. (A function of the module's: a closure that called itself would keep the tensors
    of every call in a reference cycle, and a swap of a module's parameters would find them still held.)"""
    if isinstance(x, torch.Tensor):
        return unwrap(x, in_list)
    if isinstance(x, (list, tuple)) and _holds_tensors(x):
        return type(x)(_mapped(y, unwrap, True) for y in x)
    return x


def _holds_tensors(x) -> bool:
    return any(isinstance(y, torch.Tensor) or (isinstance(y, (list, tuple)) and _holds_tensors(y)) for y in x)


def _refuse_host_outputs(args, kwargs, writes):
    """A CPU tensor as the output of an op on device tensors (`s += t` with s a 0-d CPU tensor):
    CUDA accepts a CPU scalar as an input only (aten/src/ATen/TensorIterator.cpp, compute_types)."""
    positions, names = writes
    outputs = [args[i] for i in positions if i < len(args)] + [kwargs.get(name) for name in names]
    for value in outputs:
        for t in (value if isinstance(value, (list, tuple)) else (value,)):
            if isinstance(t, torch.Tensor) and not isinstance(t, SimTensor):
                raise RuntimeError(MIXING_ERROR.format(DEVICE, t.device))


def _copy_in_flight(func, args, cpu_args, cpu_kwargs):
    """A non_blocking copy to the host: queued, not waited for (kata.sim._syncs.defer)."""
    if func is _TO_COPY:
        data = func(*cpu_args, **cpu_kwargs)
        destination = torch.empty_like(data)
        defer(destination, data)
        return destination
    if func is _COPY:
        destination, data = cpu_args[0], cpu_args[1]
    else:  # _copy_from(src, dst, non_blocking) and _copy_from_and_resize
        data, destination = cpu_args[0], cpu_args[1]
        if func is not COPY_FROM[0]:
            destination.resize_(data.shape)
    defer(destination, data.detach().clone())
    return args[0] if func is _COPY else args[1]


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
