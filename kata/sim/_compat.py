"""Every use of PyTorch internals by the simulator, and the torch versions it runs on.

The simulator stands on public PyTorch where PyTorch offers public ground:
``__torch_dispatch__`` wrapper subclasses, ``torch.library`` kernels for the
PrivateUse1 dispatch key, ``torch.ops.aten``, ``torch.utils.rename_privateuse1_backend``
and ``torch.utils.generate_methods_for_privateuse1_backend``.  What PyTorch offers
only under private names is reached from this module and from nowhere else in
:mod:`kata.sim`; :data:`INTERNALS` lists it.  The biggest piece, the Python hooks
and device guard that autograd asks a PrivateUse1 backend for, is torch's own
helper for Python backends (``_setup_privateuseone_for_python_backend``, which
also calls the two public functions above); torch calls it experimental.

Which versions (:data:`TORCH_VERSIONS`), and why those:

- 2.11 to 2.14 are *verified*: the simulator's self-tests
  (``tests/selftest/test_simulator.py``), the checks with their cuda-marked ones
  on the simulator, the known-wrong and correct-variant self-tests and
  ``kata train --device sim`` pass on each.  CI runs them on 2.14.1 and
  2.13.0+cpu on every change, with the conformance table
  (``tests/selftest/test_conformance.py``); 2.11.0 and 2.12.1 were run by hand
  (their CUDA builds, on a machine without a GPU) on 2026-11-30, *before* issue
  #18 added ``OpOverload._schema`` (below) and these public calls:
  ``OpOverload.decompose``, a kernel for the ``AutogradPrivateUse1`` key,
  ``torch.serialization.register_package``, ``torch.utils.swap_tensors``,
  ``torch.get_device_module``.  Each predates 2.11; on 2.11 the table and the
  cuda-marked checks ran on the simulator since, by ``kata doctor --full`` on an
  H200 machine (docs/gpu-report.md); 2.12 has not run since.
- Anything else is refused, with one line that says which versions run: before
  2.11 the Python-backend hooks don't exist (``torch._C._acc``), and a later
  torch is unknown.  ``KATA_SIM_UNTESTED=1`` lets the simulator try any torch
  that has every internal listed; to verify a new one, run the self-tests with
  it set, then add the version here.

Not listed as internals: the ATen operators the dispatcher hands a
``__torch_dispatch__`` subclass, some of them underscore-named (``aten._to_copy``,
``aten._copy_from``, ``aten._local_scalar_dense``, ``aten._unique2``): they are the
dispatcher's vocabulary, present on every version in the table, looked up in ``_device.py``.

A refusal never touches the rest of the kata: plain CPU code does not need the
simulator, and on a machine with CUDA the checks marked ``cuda`` use CUDA.
"""

from __future__ import annotations

import os
import re

import torch

__all__ = ["ADDCMUL_SCALAR_ERRORS", "CONV_BIAS_ERROR", "CONV_ERROR", "CONV_MKLDNN_ERROR", "DEEPCOPY_ERROR",
           "DEVICE_CHECK_ERROR", "DISABLED_TORCH_FUNCTION", "INDEX_DEVICE_ERROR", "INTERNALS", "KERNEL_DEVICE_ERROR",
           "MASK_DEVICE_ERROR", "MIXING_ERROR", "NUMPY_ERROR", "PIN_ERROR", "TOO_MANY_SCALARS_ERROR",
           "TORCH_VERSIONS", "UNTESTED_ENV", "VERIFIED", "argument_at", "autocast_off", "backend_name", "conv_backend",
           "cuda_autocasts", "is_late_backend_error", "make_wrapper_subclass", "missing_internals", "set_metadata",
           "setup_python_backend", "tensor_inputs", "tensor_repr", "version_support", "written_arguments"]

# major.minor: (status, what was checked and how the version differs). "verified": the
# self-tests pass on it; any other version is refused unless KATA_SIM_UNTESTED=1.
TORCH_VERSIONS: dict[str, tuple[str, str]] = {
    "2.14": ("verified", "2.14.1+cu130 (on a CPU), in CI; every internal in INTERNALS"),
    "2.13": ("verified", "2.13.0+cpu, in CI; the same internals as 2.14, nothing differs"),
    "2.12": ("verified", "2.12.1+cu130 (on a CPU), by hand on 2026-11-30, before #18's additions; the same "
                         "internals"),
    "2.11": ("verified", "2.11.0+cu130 (on a CPU), by hand on 2026-11-30, before #18's additions; the same "
                         "internals; since, the table and the cuda-marked checks on the simulator on an H200 "
                         "machine, 2026-12-04 (docs/gpu-report.md)"),
}
VERIFIED = tuple(sorted((v for v, (status, _) in TORCH_VERSIONS.items() if status == "verified"),
                        key=lambda v: tuple(map(int, v.split(".")))))
UNTESTED_ENV = "KATA_SIM_UNTESTED"

# The private names used, the same on every version above: "where.name": what for.
INTERNALS: dict[str, str] = {
    "torch.utils.backend_registration._setup_privateuseone_for_python_backend":
        "renames PrivateUse1, generates .simgpu() methods, registers torch.simgpu and the Python "
        "hooks and device guard (its dummy ones) that autograd asks a backend for",
    "torch._C._acc.register_python_privateuseone_hook": "(what the helper above registers them with)",
    "torch._C._get_privateuse1_backend_name": "whether PrivateUse1 is still free to rename",
    "torch.Tensor._make_wrapper_subclass": "a device tensor with no storage of its own",
    "torch._C._disabled_torch_function_impl": "no Python __torch_function__ on every op",
    "torch.ops.aten.set_.source_Storage_storage_offset._op_dk":
        "OpOverload._op_dk runs the Meta kernel of set_: a wrapper's sizes after an in-place op",
    "torch._C.DispatchKey": "(Meta, for the above)",
    "torch._tensor_str._str": "repr of a device tensor, reworded as a real device's tensor prints",
    "torch.ops.aten.add_.Tensor._schema":
        "OpOverload._schema: which arguments an op writes (an in-place op's self, an out= tensor), so that a "
        "CPU tensor there is refused as CUDA refuses it, and how many tensors it takes (CPU scalars)",
    "torch._C._ExcludeDispatchKeyGuard": "an op run from the device's autocast kernel with autocast off, as CUDA's "
        "autocast kernels run it (c10::impl::ExcludeDispatchKeyGuard)",
    "torch._C.DispatchKeySet": "(the key set it excludes: AutocastPrivateUse1)",
    "torch._C._dispatch_has_kernel_for_dispatch_key": "whether this torch's CUDA autocast has a kernel for an op: "
        "the device's autocast takes the ops it has",
    "torch._C._select_conv_backend": "which kernel a CPU batch's convolution would run (MKLDNN or a slow one): "
        "CUDA's error for a device convolution fed a CPU batch depends on it",
}
# Not calls, but the words of a torch version, copied (errors as CUDA raises them)
# or matched (autograd's assert when a backend comes after the first backward pass).
MIXING_ERROR = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
TOO_MANY_SCALARS_ERROR = "Trying to pass too many CPU scalars to non-CPU kernel!"  # TensorIterator.cpp, compute_types
# aten/src/ATen/native/cuda/PointwiseOpsKernel.cu (addcmul_cuda_kernel): a CPU scalar self, or tensor1
ADDCMUL_SCALAR_ERRORS = (
    "CPU Scalar support for self argument is not supported when calling addcmul on CUDA tensors.",
    "CPU Scalar support for tensor1 argument is not supported when calling addcmul on CUDA tensors. However, CPU "
    "Scalar support for tensor2 is supported, please swap your tensor1 and tensor2 terms.")
KERNEL_DEVICE_ERROR = "argument {}: expected a CUDA device but found {}"  # aten/src/ATen/native/cuda/Loops.cuh
MASK_DEVICE_ERROR = ("expected self and mask to be on the same device, but got mask on {} and self on {}"
                     )  # aten/src/ATen/native/cuda/Indexing.cu, masked_fill__cuda
NUMPY_ERROR = ("can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
               "memory first.")
INDEX_DEVICE_ERROR = "indices should be either on cpu or on the same device as the indexed tensor ({})"
# The dispatcher's device check of an op with a CUDA kernel (torchgen's device_check; c10/core/
# DeviceGuard's common_device_check_failure): the argument, its device, the first argument's device and
# the op, as in "... (when checking argument in method wrapper_CUDA__equal)" (seen on an H200, torch 2.11).
DEVICE_CHECK_ERROR = ("Expected all tensors to be on the same device, but got {} is on {}, different from other "
                      "tensors on {} (when checking argument in method wrapper_CUDA__{})")
# aten/src/ATen/native/Convolution.cpp, check_input_same_type_as_parameters: a CPU input the MKLDNN
# backend would take meets its check, a device input the plain one (a CPU input for a slow kernel
# meets the dispatcher's device check instead: conv_backend()).
CONV_MKLDNN_ERROR = ("Input type ({}) and weight type ({}) should be the same or input should be a MKLDNN tensor "
                     "and weight is a dense tensor")
CONV_ERROR = "Input type ({}) and weight type ({}) should be the same"
CONV_BIAS_ERROR = "Input type ({}) and bias type ({}) should be the same"
PIN_ERROR = "cannot pin '{}' only dense CPU tensors can be pinned"  # aten/src/ATen/native/Memory.cpp
DEEPCOPY_ERROR = ("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the "
                  "moment.  If you were attempting to deepcopy a module, this may be because of a "
                  "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")  # _tensor.py
_LATE_BACKEND_ASSERT = "device_ready_queues_"


def _major_minor(version: str) -> str:
    match = re.match(r"(\d+)\.(\d+)", version)
    return f"{match[1]}.{match[2]}" if match else version


def _as_tuple(major_minor: str) -> tuple[int, ...]:
    return tuple(int(part) for part in major_minor.split(".") if part.isdigit())


def _supported() -> str:
    """The verified versions in words: "2.11 to 2.14" (or "2.13 and 2.14" for two)."""
    if len(VERIFIED) > 2:
        return f"{VERIFIED[0]} to {VERIFIED[-1]}"
    return " and ".join(VERIFIED)


def _resolve(path: str):
    """The object a dotted name of INTERNALS names (AttributeError if this torch lacks it)."""
    obj = torch
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def missing_internals() -> list[str]:
    """The names in :data:`INTERNALS` that this torch lacks (none on a supported one)."""
    missing = []
    for path in INTERNALS:
        try:
            _resolve(path)
        except AttributeError:
            missing.append(path)
    return missing


def version_support(version: str | None = None) -> tuple[bool, str]:
    """Whether the simulator runs on torch `version` (default: this torch), and why not.

    Returns ``(True, "torch 2.14.1: verified")`` or ``(False, reason)``, the reason one
    line such as "the simulated accelerator supports torch 2.11 to 2.14; this is torch
    2.10.0".  For this torch it also checks that every name in :data:`INTERNALS` exists;
    for another version string it answers from :data:`TORCH_VERSIONS` alone.
    """
    this_torch = version is None
    version = torch.__version__ if version is None else version
    status = TORCH_VERSIONS.get(_major_minor(version), ("unknown", ""))[0]
    tried = os.environ.get(UNTESTED_ENV, "") not in ("", "0")
    if status != "verified" and not tried:
        newer = _as_tuple(_major_minor(version)) > _as_tuple(VERIFIED[-1])
        hint = f" (a newer torch may work: {UNTESTED_ENV}=1 tries it)" if newer else ""
        return False, f"the simulated accelerator supports torch {_supported()}; this is torch {version}{hint}"
    if this_torch:
        missing = missing_internals()
        if missing:
            return False, (f"the simulated accelerator needs PyTorch internals that torch {version} "
                           f"lacks: {', '.join(missing)}")
    if status == "verified":
        return True, f"torch {version}: verified"
    return True, f"torch {version}: {status}, tried because {UNTESTED_ENV} is set"


# --------------------------------------------------------------------------- the calls
# Looked up without failing, so that `kata.sim` imports (and support() answers) on any
# torch; on one that lacks a name, version_support() says so and install() refuses.

def _lookup(path: str):
    try:
        return _resolve(path)
    except AttributeError:
        return None


backend_name = _lookup("torch._C._get_privateuse1_backend_name")
make_wrapper_subclass = _lookup("torch.Tensor._make_wrapper_subclass")  # (cls, size, strides=, ...)
DISABLED_TORCH_FUNCTION = _lookup("torch._C._disabled_torch_function_impl")
_SET = torch.ops.aten.set_.source_Storage_storage_offset


def setup_python_backend(name: str, device_module) -> None:
    """Rename PrivateUse1 to `name` and make it a Python backend: generated
    ``Tensor.name()``/``Module.name()`` methods, ``torch.name`` = `device_module`,
    and torch's own Python hooks and device guard.  Once per process."""
    from torch.utils import backend_registration

    backend_registration._setup_privateuseone_for_python_backend(rename=name, backend_module=device_module)


def set_metadata(wrapper: torch.Tensor, cpu: torch.Tensor) -> None:
    """Give `wrapper` the sizes, strides and offset of `cpu` after an in-place op
    changed them: the Meta kernel of ``set_`` sets exactly these.  (With torch functions off: a
    TorchFunctionMode, such as ``kata run``'s, would be handed ``set_`` without its dispatch key.)"""
    with torch._C.DisableTorchFunction():
        _SET._op_dk(torch._C.DispatchKey.Meta, wrapper, wrapper.untyped_storage(), cpu.storage_offset(),
                    cpu.size(), cpu.stride())


def tensor_repr(tensor: torch.Tensor, tensor_contents=None, *, parameter: bool = False) -> str:
    """``repr`` of a wrapper-subclass tensor, worded as a real device's tensor prints:
    ``tensor([1., 2.], device='simgpu:0')``, not ``SimTensor([...])``."""
    text = torch._tensor_str._str(tensor, tensor_contents=tensor_contents)
    cls = type(tensor).__name__ + "("
    if text.startswith("Parameter(" + cls) and text.endswith(")"):
        text = text[len("Parameter("):-1]
    if text.startswith(cls):
        shift = len(cls) - len("tensor(")
        lines = text[len(cls):].split("\n")
        text = "\n".join(["tensor(" + lines[0]] + [
            line[shift:] if line.startswith(" " * shift) else line for line in lines[1:]])
    return "Parameter containing:\n" + text if parameter else text


def written_arguments(func) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The arguments `func` (an ATen OpOverload) writes into: positions, and names of keyword-only
    ones (``out=``).  ``((0,), ())`` for an in-place op such as ``add_``; ``((), ())`` for most."""
    positions, names = [], []
    for i, argument in enumerate(func._schema.arguments):
        if argument.alias_info is not None and argument.alias_info.is_write:
            if argument.kwarg_only:
                names.append(argument.name)
            else:
                positions.append(i)
    return tuple(positions), tuple(names)


def argument_at(func, name: str) -> int | None:
    """The position of `func`'s argument ``name`` (an ATen OpOverload's), or None where it has none: 2 for
    ``softmax.int``'s dtype."""
    return next((i for i, argument in enumerate(func._schema.arguments) if argument.name == name), None)


def cuda_autocasts(name: str) -> bool:
    """Whether this torch's CUDA autocast has a kernel for the ATen op ``name`` ("linear", "softmax.int")."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "AutocastCUDA")


def autocast_off():
    """A context in which the device's autocast kernels are not asked (what CUDA's run their op in)."""
    return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1))


def tensor_inputs(func) -> int:
    """How many single-tensor arguments `func` takes, not counting keyword-only ones (``out=``):
    2 for ``add.Tensor`` and ``add_.Tensor``, 1 for ``neg.out``, 3 for ``where.self``."""
    return sum(not argument.kwarg_only and str(argument.type) in ("Tensor", "Tensor?")
               for argument in func._schema.arguments)


def conv_backend(x: torch.Tensor, weight: torch.Tensor, bias, *params) -> str:
    """The name of the kernel a convolution of CPU batch ``x`` would run, as ``aten.convolution``'s
    stride, padding, dilation, transposed, output_padding and groups (``params``) choose it:
    "Mkldnn", "Slow2d", ... (aten/src/ATen/native/Convolution.cpp, select_conv_backend)."""
    stand_in = torch.empty(weight.shape, dtype=weight.dtype)
    bias = None if bias is None else torch.empty(bias.shape, dtype=bias.dtype)
    return torch._C._select_conv_backend(x, stand_in, bias, *params).name


def is_late_backend_error(err: BaseException) -> bool:
    """Whether `err` is autograd's assert for a backend registered after the process's
    first backward pass (its engine sized the per-device queues then)."""
    return isinstance(err, RuntimeError) and _LATE_BACKEND_ASSERT in str(err)
