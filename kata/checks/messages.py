"""Values and errors, put into the words a failure message needs.

Every message a check shows has the same shape: a first line that names the
cause and the lesson (the same text wherever that cause shows up, so a run's
summary can fold repeated failures into one), then the specifics (which entry,
which line of the learner's file) on the lines after it.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from kata.checks import lessons
from kata.checks.lessons import ENTRY_LESSONS, NUMPY_LESSONS
from kata.i18n import N_, _, say

__all__ = ["ENTRY_LESSONS", "NUMPY_LESSONS", "describe", "device_type", "entry_kind", "explained_learner_errors",
           "fail_if", "history_entry_problem", "loss_misuse", "mixed_devices", "numpy_refusal", "placed_of",
           "premise_first", "tensors_by_device", "value_problem", "where_in"]


def describe(value) -> str:
    """A value as a message should name it: 'a torch.Tensor on cuda:0 ...', 'a NumPy float64 ...'.

    Never an internal class name: a tensor of any subclass (the simulated
    accelerator's included) is 'a torch.Tensor on DEVICE'. One whole template
    per case, so each translates as it stands."""
    if isinstance(value, torch.Tensor):
        device, shape, grad = str(value.device), tuple(value.shape), value.requires_grad
        if value.numel() == 1:
            number = value.detach().cpu().item()
            if value.dim() == 0:
                template = (N_("a 0-d torch.Tensor on {device} with requires_grad=True ({value:.6g})") if grad
                            else N_("a 0-d torch.Tensor on {device} ({value:.6g})"))
            else:
                template = (N_("a torch.Tensor of shape {shape} on {device} with requires_grad=True ({value:.6g})")
                            if grad else N_("a torch.Tensor of shape {shape} on {device} ({value:.6g})"))
            return say(template, device=device, shape=shape, value=number)
        template = (N_("a torch.Tensor on {device} with requires_grad=True (shape {shape})") if grad
                    else N_("a torch.Tensor on {device} (shape {shape})"))
        return say(template, device=device, shape=shape)
    if isinstance(value, np.generic):
        return say("a NumPy {kind} ({value})", kind=type(value).__name__, value=repr(value))
    if isinstance(value, np.ndarray):
        return say("a NumPy array of shape {shape} and dtype {dtype}", shape=value.shape, dtype=value.dtype)
    kind = type(value).__name__
    if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
        items = ", ".join(describe(v) if isinstance(v, torch.Tensor) else repr(v) for v in value[:4])
        items += ", ..." if len(value) > 4 else ""
        template = N_("an {kind} of {count} ({items})") if _an(kind) else N_("a {kind} of {count} ({items})")
        return say(template, kind=kind, count=len(value), items=items)
    return say(N_("an {kind} ({value})") if _an(kind) else N_("a {kind} ({value})"), kind=kind, value=repr(value))


def _an(name: str) -> bool:
    """'an int', 'an OrderedDict', but 'a list': the English article's choice."""
    return name[:1].lower() in "aeiou"


# --- what a history may hold --------------------------------------------------
#
# The contract: four lists of Python floats. Each kind of wrong entry has its own
# true reason (kata.checks.lessons.ENTRY_LESSONS), in one stable line.

def entry_kind(value) -> str | None:
    """The kind of a history entry that is not a Python float (None for a float):
    'device tensor', 'grad tensor', 'cpu tensor', 'numpy scalar' or 'other'."""
    if type(value) is float:
        return None
    if isinstance(value, torch.Tensor):   # requires grad first: that is wrong on the CPU too
        if value.requires_grad:
            return "grad tensor"
        return "device tensor" if value.device.type != "cpu" else "cpu tensor"
    if isinstance(value, np.generic):
        return "numpy scalar"
    return "other"


def history_entry_problem(history, names) -> str | None:
    """The message for the first list of ``history`` holding an entry that is not a
    Python float: the lesson of its kind (one stable line), then where (None when
    all are floats)."""
    for name, entries in zip(names, history):
        for i, v in enumerate(entries):
            kind = entry_kind(v)
            if kind is not None:
                others = sorted({f"{n}" for n, h in zip(names, history) for x in h if entry_kind(x) == kind})
                where = (say(lessons.ENTRY_AT_ALSO, name=name, index=i, value=describe(v),
                                     lists=", ".join(others)) if len(others) > 1
                         else say(lessons.ENTRY_AT, name=name, index=i, value=describe(v)))
                return f"{_(ENTRY_LESSONS[kind])}\n{where}"
    return None


def value_problem(values: dict) -> str | None:
    """The same for single values ({'evaluate's loss': value, ...}) that must be Python floats."""
    for name, v in values.items():
        kind = entry_kind(v)
        if kind is not None:
            return f"{_(ENTRY_LESSONS[kind])}\n{say(lessons.VALUE_IS, name=name, value=describe(v))}"
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


def where_in(exc: BaseException, folder) -> str:
    """'at exercises/training.py, line 42, in train: ax.plot(...)', or '': from ``exc``'s traceback, else from where
    the record that met it said the learner's code raised it (``exc.kata_raised_at``: kata.records.raised_at)."""
    from kata.harness.tracebacks import Place, place_in

    place = place_in(exc, folder) if folder is not None else None
    at = getattr(exc, "kata_raised_at", None)
    if place is None and isinstance(at, list) and len(at) == 4 and isinstance(at[0], str):
        place = Place(Path(at[0]), *at[1:])
    return say("at {where}: {source}", where=place.where, source=place.source) if place else ""


def _fail(message: str):
    """pytest.fail(message), without the error it explains chained to it: the message alone."""
    __tracebackhide__ = True
    raise pytest.fail.Exception(message, pytrace=False) from None


def fail_if(problem: str | None) -> None:
    """Fail the check with ``problem``, the message alone, when there is one. Checks that fail for
    a shared cause all fail this way (pytest.fail, never a bare assert), so a run sees one
    exception and one first line for that cause, and folds them."""
    __tracebackhide__ = True
    if problem is not None:
        raise pytest.fail.Exception(problem, pytrace=False) from None


@contextlib.contextmanager
def premise_first(premise):
    """Where the check inside fails (an assert, or pytest.fail), fail it instead with ``premise()``'s message
    when there is one: the cause another check names, of which this failure is only a consequence (a model's
    outputs, when its layers are not the book's). A check that passes passes; one whose premise holds fails
    with its own message, as does one whose premise can't be told (an error of the learner's code in it, which the
    check that names the premise reports)."""
    __tracebackhide__ = True
    try:
        yield
    except (AssertionError, pytest.fail.Exception) as own:
        try:
            problem = premise()
        except (AssertionError, pytest.fail.Exception):
            raise                    # the premise's check fails the same way: its message
        except Exception:
            raise own from None
        fail_if(problem)
        raise


def mixed_devices(err: BaseException) -> bool:
    """Whether ``err`` is PyTorch's error for tensors of two devices in one op."""
    return isinstance(err, RuntimeError) and ("same device" in str(err) or "should be the same" in str(err))


# PyTorch's words for a loss given integer labels, or predictions and labels of other shapes.
_INTEGER_LABELS = ("Found dtype Long but expected Float", "can't be cast to the desired output type Long",
                   "not implemented for 'Long'")
_OTHER_SHAPES = re.compile(r"Using a target size \(torch\.Size\(\[.*\]\)\) that is different to the input size")


def loss_misuse(exc: BaseException) -> str | None:
    """The lesson for nn.BCELoss() given integer labels, or predictions and labels of other
    shapes, or for backward() of a loss without a graph (PyTorch's own error, explained);
    None for any other error."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and any(words in text for words in _INTEGER_LABELS):
        return _(lessons.LOSS_GOT_INTEGER_LABELS)
    if isinstance(exc, ValueError) and _OTHER_SHAPES.search(text):
        return _(lessons.LOSS_GOT_OTHER_SHAPES)
    if isinstance(exc, RuntimeError) and "does not require grad and does not have a grad_fn" in text:
        return _(lessons.BACKWARD_WITHOUT_GRAPH)
    return None


def placed_of(exc: BaseException, folder) -> dict:
    """Where the tensors and modules of the learner's frame that raised ``exc`` (in a file under ``folder``) were,
    as :func:`kata.records.placed` says it: as the record that met it sent it (``exc.kata_placed``, in the learner's
    process and from the wire alike), else read from its traceback; only well-formed entries."""
    from kata.records import placed

    found = getattr(exc, "kata_placed", None)
    if not isinstance(found, dict):
        found = placed(exc, folder)
    return {name: p for name, p in found.items() if isinstance(name, str) and isinstance(p, dict)
            and p.get("kind") in ("tensor", "module") and isinstance(p.get("class"), str)
            and isinstance(p.get("device"), (str, type(None)))}


def device_type(p: dict) -> str | None:
    """The device type ('cpu', 'cuda', ...) of one entry of :func:`placed_of`, or None (a module without
    parameters)."""
    return None if p["device"] is None else p["device"].split(":")[0]


def tensors_by_device(places: dict) -> str:
    """A frame's tensors (and modules) by device (``places``: :func:`placed_of`), 'x_batch, loss_sum on cpu; loss,
    pred, model on simgpu:0', or '' if they are all on one device."""
    where: dict[str, list[str]] = {}
    for name, p in places.items():
        if p["device"] is not None:
            where.setdefault(p["device"], []).append(name)
    if len(where) < 2:
        return ""
    return "; ".join(say("{names} on {device}", names=", ".join(names), device=device)
                     for device, names in sorted(where.items()))


@contextlib.contextmanager
def explained_learner_errors(handle, what: str, advice: str = "", numpy_advice: str = "", mixed=None):
    """Run the learner's code (the module ``handle``), explaining the errors a
    learner of this kata meets: devices mixed in one op (with ``advice``, and which
    of their tensors were where; ``mixed(places)``, given where the learner's frame's
    tensors and modules were (:func:`placed_of`), may name the cause in its own first line), nn.BCELoss() given
    integer labels or predictions of another shape, and NumPy (through matplotlib)
    refusing a device tensor, the seed's crash, or a tensor that requires grad (with
    ``numpy_advice``). Each with the line of the learner's file and PyTorch's own
    words; anything else passes through untouched."""
    from kata.harness.target import target_of

    __tracebackhide__ = True
    message = None
    try:
        yield
    except (TypeError, RuntimeError, ValueError) as exc:
        folder = target_of(handle).path
        where = where_in(exc, folder) or _(lessons.WHERE_IN_A_LIBRARY)
        error = f"{type(exc).__name__}: {exc}"      # PyTorch's own words, as it wrote them
        details = say(lessons.PYTORCH_ERROR_AT, who=what, where=where, error=error)
        refusal = numpy_refusal(exc)
        misuse = loss_misuse(exc)
        if mixed_devices(exc):
            places = placed_of(exc, folder)
            placed = tensors_by_device(places)
            frame = f"\n{say(lessons.MIXED_DEVICES_FRAME, placed=placed)}" if placed else ""
            first = (mixed(places) if mixed is not None else None) or say(lessons.MIXED_DEVICES, advice=advice)
            message = f"{first}{frame}\n{details}"
        elif misuse is not None:
            message = f"{misuse}\n{details}"
        elif refusal is not None:
            message = f"{_(lessons.NUMPY_LESSONS[refusal])}{' ' + numpy_advice if numpy_advice else ''}\n{details}"
        else:
            raise
    if message is not None:
        _fail(message)
