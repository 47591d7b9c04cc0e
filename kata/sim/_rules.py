"""CUDA's rules for the ops that need more than "every tensor on the device": which
errors some ops raise in their own words, which tensors an op writes into, and
which ops make the host wait (and for what).

Each rule names where CUDA's behaviour is written down; the conformance table
(``kata/conformance/table.toml``) holds the simulator to them.  These functions
only look at the arguments :func:`kata.sim._device.run` is handed; they never
compute.
"""

from __future__ import annotations

import functools

import torch

from ._backend import NAME
from ._compat import (
    CONV_BIAS_ERROR,
    CONV_ERROR,
    CONV_MKLDNN_ERROR,
    EQUAL_ERROR,
    INDEX_DEVICE_ERROR,
    PIN_ERROR,
    written_arguments,
)
from ._syncs import flush

__all__ = ["ANY_DEVICE", "ASKED", "CHECKED", "COPY_FROM", "DECOMPOSED", "DEFER", "INDEX_OPS", "SCALAR_TENSOR",
           "WATCHED", "answer", "from_number", "on_device", "refusal", "shallow_copy_compatible", "sync_kind",
           "written"]

_aten = torch.ops.aten
_MASKS = (torch.bool, torch.uint8)

# Ops whose tensors may be on both devices: copies (notes/cuda.rst: "cross-GPU operations are not
# allowed by default, with the exception of copy_() and other methods with copy-like functionality").
_COPY = _aten.copy_.default
COPY_FROM = (_aten._copy_from.default, _aten._copy_from_and_resize.default)
_TO_COPY = _aten._to_copy.default
ANY_DEVICE = {_COPY, *COPY_FROM, _TO_COPY}
# Indexing takes CPU index tensors (aten/src/ATen/native/TensorAdvancedIndexing.cpp).
_INDEX = _aten.index.Tensor
INDEX_OPS = {_INDEX, _aten.index_put_.default, _aten.index_put.default,
             _aten._index_put_impl_.default}

_EQUAL = _aten.equal.default
_CONVOLUTION = _aten.convolution.default
_PIN = _aten._pin_memory.default
CHECKED = {*INDEX_OPS, _EQUAL, _CONVOLUTION, _PIN}  # ops with errors of their own: refusal()

# Tensor.to's overloads reach the Python key only in inference mode (elsewhere autograd's level
# decomposes them): run as their composite kernel, which aliases or calls _to_copy as CUDA's does.
DECOMPOSED = {getattr(_aten.to, overload) for overload in _aten.to.overloads()}

_SHALLOW_COPY_TYPE = _aten._has_compatible_shallow_copy_type.default
_IS_PINNED = _aten.is_pinned.default
ASKED = {_SHALLOW_COPY_TYPE, _IS_PINNED}  # questions about tensors, answered without computing: answer()

_DATA_DEPENDENT = {  # the host must read the result (its size or value) before going on
    _EQUAL: "equal",
    _aten.nonzero.default: "nonzero",
    _aten.masked_select.default: "masked_select",
    _aten._unique2.default: "unique",
    _aten.unique_dim.default: "unique",
    _aten.unique_consecutive.default: "unique",
    _aten._local_scalar_dense.default: "item",
}
_REPEAT_INTERLEAVE = _aten.repeat_interleave.Tensor
_MASKED_FILL = {_aten.masked_fill_.Tensor, _aten.masked_fill.Tensor}
WATCHED = {_COPY, *COPY_FROM, _TO_COPY, *INDEX_OPS, *_DATA_DEPENDENT, _REPEAT_INTERLEAVE, *_MASKED_FILL}
# `x[mask] = 1.0`: Python's setitem makes the number a 0-d tensor, on the CPU for a CUDA tensor but
# on the device for any other (torch/csrc/autograd/python_variable_indexing.cpp, THPVariable_setitem).
SCALAR_TENSOR = _aten.scalar_tensor.default
_FROM_NUMBER = "_kata_from_number"
DEFER = "defer"  # sync_kind()'s answer for a non_blocking copy to the host: not a sync, data arrives later

def on_device(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == NAME


def from_number(tensor) -> None:
    """Mark a 0-d device tensor that scalar_tensor made from a Python number (see SCALAR_TENSOR)."""
    setattr(tensor, _FROM_NUMBER, True)


@functools.cache
def written(func) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The arguments `func` writes into (cached): see :func:`kata.sim._compat.written_arguments`."""
    return written_arguments(func)


def shallow_copy_compatible(tensor, other) -> bool:
    """``torch._has_compatible_shallow_copy_type(tensor, other)``: whether ``tensor.data = other`` may
    keep `tensor`'s object.  A device tensor may take a dense CPU tensor's data (as a CUDA one may:
    both are dense, c10/core/TensorImpl.h), which is how ``Module.to("cpu")`` keeps each Parameter
    (torch/nn/modules/module.py, ``_apply``); the object then becomes a CPU tensor.  The other way
    is refused: a plain CPU tensor object can't become a device tensor here."""
    if not on_device(tensor):
        return False
    return on_device(other) or (other.device.type == "cpu" and other.layout is torch.strided)


def answer(func, args):
    """What a question in :data:`ASKED` answers for these arguments."""
    if func is _SHALLOW_COPY_TYPE:
        return shallow_copy_compatible(args[0], args[1])
    return False  # is_pinned: device memory is not pinned host memory


def refusal(func, args) -> RuntimeError | None:
    """CUDA's own error for an op of :data:`CHECKED` fed tensors of two devices, or None."""
    if func in INDEX_OPS:
        return None if on_device(args[0]) else RuntimeError(INDEX_DEVICE_ERROR.format(args[0].device))
    if func is _EQUAL:
        return None if on_device(args[0]) == on_device(args[1]) else RuntimeError(
            EQUAL_ERROR.format(args[0].device, args[1].device))
    if func is _PIN:
        return RuntimeError(PIN_ERROR.format(args[0].type()))
    x, weight, bias = args[0], args[1], args[2]  # convolution
    if on_device(x) != on_device(weight):
        words = CONV_ERROR if on_device(x) else CONV_MKLDNN_ERROR
        return RuntimeError(words.format(x.type(), weight.type()))
    if bias is not None and on_device(bias) != on_device(x):
        return RuntimeError(CONV_BIAS_ERROR.format(x.type(), bias.type()))
    return None


def _non_blocking(args, kwargs, position) -> bool:
    return bool(args[position] if len(args) > position else kwargs.get("non_blocking", False))


def _transfer(dst, src, non_blocking):
    if on_device(src) and not on_device(dst):
        return DEFER if non_blocking else "cpu"
    if on_device(dst) and not on_device(src):
        flush()  # the stream runs copies in order: one from the host comes after those to it
        return None if non_blocking else "to_device"
    return None


def _fills_by_mask(indices, value, accumulate) -> bool:
    """``x[mask] = 1.``: one mask on the device and a one-element CPU value become masked_fill_
    (TensorAdvancedIndexing.cpp, canDispatchToMaskedFill), with no sync.  A number CUDA would
    have made a CPU value counts as one (:data:`SCALAR_TENSOR`)."""
    number = getattr(value, _FROM_NUMBER, False) if on_device(value) else value.numel() == 1
    return not accumulate and len(indices) == 1 and on_device(indices[0]) and indices[0].dtype in _MASKS and number


def sync_kind(func, args, kwargs, target):
    """Whether the host waits for the device in an op of :data:`WATCHED`: the kind of sync, None,
    or :data:`DEFER`.  CUDA's sync debug mode reports what ``c10::cuda::memcpy_and_sync`` and
    ``stream_synchronize`` do (c10/cuda/CUDAFunctions.h): every blocking copy between host and
    device, either way (aten/src/ATen/native/cuda/Copy.cu), and every op that reads a result on
    the host (test/test_torch.py, ``test_sync_warning``)."""
    if func is _COPY:
        return _transfer(args[0], args[1], _non_blocking(args, kwargs, 2))
    if func in COPY_FROM:
        return _transfer(args[1], args[0], _non_blocking(args, kwargs, 2))
    if func is _TO_COPY:
        if target == "cpu":
            return DEFER if kwargs.get("non_blocking") else "cpu"
        return None
    if func in _DATA_DEPENDENT:
        return _DATA_DEPENDENT[func]
    if func in INDEX_OPS:
        indices = [i for i in args[1] if i is not None]
        if func is not _INDEX and _fills_by_mask(indices, args[2], args[3] if len(args) > 3 else False):
            return None
        if any(on_device(i) and i.dtype in _MASKS for i in indices):
            return "index"  # a mask on the device: the host needs its count of True
        if any(not on_device(i) and i.dtype not in _MASKS for i in indices):
            return "to_device"  # CPU indices, copied to the device first (a CPU mask is copied non-blocking)
        return None
    if func is _REPEAT_INTERLEAVE:
        return "repeat_interleave" if kwargs.get("output_size") is None else None
    return "item" if on_device(args[2]) else None  # masked_fill with a 0-d device value: its .item()
