"""What crosses the sandbox's wall: values described as plain JSON, and the one way to compare two of them.

:func:`typed` turns what a contract function returned (numbers, tensors on any
device, NumPy values, lists, tuples, named tuples, dicts, devices) into a JSON
tree that says what each value *is* as well as what it holds: ``{"t": "float",
"v": 0.5}``, ``{"t": "tensor", "device": "cpu", "dtype": "float32", "shape":
[2], "grad": false, "fn": false, "v": {"b64": ...}}``. Tensor values travel as
their raw bytes (base64), read back with :func:`numpy.frombuffer`: data only,
never a pickle, never code. :func:`untyped` makes values of a tree again (tensors
on the device it names, where this process has it), for the checks to read as they
would read the function's own answer; :func:`diff` compares a submission's tree with
the reference's and says where they first differ, in words.
"""

from __future__ import annotations

import base64
import math
import sys
from typing import Any

from kata.i18n import _, say

__all__ = ["MAPPINGS", "Opaque", "Unreadable", "diff", "known_tuple", "tensor_values", "typed", "untyped"]

# A mapping may come back as any dict: the contract welcomes keeping OrderedDict or defaultdict, and
# does not require it (CONTRACT.md, to_device).
MAPPINGS = ("dict", "OrderedDict", "defaultdict")
# The kinds of described value typed() makes (a dict with another "t" is a record's own structure).
_KINDS = frozenset({"NoneType", "bool", "int", "str", "float", "tensor", "device", "numpy", "ndarray", "namedtuple",
                    "list", "tuple", "dict", "other", "deep"})
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
_FLOAT_NAMES = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _float(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _tensor(x, values) -> dict:
    import hashlib

    import torch

    out = {"t": "tensor", "device": str(x.device), "dtype": str(x.dtype).removeprefix("torch."),
           "shape": list(x.shape), "grad": bool(x.requires_grad), "fn": x.grad_fn is not None}
    if values and x.device.type != "meta":
        host = x.detach() if x.device.type == "cpu" else torch.empty(x.shape, dtype=x.dtype).copy_(x.detach())
        if host.dtype in (torch.bfloat16, torch.float16):
            host = host.float()
        raw = host.contiguous().view(-1).numpy().tobytes()
        if values == "digest":
            out["sha"] = hashlib.sha256(raw).hexdigest()
        else:
            out["v"] = {"dtype": str(host.dtype).removeprefix("torch."), "b64": base64.b64encode(raw).decode()}
    return out


def typed(x: Any, values: bool | str = True, depth: int = 0) -> dict:
    """A JSON description of ``x`` (see the module's docstring); ``values=False`` leaves tensors' values out,
    ``values="digest"`` keeps only a SHA-256 of their bytes (for facts compared exactly)."""
    if depth > 40:
        return {"t": "deep"}
    if type(x) in (bool, int, str, type(None)):
        return {"t": type(x).__name__, "v": x}
    if type(x) is float:
        return {"t": "float", "v": _float(x)}
    module = type(x).__module__ or ""
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(x, torch.Tensor):   # its subclasses too (the simulated accelerator's)
            return _tensor(x, values)
        if isinstance(x, torch.device):
            return {"t": "device", "v": str(x)}
    if module.startswith("numpy"):
        import numpy as np

        if isinstance(x, np.generic):
            return {"t": "numpy", "dtype": str(x.dtype), "v": _float(float(x.item())) if x.dtype.kind == "f"
                    else x.item()}
        if isinstance(x, np.ndarray):
            out = {"t": "ndarray", "dtype": str(x.dtype), "shape": list(x.shape)}
            if values is True and str(x.dtype) in _DTYPES:
                out["v"] = {"dtype": str(x.dtype), "b64": base64.b64encode(np.ascontiguousarray(x).tobytes()).decode()}
            return out
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return {"t": "namedtuple", "name": type(x).__name__, "fields": list(type(x)._fields),
                "v": [typed(v, values, depth + 1) for v in x]}
    if isinstance(x, (list, tuple)):
        return {"t": "list" if isinstance(x, list) else "tuple", "exact": type(x) in (list, tuple),
                "v": [typed(v, values, depth + 1) for v in x]}
    if isinstance(x, dict):
        return {"t": "dict", "kind": type(x).__name__, "k": [typed(k, values, depth + 1) for k in x],
                "v": [typed(v, values, depth + 1) for v in x.values()]}
    if isinstance(x, (bool, int, float, str)):   # a subclass of a Python scalar (an IntEnum, say)
        return {"t": "other", "class": type(x).__name__, "v": x if not isinstance(x, float) else _float(x)}
    return {"t": "other", "class": type(x).__name__}


class Unreadable(ValueError):
    """A tree :func:`untyped` can't make a value of (whatever sent it, a check that reads it fails)."""


class Opaque:
    """A value the wire describes but does not carry (an object of another class, an array, a nest too deep)."""

    def __init__(self, kind: str, value=None):
        self.kind, self.value = kind, value

    def __repr__(self) -> str:
        return f"<{self.kind}>" if self.value is None else f"<{self.kind} {self.value!r}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Opaque) and (self.kind, self.value) == (other.kind, other.value)

    __hash__ = None


_TUPLES: dict[tuple, type] = {}
_SUBCLASSES: dict[tuple, type] = {}


def known_tuple(cls: type) -> type:
    """Make named tuples of ``cls``'s name and fields come back as ``cls`` (a check compares types)."""
    _TUPLES[cls.__name__, tuple(cls._fields)] = cls
    return cls


def _named(name, fields) -> type:
    from collections import namedtuple

    if not (isinstance(name, str) and name.isidentifier() and isinstance(fields, list)
            and all(isinstance(f, str) and f.isidentifier() and not f.startswith("_") for f in fields)):
        raise Unreadable("a named tuple whose name or fields are not names")
    key = (name, tuple(fields))
    if key not in _TUPLES:
        _TUPLES[key] = namedtuple(name, fields)
    return _TUPLES[key]


def _subclass(base: type, name) -> type:
    key = (base, str(name))
    if key not in _SUBCLASSES:
        _SUBCLASSES[key] = type(str(name), (base,), {})
    return _SUBCLASSES[key]


def _untensor(node: dict):
    import torch

    dtype = getattr(torch, str(node.get("dtype")), None)
    shape = node.get("shape")
    if not isinstance(dtype, torch.dtype) or not (isinstance(shape, list) and all(
            type(n) is int and n >= 0 for n in shape)) or len(shape) > 16:
        raise Unreadable("a tensor of no known dtype or shape")
    device = torch.device(str(node.get("device")))
    if device.type == "meta":
        t = torch.empty(shape, dtype=dtype, device="meta")
    else:
        values = tensor_values(node)
        if values is None or values.size != math.prod(shape):
            raise Unreadable("a tensor whose values did not come with it")
        t = torch.from_numpy(values.copy().reshape(shape)).to(dtype)
        if device.type != "cpu":
            t = t.to(device)
    if node.get("grad") is True and t.is_floating_point():
        t.requires_grad_()
        if node.get("fn") is True:
            t = t.clone()   # a tensor with autograd history, as the function's was
    return t


def untyped(node, depth: int = 0):
    """The value a tree describes (:func:`typed`'s inverse, as far as data goes); :class:`Unreadable` for a
    tree no :func:`typed` made."""
    if depth > 40 or not isinstance(node, dict):
        raise Unreadable("not a described value")
    t, v = node.get("t"), node.get("v")
    try:
        if t in ("NoneType", "bool", "int", "str"):
            if type(v) is not {"NoneType": type(None), "bool": bool, "int": int, "str": str}[t]:
                raise Unreadable(f"a {t} that is not one")
            return v
        if t == "float":
            return _number(v)
        if t == "tensor":
            return _untensor(node)
        if t == "device":
            import torch

            return torch.device(str(v))
        if t == "numpy":
            import numpy as np

            return np.dtype(str(node.get("dtype"))).type(_number(v) if isinstance(v, str) else v)
        if t in ("list", "tuple", "namedtuple"):
            if not isinstance(v, list):
                raise Unreadable(f"a {t} without items")
            items = [untyped(x, depth + 1) for x in v]
            if t == "namedtuple":
                return _named(node.get("name"), node.get("fields"))(*items)
            base = list if t == "list" else tuple
            return base(items) if node.get("exact", True) else _subclass(base, f"{base.__name__} subclass")(items)
        if t == "dict":
            from collections import OrderedDict, defaultdict

            keys = [untyped(k, depth + 1) for k in node.get("k", [])]
            values = [untyped(x, depth + 1) for x in v]
            if len(keys) != len(values):
                raise Unreadable("a dict whose keys and values differ in number")
            kind = node.get("kind")
            made = {"dict": dict, "OrderedDict": OrderedDict, "defaultdict": lambda: defaultdict(None)}.get(kind)
            out = made() if made else _subclass(dict, kind)()
            out.update(zip(keys, values))
            return out
        if t == "ndarray":
            values = tensor_values(node) if isinstance(node.get("shape"), list) else None
            if values is None or values.size != math.prod(node["shape"]):
                return Opaque("ndarray", node.get("dtype"))
            return values.copy().reshape(node["shape"])
        if t == "other":
            return Opaque(str(node.get("class")), v)
        if t == "deep":
            return Opaque("a nest too deep")
    except Unreadable:
        raise
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        raise Unreadable(f"{t}: {exc}") from None
    raise Unreadable(f"no kind of value the wire describes: {t!r}")


def tensor_values(node: dict):
    """The values of a described tensor, as a NumPy array (None when they were left out)."""
    import numpy as np

    v = node.get("v")
    if not isinstance(v, dict):
        return None
    if v.get("dtype") not in _DTYPES:
        raise ValueError(say("not a tensor dtype the checks read: {dtype}", dtype=repr(v.get("dtype"))))
    dtype = {"bool": np.bool_}.get(v["dtype"], v["dtype"])
    data = np.frombuffer(base64.b64decode(v["b64"]), dtype=dtype)
    return data.reshape(node["shape"]) if data.size == math.prod(node["shape"]) else data


def _number(v) -> float:
    return _FLOAT_NAMES.get(v, v) if isinstance(v, str) else float(v)


def _close(a, b, rel: float, abs_: float) -> bool:
    a, b = _number(a), _number(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def _say(node: dict) -> str:
    """A described value, briefly, as the teacher reads it."""
    t = node.get("t")
    if t == "tensor":
        return say("a {dtype} tensor of shape {shape} on {device}", dtype=node["dtype"], shape=tuple(node["shape"]),
                   device=node["device"])
    if t in ("float", "int", "bool", "str", "NoneType", "device"):
        return repr(node.get("v")) if t != "device" else say("device {device}", device=node["v"])
    if t == "numpy":
        return say("a NumPy {dtype} ({value})", dtype=node["dtype"], value=repr(node["v"]))
    if t in ("list", "tuple", "namedtuple"):
        return say("a {kind} of {n}", kind=node.get("name", t), n=len(node["v"]))
    if t == "dict":
        return say("a {kind} of {n}", kind=node["kind"], n=len(node["v"]))
    if t == "error":
        return say("an error ({error})", error=node.get("v"))
    return say("a {kind}", kind=node.get("class", t))


def _yours(where: str, mine: str, ref: str) -> str:
    return say("{where}: yours is {mine}, the reference's {ref}", where=where, mine=mine, ref=ref)


def _plain_diff(mine, ref, rel: float, abs_: float, path: str) -> str | None:
    """The records' own structure around described values: lists, string-keyed dicts, plain scalars."""
    where = path or _("the record")
    if isinstance(ref, list):
        if not isinstance(mine, list) or len(mine) != len(ref):
            return say("{where}: yours holds {mine}, the reference's {ref} items", where=where, ref=len(ref),
                       mine=len(mine) if isinstance(mine, list) else _("no list"))
        for i, (a, b) in enumerate(zip(mine, ref)):
            found = diff(a, b, rel, abs_, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(ref, dict):
        if not isinstance(mine, dict) or sorted(mine) != sorted(ref):
            return say("{where}: yours does not hold the parts the reference's holds ({parts})", where=where,
                       parts=sorted(ref))
        for key in ref:
            found = diff(mine[key], ref[key], rel, abs_, f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    if isinstance(ref, float) and isinstance(mine, (int, float)) and not isinstance(mine, bool):
        return None if _close(mine, ref, rel, abs_) else _yours(where, repr(mine), repr(ref))
    if type(mine) is not type(ref) or mine != ref:
        return _yours(where, repr(mine), repr(ref))
    return None


def diff(mine: dict, ref: dict, rel: float = 0.0, abs_: float = 0.0, path: str = "") -> str | None:
    """Where ``mine`` first differs from ``ref`` (None: they agree), floats within ``rel``/``abs_``."""
    where = path or _("the value")
    if not (isinstance(ref, dict) and ref.get("t") in _KINDS):
        return _plain_diff(mine, ref, rel, abs_, path)
    if not isinstance(mine, dict):
        return say("{where}: yours is not a described value", where=where)
    tm, tr = mine.get("t"), ref.get("t")
    if tm != tr:
        return _yours(where, _say(mine), _say(ref))
    if tr in ("list", "tuple", "namedtuple"):
        if tr == "namedtuple" and (mine["name"], mine["fields"]) != (ref["name"], ref["fields"]):
            return say("{where}: yours is a {mine}{fields}, the reference's a {ref}", where=where, mine=mine["name"],
                       fields=tuple(mine["fields"]), ref=ref["name"])
        if tr != "namedtuple" and mine.get("exact", True) != ref.get("exact", True):
            return say("{where}: yours is a subclass of {kind}, the reference's a plain {kind}", where=where, kind=tr)
        if len(mine["v"]) != len(ref["v"]):
            return say("{where}: yours holds {mine} items, the reference's {ref}", where=where, mine=len(mine["v"]),
                       ref=len(ref["v"]))
        for i, (a, b) in enumerate(zip(mine["v"], ref["v"])):
            found = diff(a, b, rel, abs_, f"{path}[{i}]")
            if found:
                return found
        return None
    if tr == "dict":
        if ref["kind"] not in MAPPINGS and mine["kind"] != ref["kind"]:
            return say("{where}: yours is a {mine}, the reference's a {ref}", where=where, mine=mine["kind"],
                       ref=ref["kind"])
        if mine["k"] != ref["k"]:
            return say("{where}: yours has the keys {mine}, the reference's {ref}", where=where,
                       mine=[k.get("v") for k in mine["k"]], ref=[k.get("v") for k in ref["k"]])
        for k, a, b in zip(ref["k"], mine["v"], ref["v"]):
            found = diff(a, b, rel, abs_, f"{path}[{k.get('v')!r}]")
            if found:
                return found
        return None
    if tr == "tensor":
        for key in ("device", "dtype", "shape", "grad", "fn"):
            if mine.get(key) != ref.get(key):
                return say("{where}: yours is {mine} (requires grad: {mine_grad}), the reference's {ref} (requires "
                           "grad: {ref_grad})", where=where, mine=_say(mine), mine_grad=mine["grad"], ref=_say(ref),
                           ref_grad=ref["grad"])
        if "sha" in ref:
            return None if mine.get("sha") == ref["sha"] else \
                say("{where}: yours holds other values than the reference's", where=where)
        a, b = tensor_values(mine), tensor_values(ref)
        if (a is None) != (b is None):
            return say("{where}: the values of yours and the reference's could not both be read", where=where)
        if a is not None:
            import numpy as np

            same = (np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rel, atol=abs_, equal_nan=True)
                    if a.dtype.kind == "f" and (rel or abs_) else np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
            if not same:
                return say("{where}: yours holds {mine}..., the reference's {ref}...", where=where,
                           mine=a.ravel()[:6].tolist(), ref=b.ravel()[:6].tolist())
        return None
    if tr == "float" or (tr == "numpy" and isinstance(ref.get("v"), (int, float, str))):
        if tr == "numpy" and mine.get("dtype") != ref.get("dtype"):
            return _yours(where, _say(mine), _say(ref))
        if not _close(mine["v"], ref["v"], rel, abs_):
            return _yours(where, _say(mine), _say(ref))
        return None
    for key in ("v", "class", "dtype", "shape", "kind"):
        if mine.get(key) != ref.get(key):
            return _yours(where, _say(mine), _say(ref))
    return None
