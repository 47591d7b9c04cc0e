"""What crosses the sandbox's wall: values described as plain JSON, and the one way to compare two of them.

:func:`typed` turns what a contract function returned (numbers, tensors on any
device, NumPy values, lists, tuples, named tuples, dicts, devices) into a JSON
tree that says what each value *is* as well as what it holds: ``{"t": "float",
"v": 0.5}``, ``{"t": "tensor", "device": "cpu", "dtype": "float32", "shape":
[2], "grad": false, "fn": false, "v": {"b64": ...}}``. Tensor values travel as
their raw bytes (base64), read back with :func:`numpy.frombuffer`: data only,
never a pickle, never code. :func:`diff` compares a submission's tree with the
reference's and says where they first differ, in words.
"""

from __future__ import annotations

import base64
import math
import sys
from typing import Any

__all__ = ["MAPPINGS", "diff", "tensor_values", "typed"]

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
            return {"t": "ndarray", "dtype": str(x.dtype), "shape": list(x.shape)}
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


def tensor_values(node: dict):
    """The values of a described tensor, as a NumPy array (None when they were left out)."""
    import numpy as np

    v = node.get("v")
    if not isinstance(v, dict):
        return None
    if v.get("dtype") not in _DTYPES:
        raise ValueError(f"not a tensor dtype the audit reads: {v.get('dtype')!r}")
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
        return f"a {node['dtype']} tensor of shape {tuple(node['shape'])} on {node['device']}"
    if t in ("float", "int", "bool", "str", "NoneType", "device"):
        return repr(node.get("v")) if t != "device" else f"device {node['v']}"
    if t == "numpy":
        return f"a NumPy {node['dtype']} ({node['v']!r})"
    if t in ("list", "tuple", "namedtuple"):
        return f"a {node.get('name', t)} of {len(node['v'])}"
    if t == "dict":
        return f"a {node['kind']} of {len(node['v'])}"
    if t == "error":
        return f"an error ({node.get('v')})"
    return f"a {node.get('class', t)}"


def _plain_diff(mine, ref, rel: float, abs_: float, path: str) -> str | None:
    """The records' own structure around described values: lists, string-keyed dicts, plain scalars."""
    where = path or "the record"
    if isinstance(ref, list):
        if not isinstance(mine, list) or len(mine) != len(ref):
            return f"{where}: yours holds {len(mine) if isinstance(mine, list) else 'no list'}, the reference's " \
                   f"{len(ref)} items"
        for i, (a, b) in enumerate(zip(mine, ref)):
            found = diff(a, b, rel, abs_, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(ref, dict):
        if not isinstance(mine, dict) or sorted(mine) != sorted(ref):
            return f"{where}: yours does not hold the parts the reference's holds ({sorted(ref)})"
        for key in ref:
            found = diff(mine[key], ref[key], rel, abs_, f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    if isinstance(ref, float) and isinstance(mine, (int, float)) and not isinstance(mine, bool):
        return None if _close(mine, ref, rel, abs_) else f"{where}: yours is {mine!r}, the reference's {ref!r}"
    if type(mine) is not type(ref) or mine != ref:
        return f"{where}: yours is {mine!r}, the reference's {ref!r}"
    return None


def diff(mine: dict, ref: dict, rel: float = 0.0, abs_: float = 0.0, path: str = "") -> str | None:
    """Where ``mine`` first differs from ``ref`` (None: they agree), floats within ``rel``/``abs_``."""
    where = path or "the value"
    if not (isinstance(ref, dict) and ref.get("t") in _KINDS):
        return _plain_diff(mine, ref, rel, abs_, path)
    if not isinstance(mine, dict):
        return f"{where}: yours is not a described value"
    tm, tr = mine.get("t"), ref.get("t")
    if tm != tr:
        return f"{where}: yours is {_say(mine)}, the reference's {_say(ref)}"
    if tr in ("list", "tuple", "namedtuple"):
        if tr == "namedtuple" and (mine["name"], mine["fields"]) != (ref["name"], ref["fields"]):
            return f"{where}: yours is a {mine['name']}{tuple(mine['fields'])}, the reference's a {ref['name']}"
        if tr != "namedtuple" and mine.get("exact", True) != ref.get("exact", True):
            return f"{where}: yours is a subclass of {tr}, the reference's a plain {tr}"
        if len(mine["v"]) != len(ref["v"]):
            return f"{where}: yours holds {len(mine['v'])} items, the reference's {len(ref['v'])}"
        for i, (a, b) in enumerate(zip(mine["v"], ref["v"])):
            found = diff(a, b, rel, abs_, f"{path}[{i}]")
            if found:
                return found
        return None
    if tr == "dict":
        if ref["kind"] not in MAPPINGS and mine["kind"] != ref["kind"]:
            return f"{where}: yours is a {mine['kind']}, the reference's a {ref['kind']}"
        if mine["k"] != ref["k"]:
            return f"{where}: yours has the keys {[k.get('v') for k in mine['k']]}, the reference's " \
                   f"{[k.get('v') for k in ref['k']]}"
        for k, a, b in zip(ref["k"], mine["v"], ref["v"]):
            found = diff(a, b, rel, abs_, f"{path}[{k.get('v')!r}]")
            if found:
                return found
        return None
    if tr == "tensor":
        for key in ("device", "dtype", "shape", "grad", "fn"):
            if mine.get(key) != ref.get(key):
                return f"{where}: yours is {_say(mine)} (requires grad: {mine['grad']}), the reference's " \
                       f"{_say(ref)} (requires grad: {ref['grad']})"
        if "sha" in ref:
            return None if mine.get("sha") == ref["sha"] else f"{where}: yours holds other values than the reference's"
        a, b = tensor_values(mine), tensor_values(ref)
        if (a is None) != (b is None):
            return f"{where}: the values of yours and the reference's could not both be read"
        if a is not None:
            import numpy as np

            same = (np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rel, atol=abs_, equal_nan=True)
                    if a.dtype.kind == "f" and (rel or abs_) else np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
            if not same:
                return f"{where}: yours holds {a.ravel()[:6].tolist()}..., the reference's {b.ravel()[:6].tolist()}..."
        return None
    if tr == "float" or (tr == "numpy" and isinstance(ref.get("v"), (int, float, str))):
        if tr == "numpy" and mine.get("dtype") != ref.get("dtype"):
            return f"{where}: yours is {_say(mine)}, the reference's {_say(ref)}"
        if not _close(mine["v"], ref["v"], rel, abs_):
            return f"{where}: yours is {_say(mine)}, the reference's {_say(ref)}"
        return None
    for key in ("v", "class", "dtype", "shape", "kind"):
        if mine.get(key) != ref.get(key):
            return f"{where}: yours is {_say(mine)}, the reference's {_say(ref)}"
    return None
