"""The one-GPU CUDA machine a script sees under ``kata run``, backed by the simulated accelerator.

:func:`install` (once per process, after torch is imported) installs :mod:`kata.sim`, makes
``torch.cuda`` answer as a one-GPU machine does, and pushes :class:`CudaAsSim`, a
``TorchFunctionMode`` that maps every ``cuda`` device argument (``device=``, ``.to('cuda')``,
``.cuda()``) to the simulated device and shows a device tensor's ``.device`` as ``cuda:0``.
``torch.autocast('cuda')`` and ``GradScaler('cuda')`` work on the simulated device, with CUDA's autocast rules
(:mod:`kata.sim._autocast`). What the simulator can't honour (memory statistics, streams and events beyond the
default, ``torch.compile``, NCCL) raises :class:`NotSimulated`, one line saying what.
"""

from __future__ import annotations

import sys
import warnings

import torch
from torch.overrides import TorchFunctionMode

from kata import sim
from kata.asgpu._cuda import (
    CUDA,
    NAME_OF_DEVICE,
    accelerator_module,
    as_device,
    cuda_module,
    cuda_type,
    is_cuda,
    not_simulated,
)
from kata.asgpu._limits import NotSimulated

__all__ = ["CUDA", "NAME_OF_DEVICE", "CudaAsSim", "cuda_words", "in_cuda_words", "install", "is_cuda",
           "said_at_the_caller", "uninstall"]

_SIM = None  # torch.device("simgpu:0") once installed
_TO = {torch.Tensor.to, torch.Tensor.new_empty, torch.Tensor.new_zeros, torch.Tensor.new_ones,
       torch.Tensor.new_full, torch.Tensor.new_tensor}
_CUDA_METHOD = torch.Tensor.cuda
_DEVICE = torch.Tensor.device
_IS_CUDA_GETTER = torch.Tensor.is_cuda.__get__
_GETTERS = {torch.Tensor.device.__get__, _IS_CUDA_GETTER}
_PIN = torch.Tensor.pin_memory
_TYPE = torch.Tensor.type


class CudaAsSim(TorchFunctionMode):
    """``cuda`` device arguments go to the simulated device; device tensors say ``cuda:0``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs:
            device = kwargs.get("device")
            if device is not None and is_cuda(device):
                kwargs = {**kwargs, "device": _SIM}
        else:
            kwargs = {}
        if func in _GETTERS:  # (a getter is a new method-wrapper each time: equal, never the same)
            device = _DEVICE.__get__(args[0])
            if func == _IS_CUDA_GETTER:
                return device.type in ("cuda", sim.NAME)
            return CUDA if device.type == sim.NAME else device
        if func in _TO:
            if len(args) > 1 and is_cuda(args[1]):
                args = (args[0], _SIM, *args[2:])
        elif func is _CUDA_METHOD:
            device = args[1] if len(args) > 1 else kwargs.pop("device", None)
            if device is not None and not isinstance(device, int):
                is_cuda(device)
            elif device not in (None, 0):
                raise NotSimulated(f"cuda:{device}", "ordinal")
            kwargs.update(zip(("non_blocking", "memory_format"), args[2:]))  # .cuda(0, True)
            func, args = torch.Tensor.to, (args[0], _SIM)
        elif func is _PIN:  # host memory is not pinned here: the tensor stays as it is
            return args[0]
        elif func is _TYPE and len(args) == 1 and not kwargs:  # x.type(): 'torch.cuda.FloatTensor'
            return cuda_words(func(*args))
        elif func is _TYPE and (host := cuda_type(args[1] if len(args) > 1 else kwargs.get("dtype"))):
            return func(args[0], host).to(_SIM, non_blocking=kwargs.get("non_blocking", False))
        try:
            return func(*args, **kwargs)
        except (RuntimeError, TypeError, ValueError) as err:
            in_cuda_words(err)
            raise


def said_at_the_caller(showwarning):
    """``showwarning`` for a warning PyTorch's C++ gives inside the mode: Python names the innermost Python frame,
    which is the mode's call of the op here, so it is said at the line that called the op, as without the mode."""
    def show(message, category, filename, lineno, file=None, line=None):
        if filename == __file__:
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename != __file__:   # up to the mode's frame
                frame = frame.f_back
            while frame is not None and frame.f_code.co_filename == __file__:   # and past it
                frame = frame.f_back
            if frame is not None:
                filename, lineno, line = frame.f_code.co_filename, frame.f_lineno, None
        return showwarning(message, category, filename, lineno, file, line)
    return show


def cuda_words(text: str) -> str:
    """PyTorch's words about the simulated device as CUDA says them: ``cuda:0``, ``torch.cuda.FloatTensor``."""
    return text.replace(sim.NAME, "cuda") if sim.NAME in text else text


def in_cuda_words(err: BaseException) -> BaseException:
    """The error, its message in CUDA's words (what the script's own ``except`` prints too)."""
    if err.args and isinstance(err.args[0], str) and sim.NAME in err.args[0]:
        err.args = (cuda_words(err.args[0]), *err.args[1:])
    return err


class _DataParallel(torch.nn.DataParallel):
    """``nn.DataParallel`` on the one simulated GPU: the module runs there, its inputs moved as ``.to('cuda')`` moves
    them (DataParallel's own scatter asks CUDA's driver, which a CPU build of torch does not even have)."""

    def scatter(self, inputs, kwargs, device_ids):
        return (_to_gpu(tuple(inputs)),), (_to_gpu(dict(kwargs or {})),)


def _to_gpu(obj):
    """``obj`` with each tensor in it (in tuples, named ones too, lists and dicts) on the simulated GPU."""
    if isinstance(obj, torch.Tensor):
        return obj.to(_SIM)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_gpu(item) for item in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_gpu(item) for item in obj)
    if isinstance(obj, dict):
        return {key: _to_gpu(value) for key, value in obj.items()}
    return obj


class _Generator(torch.Generator):
    """``torch.Generator(device='cuda')``: a generator of the host's, which is the one the simulated GPU draws from
    (a CUDA generator would ask CUDA's driver); it says it is on ``cuda``."""

    def __new__(cls, device="cpu"):
        gpu = is_cuda(device)
        self = super().__new__(cls, "cpu" if gpu else device)
        self._on_gpu = gpu
        return self

    def __init__(self, device="cpu"):
        pass

    @property
    def device(self):
        return CUDA if self._on_gpu else super().device


def _profiler(original):
    """``torch.profiler.profile``: the CPU's activity; ProfilerActivity.CUDA (a GPU's kernels) stops with the line."""
    class profile(original):
        def __init__(self, *args, activities=None, **kwargs):
            if activities is not None and any(a == torch.profiler.ProfilerActivity.CUDA for a in activities):
                raise NotSimulated("torch.profiler.ProfilerActivity.CUDA", "profiler")
            super().__init__(*args, activities=activities or [torch.profiler.ProfilerActivity.CPU], **kwargs)
    return profile


class _Autocast(torch.amp.autocast):
    """``torch.autocast``: ``'cuda'`` is the simulated device's, with CUDA's rules; any other device's as it was."""

    def __init__(self, device_type, *args, **kwargs):
        super().__init__(sim.NAME if is_cuda(device_type) else device_type, *args, **kwargs)


class _CudaAutocast(_Autocast):
    """``torch.cuda.amp.autocast(...)``: ``torch.autocast('cuda', ...)``."""

    def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def _on_the_gpu(original):
    """A question about autocast (``torch.is_autocast_enabled()``, of CUDA's, ``get_autocast_dtype('cuda')``) asked
    of the simulated device."""
    def query(device_type=None):
        return original(sim.NAME if device_type is None or is_cuda(device_type) else device_type)
    return query


_patched: list = []  # (object, name, original) to put back
_mode: CudaAsSim | None = None


def _patch(owner, name, value) -> None:
    _patched.append((owner, name, getattr(owner, name, None)))
    setattr(owner, name, value)


def install() -> torch.device:
    """Make this process a one-GPU CUDA machine (idempotent). Returns the simulated device."""
    global _SIM, _mode
    if _mode is not None:
        return _SIM
    _SIM = sim.install()
    sim_active = sim.active()
    sim_active.__enter__()
    _patched.append((sim_active, None, None))
    for name, value in cuda_module().items():
        _patch(torch.cuda, name, value)
    _patch(warnings, "showwarning", said_at_the_caller(warnings.showwarning))
    for name, value in accelerator_module().items():
        _patch(torch.accelerator, name, value)
    _patch(torch.backends.cudnn, "is_available", lambda: True)
    # cuDNN's kernels are CUDA's own: the simulated GPU runs PyTorch's (an RNN its fused cells), so no tensor of
    # it is one for cuDNN, and there is no cuDNN version to give (as where cuDNN is missing).
    _patch(torch.backends.cudnn, "is_acceptable", _not_on_the_gpu(torch.backends.cudnn.is_acceptable))
    _patch(torch.backends.cudnn, "version", lambda: None)
    _patch(torch.UntypedStorage, "cuda", _storage_to_gpu)
    _patch(torch.jit.RecursiveScriptModule, "_apply", _script_apply(torch.jit.RecursiveScriptModule._apply))
    _patch(torch.jit, "load", _script_load(torch.jit.load))
    from torch.utils.data._utils import pin_memory

    _patch(pin_memory, "pin_memory", lambda data, device=None: data)
    _patch(torch, "set_default_device", _default_device(torch.set_default_device))
    _patch(torch, "get_default_device", lambda original=torch.get_default_device: _as_cuda(original()))
    _patch(torch, "set_default_tensor_type", _default_tensor_type(torch.set_default_tensor_type))
    _patch(torch, "compile", not_simulated("torch.compile", "compile"))
    _patch(torch.profiler, "profile", _profiler(torch.profiler.profile))
    _patch(torch, "Generator", _Generator)
    _patch(torch.nn, "DataParallel", _DataParallel)
    _patch(torch.nn.parallel, "DataParallel", _DataParallel)
    _patch(torch, "autocast", _Autocast)
    _patch(torch.amp, "autocast", _Autocast)
    _patch(torch.cuda.amp, "autocast", _CudaAutocast)
    for name in ("is_autocast_enabled", "get_autocast_dtype"):
        _patch(torch, name, _on_the_gpu(getattr(torch, name)))
    _patch(torch, "get_autocast_gpu_dtype", lambda: torch.get_autocast_dtype(sim.NAME))
    _patch(torch.cuda.amp, "GradScaler", _grad_scaler(torch.amp.GradScaler, cuda=True))
    _patch(torch.amp, "GradScaler", _grad_scaler(torch.amp.GradScaler))
    import torch.distributed as dist

    if hasattr(dist, "init_process_group"):
        _patch(dist, "init_process_group", not_simulated("torch.distributed.init_process_group", "nccl"))
    _mode = CudaAsSim()
    _mode.__enter__()
    return _SIM


def _default_device(original):
    def set_default_device(device):
        return original(_SIM if device is not None and is_cuda(device) else device)
    return set_default_device


def _as_cuda(device: torch.device) -> torch.device:
    return CUDA if device.type == sim.NAME else device


def _default_tensor_type(original):
    """``torch.set_default_tensor_type(torch.cuda.FloatTensor)`` (or its name): factories make GPU tensors of that
    dtype, as on CUDA, until a CPU type is set again."""
    on_gpu = False   # whether this made the GPU the default device

    def set_default_tensor_type(t):
        nonlocal on_gpu
        host = cuda_type(t)
        original(host or t)
        if host is not None or on_gpu:
            on_gpu = host is not None
            torch.set_default_device(_SIM if on_gpu else None)
    return set_default_tensor_type


def _not_on_the_gpu(original):
    def is_acceptable(tensor) -> bool:
        return not isinstance(tensor, sim.SimTensor) and original(tensor)
    return is_acceptable


def _storage_to_gpu(self, device=None, non_blocking=False):
    """``storage.cuda()`` (``torch.load(f, map_location=lambda storage, loc: storage.cuda())``): a copy whose
    tensors are on the simulated GPU, as torch.load makes them for ``map_location='cuda'``."""
    if device is not None:
        is_cuda(as_device(device))
    return self if self.device.type == sim.NAME else sim.as_device_storage(self.clone())


def _script_apply(original):
    """A TorchScript module's ``.to('cuda')``: its parameters live in C++, where a tensor of the simulated GPU
    can't be swapped in, so that stops with the one line (scripting a model already on the GPU works)."""
    def _apply(self, fn, *args, **kwargs):
        try:
            return original(self, fn, *args, **kwargs)
        except RuntimeError as err:
            if "Couldn't swap" not in str(err):
                raise
            raise NotSimulated("moving a TorchScript module to the GPU", "jit") from None
    return _apply


def _script_load(original):
    """``torch.jit.load(f, map_location='cuda')``: the one line, as for moving a TorchScript module (CUDA's driver
    would be asked otherwise); loaded elsewhere, as it was."""
    def load(f, map_location=None, *args, **kwargs):
        if map_location is not None and not callable(map_location) and is_cuda(map_location):
            raise NotSimulated(f"torch.jit.load(map_location={str(map_location)!r})", "jit")
        return original(f, map_location, *args, **kwargs)
    return load


def _grad_scaler(original, cuda=False):
    """``torch.amp.GradScaler('cuda', ...)`` (``cuda``: ``torch.cuda.amp.GradScaler(...)``) on the simulated device."""
    def scaler(*args, **kwargs):
        device = "cuda" if cuda else kwargs.pop("device", args[0] if args else "cuda")
        args = args if cuda or not args else args[1:]
        return original(sim.NAME if is_cuda(device) else device, *args, **kwargs)
    return scaler


def uninstall() -> None:
    """Pop the mode and put ``torch.cuda`` back (the simulator itself stays installed, as it must)."""
    global _mode
    if _mode is None:
        return
    _mode.__exit__(None, None, None)
    _mode = None
    while _patched:
        owner, name, original = _patched.pop()
        if name is None:
            owner.__exit__(None, None, None)
        else:
            setattr(owner, name, original)
