"""CUDA's rules for the ops that need more than "every tensor on the device": which
errors some ops raise in their own words, which tensors an op writes into, which
ops take 0-d CPU tensors ("CPU scalars"), how many and where, and which ops make
the host wait (and for what).

Each rule names where CUDA's behaviour is written down; the conformance table
(``kata/conformance/table.toml``) holds the simulator to them.  These functions
only look at the arguments :func:`kata.sim._device.run` is handed; they never
compute.
"""

from __future__ import annotations

import functools

import torch

from ._backend import DEVICE, NAME
from ._compat import (
    ADDCMUL_SCALAR_ERRORS,
    CONV_BIAS_ERROR,
    CONV_ERROR,
    CONV_MKLDNN_ERROR,
    DEVICE_CHECK_ERROR,
    INDEX_DEVICE_ERROR,
    KERNEL_DEVICE_ERROR,
    MASK_DEVICE_ERROR,
    MIXING_ERROR,
    PIN_ERROR,
    TOO_MANY_SCALARS_ERROR,
    conv_backend,
    tensor_inputs,
    written_arguments,
)
from ._syncs import flush

__all__ = ["ANY_DEVICE", "ASKED", "CHECKED", "COPY_FROM", "DECOMPOSED", "DEFER", "FILL_BY_VALUE", "HOST_SIDE",
           "INDEX_OPS", "SCALAR_TENSOR", "WATCHED", "answer", "from_number", "on_device", "refusal", "scalar_refusal",
           "shallow_copy_compatible", "sync_kind", "written"]

_aten = torch.ops.aten
_MASKS = (torch.bool, torch.uint8)

# Ops whose tensors may be on both devices: copies (notes/cuda.rst: "cross-GPU operations are not
# allowed by default, with the exception of copy_() and other methods with copy-like functionality").
_COPY = _aten.copy_.default
COPY_FROM = (_aten._copy_from.default, _aten._copy_from_and_resize.default)
_TO_COPY = _aten._to_copy.default
# `t.fill_(value)`, value a 0-d tensor of either device: read as a number when the devices differ
# (aten/src/ATen/native/Fill.cpp, fill_: `fill_out(self, value.item())`), so t may be a CPU tensor.
FILL_BY_VALUE = _aten.fill_.Tensor
ANY_DEVICE = {_COPY, *COPY_FROM, _TO_COPY, FILL_BY_VALUE}
# Indexing takes CPU index tensors (aten/src/ATen/native/TensorAdvancedIndexing.cpp).
_INDEX = _aten.index.Tensor
INDEX_OPS = {_INDEX, _aten.index_put_.default, _aten.index_put.default,
             _aten._index_put_impl_.default}
# A packed sequence's lengths and batch sizes are on the CPU whatever device its data is on (torch/nn/utils/rnn.py,
# PackedSequence: "batch_sizes ... always on CPU"; aten/src/ATen/native/PackedSequence.cpp reads them there):
# packing takes the lengths there and gives the batch sizes there; unpacking and a recurrent layer take them there
# and unpacking gives its lengths there (composites, which reach the device whole in inference mode).
# op -> (arguments taken on the CPU, results made there).
HOST_SIDE = {_aten._pack_padded_sequence.default: ((1,), (1,)), _aten._pad_packed_sequence.default: ((1,), (1,)),
             **{getattr(_aten, rnn).data: ((1,), ()) for rnn in ("lstm", "gru", "rnn_tanh", "rnn_relu")}}

_EQUAL = _aten.equal.default
# The kernels a CPU batch's convolution runs when MKLDNN does not take it (a small batch: Convolution.cpp,
# use_mkldnn), as the dispatcher names them (aten/src/ATen/native/native_functions.yaml).
_SLOW_CONV = {"Slow2d": "_slow_conv2d_forward", "SlowDilated2d": "slow_conv_dilated2d", "Slow3d": "slow_conv3d_forward",
              "SlowDilated3d": "slow_conv_dilated3d", "SlowTranspose2d": "slow_conv_transpose2d",
              "SlowTranspose3d": "slow_conv_transpose3d"}
_CONVOLUTION = _aten.convolution.default
_PIN = _aten._pin_memory.default
_MASKED_FILL = {_aten.masked_fill_.Tensor, _aten.masked_fill.Tensor, _aten.masked_fill_.Scalar,
                _aten.masked_fill.Scalar}
CHECKED = {*INDEX_OPS, _EQUAL, _CONVOLUTION, _PIN, *_MASKED_FILL}  # ops with errors of their own: refusal()

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
_MASKED_FILL_VALUE = {_aten.masked_fill_.Tensor, _aten.masked_fill.Tensor}
WATCHED = {_COPY, *COPY_FROM, _TO_COPY, *INDEX_OPS, *_DATA_DEPENDENT, _REPEAT_INTERLEAVE, *_MASKED_FILL_VALUE,
           FILL_BY_VALUE}
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
    if func is _EQUAL:  # the dispatcher's device check comes before cuda_equal's own words
        return None if on_device(args[0]) == on_device(args[1]) else RuntimeError(
            DEVICE_CHECK_ERROR.format("other", args[1].device, args[0].device, "equal"))
    if func is _PIN:
        return RuntimeError(PIN_ERROR.format(args[0].type()))
    if func in _MASKED_FILL:  # a mask of the other device, even a 0-d one (cuda/Indexing.cu, masked_fill__cuda)
        self, mask = args[0], args[1]
        return None if on_device(self) == on_device(mask) else RuntimeError(
            MASK_DEVICE_ERROR.format(mask.device, self.device))
    x, weight, bias = args[0], args[1], args[2]  # convolution
    if on_device(x) != on_device(weight):
        if on_device(x):
            return RuntimeError(CONV_ERROR.format(x.type(), weight.type()))
        slow = _SLOW_CONV.get(conv_backend(x, weight, bias, *args[3:9]))
        if slow is not None:  # a CPU batch for a slow kernel: dispatched to CUDA's, whose device check says it
            return RuntimeError(DEVICE_CHECK_ERROR.format("weight", weight.device, x.device, slow))
        return RuntimeError(CONV_MKLDNN_ERROR.format(x.type(), weight.type()))
    if bias is not None and on_device(bias) != on_device(x):
        return RuntimeError(CONV_BIAS_ERROR.format(x.type(), bias.type()))
    return None


def _answered_by_shape(a, b) -> bool:
    """Whether ``torch.equal(a, b)`` answers without reading the device (cuda/Equal.cpp, cuda_equal): other
    sizes (False), no elements, or the very same view of the same memory (True)."""
    if a.shape != b.shape or a.numel() == 0:
        return True
    a, b = getattr(a, "_cpu", a), getattr(b, "_cpu", b)
    return (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.dtype == b.dtype
            and a.storage_offset() == b.storage_offset() and a.stride() == b.stride())


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
    if func is _EQUAL and _answered_by_shape(args[0], args[1]):
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
    if func is FILL_BY_VALUE:  # a device value into a CPU tensor: its .item()
        return "item" if on_device(args[1]) and not on_device(args[0]) else None
    return "item" if on_device(args[2]) else None  # masked_fill with a 0-d device value: its .item()


# --------------------------------------------------------------------------- CPU scalars
# A 0-d CPU tensor beside device tensors ("a CPU scalar"): which ops take one, where, and how many.

_ANY = -1  # as many as it is given
# Ops built on a TensorIterator with allow_cpu_scalars (one CPU scalar, as an input) that PyTorch
# doesn't tag pointwise: floor division, and the losses built as binary ops (aten/src/ATen/native/
# BinaryOps.cpp, Loss.cpp: TensorIterator::borrowing_binary_op).
_BINARY = {"floor_divide", "true_divide", "rsub", "mse_loss", "smooth_l1_loss", "huber_loss"}
_OWN_RULES = {
    "where": _ANY,  # TensorCompare.cpp, where_self_out: each 0-d operand is moved to the device
    "fill": _ANY,  # Fill.cpp, fill_: the value is read as a number
    "masked_fill": _ANY,  # cuda/Indexing.cu, masked_fill__cuda: value.item() (the mask: refusal())
    "index": _ANY, "index_put": _ANY, "_index_put_impl": _ANY,  # TensorAdvancedIndexing.cpp: value.to(device)
    "clamp": 0, "clip": 0,  # TensorCompare.cpp, clamp.Tensor: a TensorIterator without allow_cpu_scalars
    "addcdiv": 0,  # PointwiseOps.cpp, addcdiv: build_ternary_op, without allow_cpu_scalars
    "addcmul": "addcmul",  # one, as tensor2 only (cuda/PointwiseOpsKernel.cu, addcmul_cuda_kernel)
    "lerp": "lerp",  # one, as the weight only (cuda/Lerp.cu, lerp_tensor_kernel: is_cpu_scalar(3))
}


def _base(func) -> tuple[str, str]:
    """``("add", "Tensor")`` for ``aten::add_.Tensor``: the op's name without in-place's underscore."""
    name, _, overload = func.name().partition("::")[2].partition(".")
    return (name[:-1] if name.endswith("_") and not name.endswith("__") else name), overload


@functools.cache
def _scalars_taken(func):
    """How many CPU scalars `func` takes: an int (:data:`_ANY` for any), or the name of its own rule.

    Pointwise ops of two or more tensors are TensorIterator ops with allow_cpu_scalars (one, an input;
    aten/src/ATen/TensorIterator.cpp, compute_types).  Every other op takes none: its generated CUDA
    wrapper checks that each tensor is on one device (aten/src/ATen/core/op_registration/adaption.h,
    check_and_update_common_device), or its TensorIterator does.  Except those with rules of their own."""
    name, overload = _base(func)
    if name in _OWN_RULES:
        return _OWN_RULES[name]
    if name.startswith("_foreach_"):  # a 0-d CPU scalar tensor is read with .item() (cuda/ForeachBinaryOp*.cu)
        return _ANY
    functional = getattr(getattr(_aten, name, None), overload, None) or func
    pointwise = torch.Tag.pointwise in func.tags or torch.Tag.pointwise in functional.tags
    if name in _BINARY or (pointwise and tensor_inputs(func) >= 2):
        return 1
    return 0


def scalar_refusal(func, args, scalars) -> RuntimeError | None:
    """CUDA's error for `scalars` (the 0-d CPU tensors among `func`'s single-tensor arguments, none of
    them an output: those are refused before), or None where CUDA takes them."""
    taken = _scalars_taken(func)
    if taken == _ANY:
        return None
    if taken == 0:
        return RuntimeError(MIXING_ERROR.format(DEVICE, scalars[0].device))
    if len(scalars) > 1:  # the second CPU scalar TensorIterator meets
        return RuntimeError(TOO_MANY_SCALARS_ERROR)
    position = next((i for i, a in enumerate(args) if a is scalars[0]), None)
    if taken == "addcmul" and position in (0, 1):
        return RuntimeError(ADDCMUL_SCALAR_ERRORS[position])
    if taken == "lerp" and position != 2:  # the kernel takes a CUDA operand there (operand 0 is the output)
        return RuntimeError(KERNEL_DEVICE_ERROR.format(1 if position is None else position + 1, "cpu"))
    return None
