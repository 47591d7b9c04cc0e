"""What the checkpoint checks compare with: a tiny run's states, and what a checkpoint file holds.

A checkpoint's layout is the learner's to choose (their ``load_checkpoint``
reads it), so the checks read a file by what it holds, not by its keys: the
mapping with the model's state_dict keys, the mapping with ``state`` and
``param_groups`` (the optimizer's), a number equal to the epoch, and a list with
each history's values (:func:`contents`). The records (records/checkpoint.py)
read the file as any stranger's file should be read, with ``weights_only=True``;
a refusal is said by what the file holds (:func:`unreadable_problem`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kata.checks import lessons
from kata.checks.messages import describe
from kata.i18n import _, say
from kata.records.history import HISTORY, HISTORY_NAMES

__all__ = ["HISTORY", "Contents", "contents", "describe_file", "epoch_problem", "file_problem",
           "history_problem", "history_refused", "moved_problem", "number", "optimizer_difference", "optimizer_problem",
           "optimizer_state", "read_problem", "refused_global", "same", "state", "state_problem",
           "unreadable_problem"]



def state(model) -> dict:
    """The model's state_dict, copied to the CPU."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def optimizer_state(optimizer) -> dict:
    """The optimizer's state_dict, its tensors copied to the CPU."""
    return copy.deepcopy({"state": {i: {k: v.detach().cpu() if isinstance(v, torch.Tensor) else v
                                        for k, v in s.items()} for i, s in optimizer.state_dict()["state"].items()},
                          "param_groups": optimizer.state_dict()["param_groups"]})


# --- reading a file as a stranger's: weights_only=True ----------------------------------------------

_REFUSED = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def refused_global(kind: str, message: str) -> str | None:
    """The global (``torch.nn.modules.container.Sequential``) weights_only loading refused (an error of type
    ``kind`` said ``message``), or None."""
    found = _REFUSED.search(message) if kind == "UnpicklingError" else None
    return found.group(1) if found else None


def unreadable_problem(kind: str, message: str, path=None) -> str | None:
    """The lesson for a checkpoint weights_only=True refuses (by what it holds), or None for another error; with
    the file's ``path``, what torch.load said of it on the next line."""
    name = refused_global(kind, message)
    if name is None:
        operand = re.search(r"Unsupported operand (\d+)", message) if kind == "UnpicklingError" else None
        return say(lessons.CKPT_PROTOCOL, operand=operand.group(1)) if operand else None
    if name in ("getattr", "builtins.getattr"):   # how pickle writes a bound method: model.state_dict, uncalled
        kind = "method"
    elif name.startswith("torch.torch_version"):
        kind = "version"
    elif name.startswith("torch.nn.modules") or name.startswith("torch.nn.parameter.Parameter"):
        kind = "model"
    elif name.startswith("torch.optim"):
        kind = "optimizer"
    elif name.startswith("numpy"):
        kind = "numpy"
    else:
        kind = "class"
    lesson = say(lessons.CKPT_UNREADABLE[kind], name=name.rsplit(".", 1)[-1])
    if path is None:
        return lesson
    gist = next((line.strip() for line in _ANSI.sub("", message).splitlines() if "Unsupported global" in line), "")
    gist = re.sub(r"_kata_target_\d+\.", "", gist.split(" was not an allowed global")[0])
    return lesson + "\n" + say(lessons.CKPT_REFUSED_AS, path=Path(path).name,
                                gist=gist.replace("WeightsUnpickler error: ", ""))


def read_problem(held: Mapping, path) -> str | None:
    """Why the file a record read (``{"missing"}``, ``{"error": {"type", "message"}}`` or ``{"file"}``) is no
    checkpoint read with weights_only=True onto the CPU, or None."""
    if held.get("missing"):
        return say(lessons.CKPT_NO_FILE, path=Path(path).name)
    error = held.get("error")
    if error is None:
        return None
    text = f"{error['type']}: {error['message']}"
    return unreadable_problem(error["type"], error["message"], path) or say(
        "torch.load({path}, weights_only=True) failed: {error}", path=Path(path).name, error=text)


# --- what a file holds, found by what it is ----------------------------------------------------------


def number(value) -> float | None:
    """A numeric leaf as a float (a Python number, a 0-d tensor, a NumPy scalar), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dim() == 0:
        return float(value.detach().cpu().double())
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return float(value.item())
    return None


def _matches(seq, values) -> bool:
    if len(seq) != len(values) or not values:
        return False
    got = [number(v) for v in seq]
    return all(g is not None and abs(g - w) <= 1e-6 * max(1.0, abs(w)) for g, w in zip(got, values))


@dataclass
class Contents:
    """What a checkpoint holds: the model's state, the optimizer's, the leaves equal to the epoch and,
    per history list, the sequence with its values (None where there is none)."""

    model: Mapping | None = None
    optimizer: Mapping | None = None
    epochs: list = field(default_factory=list)
    histories: list = field(default_factory=lambda: [None] * 4)
    named_epochs: list = field(default_factory=list)   # (key, value): a number under a key naming an epoch


def contents(obj, model_keys, epoch, history) -> Contents:
    found = Contents()
    wanted = [[number(v) for v in h] for h in history]

    def visit(node, depth=0):
        if depth > 12:
            return
        if isinstance(node, Mapping):
            keys = set(node)
            if found.model is None and keys == set(model_keys) and all(isinstance(v, torch.Tensor)
                                                                       for v in node.values()):
                found.model = node
                return
            if found.optimizer is None and {"state", "param_groups"} <= keys:
                found.optimizer = node
                return
            for key, value in node.items():
                if "epoch" in str(key).lower() and number(value) is not None:
                    found.named_epochs.append((key, value))
                visit(value, depth + 1)
            return
        if isinstance(node, torch.Tensor) and node.dim() in (1, 2):
            rows = [node] if node.dim() == 1 else list(node)
            for row in rows:
                for i, values in enumerate(wanted):
                    if found.histories[i] is None and _matches(list(row), values):
                        found.histories[i] = row
            return
        if isinstance(node, (list, tuple)):
            for i, values in enumerate(wanted):
                if found.histories[i] is None and _matches(node, values):
                    found.histories[i] = node
                    return
            for value in node:
                visit(value, depth + 1)
            return
        if number(node) is not None and number(node) == float(epoch):
            found.epochs.append(node)

    visit(obj)
    return found


def describe_file(obj) -> str:
    """What a loaded checkpoint is, in a few words: "a dict with the keys ['epoch', 'model', ...]"."""
    if isinstance(obj, Mapping):
        return say("a {kind} with the keys {keys}", kind=type(obj).__name__, keys=list(obj)[:8])
    if isinstance(obj, (list, tuple)):
        return say("a {kind} of {count} items", kind=type(obj).__name__, count=len(obj))
    return say("a {kind}", kind=type(obj).__name__)


# --- what a file must hold: the contract's checkpoint ---------------------------------------------


def same(got, want, atol: float = 0.0) -> bool:
    """Tensors equal (within ``atol``, for a run on an accelerator against the checks' own on the CPU)."""
    got = got.detach().cpu()
    return torch.equal(got, want) if not atol else bool(torch.allclose(got.double(), want.double(), 0, atol))


def _first_difference(got: Mapping, want: Mapping, atol: float = 0.0):
    """(key, got, want) of the first tensor that differs, or None."""
    for key, value in want.items():
        mine = got.get(key)
        if not isinstance(mine, torch.Tensor) or mine.shape != value.shape or not same(mine, value, atol):
            return key, mine, value
    return None


def state_problem(found: Contents, obj, want: dict, atol: float = 0.0) -> str | None:
    """The model's state_dict is in the file, with the values the model had when saved (``want``)."""
    if found.model is None:
        return say(lessons.CKPT_NO_MODEL_STATE, keys=", ".join(want), found=describe_file(obj))
    first = _first_difference(found.model, want, atol)
    if first is not None:
        key, got, value = first
        return say(lessons.CKPT_MODEL_STATE_DIFFERS, key=key, got=_tensor(got), want=_tensor(value))
    return None


def _tensor(t) -> str:
    if not isinstance(t, torch.Tensor):
        return say("a {kind}", kind=type(t).__name__)
    return say("a tensor of shape {shape} starting {values}", shape=tuple(t.shape),
               values=t.detach().cpu().reshape(-1)[:3].tolist())


def optimizer_problem(found: Contents, obj, want: dict, atol: float = 0.0) -> str | None:
    """The optimizer's state_dict is in the file, as the optimizer had it when saved (``want``)."""
    if found.optimizer is None:
        return say(lessons.CKPT_NO_OPTIMIZER_STATE, found=describe_file(obj))
    return optimizer_difference(found.optimizer, want, lessons.CKPT_OPTIMIZER_STATE_DIFFERS, atol)


def optimizer_difference(got: Mapping, want: dict, template: str, atol: float = 0.0, **values) -> str | None:
    states = got.get("state") if isinstance(got, Mapping) else None
    if not isinstance(states, Mapping) or sorted(states) != sorted(want["state"]):
        shown = sorted(states) if isinstance(states, Mapping) else type(states).__name__
        return say(template, what=say("its 'state' is for the parameters {got}; the optimizer had state for {want}",
                                      got=shown, want=sorted(want["state"])), **values)
    for index, entries in want["state"].items():
        for name, value in entries.items():
            mine = states[index].get(name) if isinstance(states[index], Mapping) else None
            equal = (same(mine, value, atol) if isinstance(mine, torch.Tensor) and isinstance(
                value, torch.Tensor) and mine.shape == value.shape else mine == value)
            if not equal:
                return say(template, what=say("'state'[{index}][{name}] is {got}; the optimizer's is {want}",
                                              index=index, name=repr(name), got=_tensor(mine), want=_tensor(value)),
                           **values)
    groups = got.get("param_groups")
    lr = [g.get("lr") for g in groups] if isinstance(groups, list) and all(isinstance(g, Mapping) for g in groups) \
        else None
    want_lr = [g["lr"] for g in want["param_groups"]]
    if lr != want_lr:
        return say(template, what=say("the learning rates are {got}; the optimizer's {want}", got=lr, want=want_lr),
                   **values)
    return None


def _kind(entry) -> str:
    if isinstance(entry, torch.Tensor):
        return _("tensors that require grad") if entry.requires_grad else say("tensors ({device})",
                                                                              device=entry.device.type)
    if type(entry).__module__ == "numpy":
        return _("NumPy scalars")
    return say("{kind}s", kind=type(entry).__name__)


def history_problem(found: Contents, obj, history) -> str | None:
    """Each of the four histories is in the file as a list of Python floats (histories without entries aside)."""
    for i, (name, given) in enumerate(zip(HISTORY_NAMES, history)):
        if not len(given):
            continue
        node = found.histories[i]
        if node is None:
            values = [number(v) for v in given]
            return say(lessons.CKPT_NO_HISTORY, name=name, values=values, found=describe_file(obj))
        for index, entry in enumerate(node if not isinstance(node, torch.Tensor) else [node]):
            if type(entry) is not float:
                return _(lessons.CKPT_HISTORY_NOT_FLOATS) + "\n" + say(
                    lessons.CKPT_HISTORY_ENTRY, kind=_kind(entry), name=name, index=index, value=describe(entry),
                    given=describe(given[min(index, len(given) - 1)]))
        for index, (entry, value) in enumerate(zip(node, given)):
            if entry != number(value):
                return say(lessons.CKPT_HISTORY_VALUES, name=name, index=index, got=repr(entry),
                           want=repr(number(value)))
        if not isinstance(node, list):
            return say(lessons.CKPT_NO_HISTORY, name=name, values=[number(v) for v in given],
                       found=say("{found}, and the values in a {kind}, not a list", found=describe_file(obj),
                                 kind=type(node).__name__))
    return None


def history_refused(held: Mapping, history, floats: Mapping, path) -> str | None:
    """The history's lesson for a file that weights_only=True refuses for its NumPy values (``held``: the file as a
    record read it), where the history given held NumPy scalars and the same save of a history of floats reads
    (``floats``: that file as read): its entries were saved as they were given. None otherwise."""
    error = held.get("error")
    name = refused_global(error["type"], error["message"]) if error else None
    given = [v for h in history for v in h if type(v).__module__ == "numpy"]
    if name is None or not name.startswith("numpy") or not given or "file" not in floats:
        return None
    refused = unreadable_problem(error["type"], error["message"], path).partition("\n")[2]
    return "\n".join((_(lessons.CKPT_HISTORY_NOT_FLOATS), say(lessons.CKPT_HISTORY_REFUSED, given=describe(given[0])),
                      refused))


def epoch_problem(found: Contents, obj, epoch) -> str | None:
    if any(type(e) is int for e in found.epochs):
        return None
    if found.epochs:
        return say(lessons.CKPT_EPOCH_NOT_AN_INT, kind=describe(found.epochs[0]))
    if found.named_epochs:   # an epoch there, but another number: say that, not that there is none
        key, value = found.named_epochs[0]
        return say(lessons.CKPT_OTHER_EPOCH, key=repr(key), value=describe(value), epoch=epoch)
    return say(lessons.CKPT_NO_EPOCH, epoch=epoch, found=describe_file(obj))


def file_problem(obj, at_save: dict, optimizer_at_save: dict, epoch, history, parts=("model", "optimizer", "epoch",
                                                                                 "history"), atol: float = 0.0):
    """The first thing the contract's checkpoint holds that this one does not (None: it holds them all), for a run
    whose model's and optimizer's states at save were ``at_save`` and ``optimizer_at_save``."""
    found = contents(obj, at_save.keys(), epoch, history)
    checks = {"model": lambda: state_problem(found, obj, at_save, atol),
              "optimizer": lambda: optimizer_problem(found, obj, optimizer_at_save, atol),
              "epoch": lambda: epoch_problem(found, obj, epoch),
              "history": lambda: history_problem(found, obj, history)}
    return next((p for p in (checks[part]() for part in parts) if p is not None), None)


def moved_problem(got: int, want: int, device, after=None) -> str | None:
    """Saved from ``device``: the model still there (its parameters' devices ``after`` the save), and as many of the
    file's tensors tagged for a device (``got``) as the state_dicts hold there (``want``)."""
    if after is not None and any(torch.device(d).type != torch.device(device).type for d in after):
        return say(lessons.CKPT_MOVED_THE_MODEL, device=device, after=", ".join(after))
    if got >= want:
        return None
    return say(lessons.CKPT_MOVED_BEFORE_SAVING, device=device, device_tensors=got, want=want)
