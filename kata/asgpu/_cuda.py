"""What ``torch.cuda`` and ``torch.accelerator`` answer under ``kata run``: one GPU, ``cuda:0``, backed by the simulated
accelerator (:mod:`kata.asgpu._gpu` puts these answers in place).

``torch.cuda`` answers as a one-GPU machine does: availability, the device's name and properties (the host's memory
and cores, which the simulated GPU computes in), seeds and random state, the default stream and its events, the legacy
tensor types (``torch.cuda.FloatTensor``), ``torch.cuda.device(0)``.  What the simulator can't honour (memory
statistics, other streams, a GPU model's properties) raises :class:`NotSimulated`, one line saying what.
"""

from __future__ import annotations

import contextlib
import os
import time

import torch

from kata import sim
from kata.asgpu._limits import NotSimulated

__all__ = ["CUDA", "NAME_OF_DEVICE", "DefaultStream", "accelerator_module", "as_device", "cuda_module",
           "cuda_type", "is_cuda", "not_simulated", "seed_all"]

CUDA = torch.device("cuda", 0)
NAME_OF_DEVICE = "Simulated GPU (kata run: kata.sim on the CPU)"

def is_cuda(device) -> bool:
    """True for ``"cuda"``, ``"cuda:0"`` or a cuda ``torch.device``; NotSimulated for another GPU."""
    if isinstance(device, str):
        if not device.startswith("cuda"):
            return False
        device = torch.device(device)
    elif not isinstance(device, torch.device) or device.type != "cuda":
        return False
    if device.index not in (None, 0):
        raise NotSimulated(str(device), "ordinal")
    return True


def not_simulated(what: str, why: str):
    def refuse(*args, **kwargs):
        raise NotSimulated(what, why)
    return refuse


class DefaultStream:
    """``torch.cuda.current_stream()``: the one stream there is; waiting for it is a sync."""

    def synchronize(self) -> None:
        torch.simgpu.synchronize()

    def wait_stream(self, stream) -> None:
        pass

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:   # a CUDA graph is being captured (torch.optim asks before each step): never
        return False


@contextlib.contextmanager
def _stream(stream):
    """``with torch.cuda.stream(s):``: the default stream (or None) is where the work goes anyway; any other
    stops with the one line."""
    if not (stream is None or isinstance(stream, DefaultStream)):
        raise NotSimulated("torch.cuda.stream", "stream")
    yield stream


_MEMORY = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
           "memory_summary", "memory_snapshot", "mem_get_info", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "list_gpu_processes", "set_per_process_memory_fraction",
           "utilization", "temperature", "power_draw")
_STREAMS = ("Stream", "ExternalStream", "stream", "set_stream", "graph", "CUDAGraph", "graphs")


class _Event:
    """``torch.cuda.Event`` on the default stream: what a script times its GPU work with. The simulated GPU works
    as the host asks, so an event is complete once recorded, and the time between two is the host's; waiting for
    one is a sync, as on CUDA."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotSimulated("torch.cuda.Event(interprocess=True)", "stream")
        self.enable_timing, self._at = enable_timing, None

    def record(self, stream=None) -> None:
        self._at = time.perf_counter()

    def synchronize(self) -> None:
        torch.simgpu.synchronize()

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end) -> float:
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._at is None or end._at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end._at - self._at) * 1000.0


def cuda_module() -> dict:
    """What ``torch.cuda`` answers on the one simulated GPU (name -> replacement)."""
    answers = {
        "is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
        "is_initialized": lambda: True, "init": lambda: None, "empty_cache": lambda: None,
        "get_device_name": lambda device=None: (is_cuda(as_device(device)), NAME_OF_DEVICE)[1],
        "get_device_capability": not_simulated("torch.cuda.get_device_capability", "properties"),
        "set_device": lambda device: (is_cuda(as_device(device)), None)[1],
        "synchronize": lambda device=None: torch.simgpu.synchronize(),
        "manual_seed": seed_all, "manual_seed_all": seed_all, "seed": lambda: None, "seed_all": lambda: None,
        "initial_seed": lambda: torch.initial_seed(),
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "set_rng_state": lambda state, device="cuda": torch.set_rng_state(state),
        "current_stream": lambda device=None: DefaultStream(), "default_stream": lambda device=None: DefaultStream(),
        "Event": _Event,
        "is_bf16_supported": lambda *a, **k: True, "is_current_stream_capturing": lambda: False,
        "set_sync_debug_mode": sim.set_sync_debug_mode, "get_sync_debug_mode": sim.get_sync_debug_mode,
    }
    answers.update({name: not_simulated(f"torch.cuda.{name}", "memory") for name in _MEMORY})
    answers.update({name: not_simulated(f"torch.cuda.{name}", "stream") for name in _STREAMS})
    answers["stream"] = _stream
    answers["get_device_properties"] = lambda device=None: (is_cuda(as_device(device)), _Properties())[1]
    answers["device"] = answers["device_of"] = _DeviceContext
    answers.update({cls.__name__: cls for cls in _LEGACY_TYPES})
    return answers


class _Properties:
    """``torch.cuda.get_device_properties(0)``: the simulated GPU's name, and its memory and processors, which are
    the host's (it computes in the host's memory, on its cores); what a GPU model has (its compute capability, its
    warp size, ...) stops with the one line."""

    name = NAME_OF_DEVICE

    @property
    def total_memory(self) -> int:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    @property
    def multi_processor_count(self) -> int:
        return os.cpu_count() or 1

    def __getattr__(self, name):
        raise _NoSuchProperty(f"torch.cuda.get_device_properties(0).{name}", "properties")

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name='{self.name}', total_memory={self.total_memory // 2**20}MB, " \
               f"multi_processor_count={self.multi_processor_count})"


class _NoSuchProperty(NotSimulated, AttributeError):
    """A GPU model's property: the one line when read, False to ``hasattr`` (which asks for an AttributeError)."""


class _DeviceContext:
    """``with torch.cuda.device(0):`` (and ``torch.cuda.device_of(t)``): there is one GPU, so nothing to switch."""

    def __init__(self, device):
        if isinstance(device, torch.Tensor):
            device = device.device
        if not (device is None or (isinstance(device, int) and device < 0)):
            is_cuda(as_device(device))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


class _LegacyType(type):
    """``torch.cuda.FloatTensor`` and its kind, as old scripts use them: ``torch.cuda.FloatTensor(2, 3)`` makes a
    tensor on the GPU, ``x.type(torch.cuda.FloatTensor)`` moves one there, ``isinstance`` asks dtype and device."""

    def __call__(cls, *args, **kwargs):
        return cls.cpu(*args, **kwargs).to(sim.NAME)   # the simulated device, which cuda:0 stands for

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, torch.Tensor) and obj.device.type in ("cuda", sim.NAME) and obj.dtype == cls.cpu.dtype


_LEGACY_TYPES = [_LegacyType(name, (), {"cpu": getattr(torch, name), "__module__": "torch.cuda"}) for name in (
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor")]


def cuda_type(wanted) -> str | None:
    """``'torch.FloatTensor'`` for a CUDA tensor type given to ``Tensor.type`` (its name, or its class), else None."""
    name = wanted if isinstance(wanted, str) else \
        f"{getattr(wanted, '__module__', '')}.{getattr(wanted, '__name__', '')}"
    return "torch." + name[len("torch.cuda."):] if name.startswith("torch.cuda.") else None


def accelerator_module() -> dict:
    """What ``torch.accelerator`` answers on the one simulated GPU: CUDA is the current accelerator."""
    answers = {"current_accelerator": lambda check_available=False: torch.device("cuda"),
               "synchronize": lambda device=None: torch.simgpu.synchronize(),
               "current_stream": lambda device=None: DefaultStream(),
               "get_device_capability": not_simulated("torch.accelerator.get_device_capability", "properties")}
    answers.update({name: not_simulated(f"torch.accelerator.{name}", "memory") for name in (
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
        "reset_accumulated_memory_stats", "reset_peak_memory_stats", "get_memory_info")})
    answers.update({name: not_simulated(f"torch.accelerator.{name}", "stream")
                    for name in ("set_stream", "Graph", "graphs")})
    return {name: value for name, value in answers.items() if hasattr(torch.accelerator, name)}


def as_device(device):
    if device is None or isinstance(device, int):
        return torch.device("cuda", device or 0)
    return device


def seed_all(seed) -> None:
    torch.default_generator.manual_seed(int(seed))  # the simulated GPU draws from the CPU's generator
