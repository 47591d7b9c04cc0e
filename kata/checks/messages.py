"""Values and errors, put into the words a failure message needs.

Every message a check shows has the same shape: a first line that names the
cause and the lesson (the same text wherever that cause shows up, so a run's
summary can fold repeated failures into one), then the specifics (which entry,
which line of the learner's file) on the lines after it.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest
import torch

__all__ = ["ENTRY_LESSONS", "describe", "entry_kind", "explained_device_mismatch", "explained_learner_errors",
           "history_entry_problem", "numpy_refusal", "value_problem", "where_in"]


def describe(value) -> str:
    """A value as a message should name it: 'a torch.Tensor on cuda:0 ...', 'a NumPy float64 ...'.

    Never an internal class name: a tensor of any subclass (the simulated
    accelerator's included) is 'a torch.Tensor on DEVICE'."""
    if isinstance(value, torch.Tensor):
        grad = " with requires_grad=True" if value.requires_grad else ""
        dims = f"{value.dim()}-d " if value.dim() == 0 else ""
        shown = f"{value.detach().cpu().item():.6g}" if value.numel() == 1 else f"shape {tuple(value.shape)}"
        return f"a {dims}torch.Tensor on {value.device}{grad} ({shown})"
    if isinstance(value, np.generic):
        return f"a NumPy {type(value).__name__} ({value!r})"
    if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(describe(v) if isinstance(v, torch.Tensor) else repr(v) for v in value[:4])
        return f"{_a(type(value).__name__)} of {len(value)} ({inner}{', ...' if len(value) > 4 else ''})"
    return f"{_a(type(value).__name__)} ({value!r})"


def _a(name: str) -> str:
    """'an int', 'an OrderedDict', 'a list'."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


# --- what a history may hold --------------------------------------------------
#
# The contract: four lists of Python floats. Each kind of wrong entry has its own
# true reason, in one stable line.

def entry_kind(value) -> str | None:
    """The kind of a history entry that is not a Python float (None for a float):
    'device tensor', 'grad tensor', 'cpu tensor', 'numpy scalar' or 'other'."""
    if type(value) is float:
        return None
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            return "device tensor"
        return "grad tensor" if value.requires_grad else "cpu tensor"
    if isinstance(value, np.generic):
        return "numpy scalar"
    return "other"


ENTRY_LESSONS = {
    "device tensor": (
        "A tensor on the accelerator where a Python float belongs: the seed's crash. matplotlib turns what "
        "it plots into NumPy arrays, and NumPy can't read device memory (\"can't convert cuda:0 device type "
        "tensor to numpy\"). `0 + is_correct.sum()` stays a tensor on the device, and `.float()` changes "
        "only its dtype: sum `is_correct.sum().item()` (a Python float on the host), or keep the sums on the "
        "device and convert them once per epoch."),
    "grad tensor": (
        "A tensor that requires grad where a Python float belongs (a loss kept as a tensor: `loss * n` "
        "instead of `loss.item() * n`): NumPy refuses it (\"Can't call numpy() on Tensor that requires "
        "grad\"), and it keeps its batch's autograd graph alive. Sum `loss.item() * y_batch.size(0)`: a "
        "Python float."),
    "cpu tensor": (
        "A CPU tensor where a Python float belongs (what `is_correct.sum()` gives on the CPU, and the book's "
        "GitHub version's `is_correct.sum().cpu()` on any device): it plots, but the histories and scores "
        "are Python floats by the contract, values any caller can print, compare, save as JSON and plot (and "
        "on a GPU the same code without .cpu() is the seed's crash). Sum `is_correct.sum().item()`: .item() "
        "gives the Python number."),
    "numpy scalar": (
        "A NumPy scalar where a Python float belongs (np.float64 even passes isinstance(x, float), but it is "
        "another type): convert with float(x) or x.item()."),
    "other": (
        "A value that is not a Python float where one belongs: each is a mean loss or a share of correct "
        "predictions, a division that gives a float."),
}


def history_entry_problem(history, names) -> str | None:
    """The message for the first list of ``history`` holding an entry that is not a
    Python float: the lesson of its kind (one stable line), then where (None when
    all are floats)."""
    for name, entries in zip(names, history):
        for i, v in enumerate(entries):
            kind = entry_kind(v)
            if kind is not None:
                others = sorted({f"{n}" for n, h in zip(names, history) for x in h if entry_kind(x) == kind})
                return (f"{ENTRY_LESSONS[kind]}\n  {name}[{i}] is {describe(v)}"
                        + (f"; entries of this kind are in {', '.join(others)}" if len(others) > 1 else ""))
    return None


def value_problem(values: dict) -> str | None:
    """The same for single values ({'evaluate's loss': value, ...}) that must be Python floats."""
    for name, v in values.items():
        kind = entry_kind(v)
        if kind is not None:
            return f"{ENTRY_LESSONS[kind]}\n  {name} is {describe(v)}"
    return None


# --- errors of the learner's code, explained ----------------------------------

_DEVICE_TO_NUMPY = re.compile(r"can't convert (\S+) device type tensor to numpy")
_GRAD_TO_NUMPY = "Can't call numpy() on Tensor that requires grad"


def numpy_refusal(exc: BaseException) -> str | None:
    """'device' or 'grad' when ``exc`` is NumPy (through PyTorch) refusing a tensor, else None."""
    text = str(exc)
    if isinstance(exc, TypeError) and _DEVICE_TO_NUMPY.search(text):
        return "device"
    if isinstance(exc, RuntimeError) and _GRAD_TO_NUMPY in text:
        return "grad"
    return None


NUMPY_LESSONS = {
    "device": (
        "NumPy can't read a tensor on the accelerator: the seed's crash. matplotlib (and np.asarray, and "
        ".numpy()) turn values into NumPy arrays in host memory, and a device tensor is not there. Convert each "
        "value to a Python float first with .item() or float(t) (both copy it to the host); .float() only "
        "changes the dtype and keeps the device."),
    "grad": (
        "NumPy refuses a tensor that requires grad (\"Can't call numpy() on Tensor that requires grad\"): "
        "matplotlib turns what it plots into NumPy arrays. Convert each value to a Python float first with "
        ".item() or float(t) (or .detach() it)."),
}


def where_in(exc: BaseException, folder) -> str:
    """'at exercises/training.py, line 42, in train: ax.plot(...)', or ''."""
    from kata.harness.tracebacks import place_in

    place = place_in(exc, folder) if folder is not None else None
    return f"at {place.where}: {place.source}" if place else ""


def _fail(message: str):
    """pytest.fail(message), without the error it explains chained to it: the message alone."""
    __tracebackhide__ = True
    raise pytest.fail.Exception(message, pytrace=False) from None


def _mismatch(err: BaseException) -> bool:
    return isinstance(err, RuntimeError) and ("same device" in str(err) or "should be the same" in str(err))


@contextlib.contextmanager
def explained_device_mismatch(what: str, advice: str):
    """Turn PyTorch's error for tensors of two devices meeting in one op into a
    check failure that says what mixed them and what to do.

    PyTorch's wording varies: "Expected all tensors to be on the same device ..."
    for most ops, "Input type (torch.FloatTensor) and weight type
    (torch.cuda.FloatTensor) should be the same ..." for a convolution on CUDA fed
    a CPU batch."""
    __tracebackhide__ = True
    message = None
    try:
        yield
    except RuntimeError as err:
        if not _mismatch(err):
            raise
        message = f"{what} mixed devices: {advice}\n  ({err})"
    if message is not None:
        _fail(message)


@contextlib.contextmanager
def explained_learner_errors(handle, what: str, advice: str = "", numpy_advice: str = ""):
    """Run the learner's code (the module ``handle``), explaining the errors a
    learner of this kata meets: devices mixed in one op (with ``advice``), and NumPy
    (through matplotlib) refusing a device tensor, the seed's crash, or a tensor
    that requires grad (with ``numpy_advice``, and the line of the learner's file).
    Anything else passes through untouched."""
    from kata.harness.target import target_of

    __tracebackhide__ = True
    message = None
    try:
        yield
    except (TypeError, RuntimeError) as exc:
        refusal = numpy_refusal(exc)
        if _mismatch(exc):
            where = where_in(exc, target_of(handle).path)
            message = f"{what} mixed devices: {advice}\n  {where or 'in a library call'}\n  ({exc})"
        elif refusal is not None:
            where = where_in(exc, target_of(handle).path)
            message = (f"{NUMPY_LESSONS[refusal]}{' ' + numpy_advice if numpy_advice else ''}\n"
                       f"  {what} failed {where or 'in a library call'}\n  {type(exc).__name__}: {exc}")
        else:
            raise
    if message is not None:
        _fail(message)
