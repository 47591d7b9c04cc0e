"""What a submission's code declares, read by the audit's own means: the optimizers and losses its ``train``
creates and a model's layers, each with the settings it was built with.

The records run in the submission's process, where torch's classes and functions are the submission's to
replace: a patched ``Adam.step`` (or ``torch.optim.adam.adam``) can step with the book's learning rate while
the code asks for another, and a class-level property can show the book's dropout rate over another one. So
the numbers can't tell what the code declared, and nothing read through torch's methods can either. What is
read here goes around them, with what :func:`install` takes before any submission module is imported
(kata.audit.run_records calls it first): the code objects of torch's own ``Optimizer.__init__`` and
``_Loss.__init__`` (a profile function sees every object they finish building, however the call reached
them), torch's classes by identity (a class's name, or its ``__module__``, is the submission's to choose),
``type`` and the descriptors of instance dictionaries (an attribute's value as torch's own code stored it,
never through a property). Values come out as plain JSON: numbers, strings, lists.

What a lying process can still do: give torch's constructors the book's values (then it declares them, as a
factory function does, and the numbers facets hold it to computing with them), keep the audit from seeing
what it builds (then the audit sees no optimizer, which disagrees), or rewrite the audit's own code in its
process (which means reaching into ``kata.audit`` or the interpreter: kata/grading/vetting.py notes both for
the teacher's review).
"""

from __future__ import annotations

import contextlib
import json
import sys
from builtins import Exception, bool, dict, float, id, int, len, list, reversed, set, str, tuple, type, zip  # noqa: UP029 - Python's own, bound here as they were at the audit's import: a submission may replace builtins' later
from collections.abc import Iterator

from kata.i18n import _, say

__all__ = ["Seen", "capture", "install", "layers", "layers_problem", "losses_problem", "optimizers_problem"]

_MRO = type.__dict__["__mro__"]
_GET, _ITEMS, _VALUES = dict.get, dict.items, dict.values
_HOOKS: dict = {}      # filled once by install()

# Keys of an optimizer's param_groups that choose an implementation, not the arithmetic.
IMPLEMENTATION = ("foreach", "fused", "capturable", "differentiable")


def install() -> None:
    """Take what the readings rest on, from torch as it is now (before any submission is imported)."""
    if _HOOKS:
        return
    import torch
    from torch import nn
    from torch.nn.modules import loss

    names = {}
    for module, base in ((torch.optim, torch.optim.Optimizer), (loss, loss._Loss), (nn, nn.Module)):
        for name, value in _ITEMS(vars(module)):
            if isinstance(value, type) and issubclass(value, base) and not name.startswith("_"):
                names.setdefault(value, name)
    _HOOKS.update(
        names=names, optimizer_init=_code(torch.optim.Optimizer.__init__), loss_init=_code(loss._Loss.__init__),
        optimizer_dict=vars(torch.optim.Optimizer)["__dict__"], module_dict=vars(nn.Module)["__dict__"],
        shape=vars(torch._C.TensorBase)["shape"], tensor=torch.Tensor, parameter=nn.Parameter,
        classes={n: c for c, n in _ITEMS(names)}, setprofile=sys.setprofile, getprofile=sys.getprofile)


def _code(function):
    """The code of ``function`` itself, under any decorator that says what it wraps."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    return function.__code__


def _torch_class(obj) -> str:
    """The most derived of torch's own classes ``obj`` is an instance of ("other" for none)."""
    names = _HOOKS["names"]
    for cls in _MRO.__get__(type(obj)):
        if cls in names:
            return names[cls]
    return "other"


def _is(obj, name: str) -> bool:
    return _HOOKS["classes"].get(name) in _MRO.__get__(type(obj))


def _fields(obj, descriptor: str) -> dict:
    """``obj``'s instance dictionary, as torch's code wrote it ({} where it has none the audit can read)."""
    try:
        found = _HOOKS[descriptor].__get__(obj)
    except (TypeError, AttributeError):
        return {}
    return found if type(found) is dict else {}


def _plain(value, depth: int = 0):
    """A stored value as JSON: Python scalars as they are, tuples and lists as lists, anything else by its kind."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind in (tuple, list) and depth < 3:
        return [_plain(v, depth + 1) for v in value]
    return {"kind": _torch_class(value) if _is(value, "Module") else kind.__name__}


def _number(value):
    return float(value) if type(value) is int else value


class Seen:
    """What one call built: each optimizer's class and param_groups, and each loss module's class."""

    def __init__(self):
        self.optimizers: list[dict] = []
        self.losses: list[str] = []

    def _optimizer(self, obj) -> None:
        groups = _GET(_fields(obj, "optimizer_dict"), "param_groups")
        found = []
        for group in groups if type(groups) is list else ():
            if type(group) is not dict:
                continue
            params = _GET(group, "params")
            shapes = [list(_HOOKS["shape"].__get__(p)) if _is_tensor(p) else None
                      for p in (params if type(params) is list else ())]
            settings = {k: _number(_plain(v)) for k, v in _ITEMS(group) if k != "params" and type(k) is str}
            found.append({"settings": settings, "shapes": shapes})
        self.optimizers.append({"class": _torch_class(obj), "groups": found if type(groups) is list else None})

    def profile(self, frame, event, arg) -> None:
        if event != "return":
            return
        code = frame.f_code
        if code is _HOOKS["optimizer_init"] or code is _HOOKS["loss_init"]:
            try:
                obj = _GET(frame.f_locals, "self")
                if code is _HOOKS["optimizer_init"]:
                    self._optimizer(obj)
                else:
                    self.losses.append(_torch_class(obj))
            except Exception:  # noqa: BLE001 - an object the audit can't read is recorded as such
                self.optimizers.append({"class": "unreadable", "groups": None})

    def data(self) -> dict:
        return {"optimizers": self.optimizers, "losses": self.losses}


def _is_tensor(value) -> bool:
    return _HOOKS["tensor"] in _MRO.__get__(type(value))


@contextlib.contextmanager
def capture() -> Iterator[Seen]:
    """While the block runs (in this thread), every optimizer and loss module torch's own constructors build."""
    install()
    seen, previous = Seen(), _HOOKS["getprofile"]()
    _HOOKS["setprofile"](seen.profile)
    try:
        yield seen
    finally:
        _HOOKS["setprofile"](previous)


# --- a model's layers ---------------------------------------------------------------------------------------


def _pair(value):
    return [value, value] if type(value) is int else _plain(value)


def _padding(fields: dict):
    """A convolution's padding as numbers (the checks' padding_of: 'same' for an odd kernel is its half)."""
    padding = _GET(fields, "padding")
    if padding == "valid":
        return [0, 0]
    if padding == "same":
        kernel, dilation = _pair(_GET(fields, "kernel_size")), _pair(_GET(fields, "dilation"))
        return [d * (k - 1) // 2 if (d * (k - 1)) % 2 == 0 else -1 for k, d in zip(kernel, dilation)]
    return _pair(padding)


def _is_dict(value) -> bool:
    return dict in _MRO.__get__(type(value))


def _settings(layer, fields: dict) -> dict:
    """The settings tests/test_model.py's describe() shows, from the layer's own dictionary."""
    get = lambda key: _plain(_GET(fields, key))  # noqa: E731 - a short reader, used only here
    parameters = _GET(fields, "_parameters")
    bias = _is_dict(parameters) and _GET(parameters, "bias") is not None
    if _is(layer, "Conv2d"):
        return {"in": get("in_channels"), "out": get("out_channels"), "kernel_size": _pair(_GET(fields, "kernel_size")),
                "stride": _pair(_GET(fields, "stride")), "padding": _padding(fields),
                "dilation": _pair(_GET(fields, "dilation")), "groups": get("groups"),
                "padding_mode": get("padding_mode"), "bias": bias}
    if _is(layer, "MaxPool2d") or _is(layer, "AvgPool2d"):
        kernel = _GET(fields, "kernel_size")
        return {"kernel_size": _pair(kernel), "stride": _pair(_GET(fields, "stride") or kernel),
                "padding": _pair(_GET(fields, "padding"))}
    if _is(layer, "Dropout"):
        return {"p": _number(get("p"))}
    if _is(layer, "Linear"):
        return {"in": get("in_features"), "out": get("out_features"), "bias": bias}
    if _is(layer, "Flatten"):
        return {"start_dim": get("start_dim"), "end_dim": get("end_dim")}
    return {}


def layers(net) -> list:
    """The leaf layers in the order ``net.modules()`` gives them (each once), walked through the modules' own
    ``_modules`` dictionaries: [torch's class, its settings] each."""
    install()
    found, memo, todo = [], set(), [net]
    while todo:
        module = todo.pop()
        if id(module) in memo:
            continue
        memo.add(id(module))
        fields = _fields(module, "module_dict")
        children = _GET(fields, "_modules")
        children = [c for c in (_VALUES(children) if _is_dict(children) else ()) if c is not None]
        if not children:
            found.append([_torch_class(module), _settings(module, fields)])
        todo.extend(reversed(children))
    return found


# --- how the readings are compared ---------------------------------------------------------------------------


def _shown(name: str, settings: dict) -> str:
    """A layer as the checks' describe() writes it; ``?`` for a setting it does not hold as its own."""
    return f"{name}({', '.join(k + '=' + ('?' if v is None else json.dumps(v)) for k, v in settings.items())})"


def layers_problem(mine: list, ref: list) -> str | None:
    for i, (a, b) in enumerate(zip(mine, ref)):
        if a != b:
            shown = say("layer {index} is declared {mine}, the reference's {ref}", index=i, mine=_shown(*a),
                        ref=_shown(*b))
            missing = None in a[1].values()
            return shown + (" " + _("(?: a setting the layer does not hold as its own attribute)") if missing else "")
    if len(mine) != len(ref):
        return say("the model declares {mine} leaf layers, the reference's {ref}", mine=len(mine), ref=len(ref))
    return None


def _groups(optimizer: dict) -> list:
    """An optimizer's param_groups as what they do: the settings (implementation choices left out), each with
    the shapes of the parameters it holds, however they were split into groups."""
    merged: dict[str, list] = {}
    for group in optimizer.get("groups") or []:
        settings = {k: v for k, v in group["settings"].items() if k not in IMPLEMENTATION}
        merged.setdefault(json.dumps(settings, sort_keys=True), []).extend(group["shapes"])
    return [[json.loads(k), sorted(v, key=json.dumps)] for k, v in sorted(merged.items())]


def optimizers_problem(mine: dict, ref: dict) -> str | None:
    """Where an optimizer ``train`` built differs from the reference's one, in words (None: each agrees)."""
    got, want = mine["optimizers"], ref["optimizers"]
    if not want:
        return None
    if not got:
        return _("train builds no optimizer that torch's Optimizer makes")
    b = want[0]
    for a in got:   # each one it builds (how many is for the numbers to tell) is the reference's
        if a["groups"] is None and b["groups"] is not None:
            return say("train's {optimizer} holds no param_groups of its own (torch's Optimizer keeps them as an "
                       "attribute of the object)", optimizer=a["class"])
        if a["class"] != b["class"]:
            return say("train builds its optimizer as torch's {mine}, the reference as {ref}", mine=a["class"],
                       ref=b["class"])
        ga, gb = _groups(a), _groups(b)
        for (sa, shapes_a), (sb, shapes_b) in zip(ga, gb):
            for key in sorted(set(sa) | set(sb)):
                if sa.get(key) != sb.get(key):
                    return say("train builds {optimizer} with {key}={mine}, the reference with {key}={ref}",
                               optimizer=a["class"], key=key, mine=json.dumps(sa.get(key)), ref=json.dumps(sb.get(key)))
            if shapes_a != shapes_b:
                return say("train's {optimizer} holds parameters of shapes {mine}, the reference's {ref}",
                           optimizer=a["class"], mine=shapes_a, ref=shapes_b)
        if len(ga) != len(gb):
            return say("train's {optimizer} has {mine} kinds of parameter group, the reference's {ref}",
                       optimizer=a["class"], mine=len(ga), ref=len(gb))
    return None


def losses_problem(mine: dict, ref: dict) -> str | None:
    """A loss module ``train`` built of a class the reference never builds (a loss written as a function,
    nn.functional.binary_cross_entropy, builds none, and agrees)."""
    other = sorted(set(mine["losses"]) - set(ref["losses"]))
    if other:
        return say("train builds the loss {mine}, the reference {ref}", mine=", ".join(other),
                   ref=", ".join(sorted(set(ref["losses"]))) or _("none"))
    return None
