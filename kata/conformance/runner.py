"""Run the conformance table (``table.toml``) on one device and compare each outcome with CUDA's.

:func:`load` reads the table into :class:`Behaviour` rows; :func:`run` tries each on a device
(``"cuda"``, ``"mps"`` or ``"sim"``, the simulated accelerator) and returns an :class:`Outcome`
per row: ``holds`` (as on CUDA), ``refused`` (a row the table marks as one the simulator cannot
match, and it refused loudly, as marked), ``differs`` (anything else: a silent difference), or
``not run`` (with why: MPS can't count syncs, say).  :func:`summary` says it in one line:
``148/148 behaviours as on CUDA``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from kata.i18n import N_, _, say

__all__ = ["STATUSES", "TABLE", "Behaviour", "NotRunnable", "Outcome", "device_for", "load", "run", "run_one",
           "summary"]

TABLE = Path(__file__).with_name("table.toml")
_EXPECTATIONS = ("value", "raises", "syncs")
# An outcome's status: a token in the JSON, shown as _(status).
STATUSES = (N_("holds"), N_("refused"), N_("differs"), N_("not run"))


@dataclass(frozen=True)
class Behaviour:
    """One row of the table: what is tried, what CUDA does, and where that is written down."""

    id: str
    category: str
    behaviour: str
    cuda: str
    source: str
    code: str
    setup: str = ""
    expect: dict = field(default_factory=dict)  # {"value": ...} | {"raises": ..., "match": ...} | {"syncs": ...}
    simulator: dict | None = None  # {"raises", "match", "why"}: how the simulator refuses what it can't do

    @property
    def kind(self) -> str:
        return next(k for k in _EXPECTATIONS if k in self.expect)


@dataclass(frozen=True)
class Outcome:
    id: str
    status: str  # one of STATUSES: "holds" | "refused" | "differs" | "not run"
    got: str = ""  # what happened, in words (for "differs", "refused" and "not run"), in the kata's language
    syncs: int | None = None  # the syncs counted, for a syncs row

    def as_dict(self) -> dict:
        return {"id": self.id, "status": self.status, "got": self.got, "syncs": self.syncs}


class NotRunnable(Exception):
    """A row this device can't try (the message says why)."""


def load(path: Path = TABLE) -> list[Behaviour]:
    """The table's rows, checked: each has every field and exactly one expectation."""
    rows = []
    seen = set()
    with open(path, "rb") as f:
        table = tomllib.load(f)
    for raw in table["behaviour"]:
        raw = dict(raw)
        expect = {key: raw.pop(key) for key in ("value", "raises", "match", "syncs") if key in raw}
        kinds = [k for k in _EXPECTATIONS if k in expect]
        if len(kinds) != 1:
            raise ValueError(f"{path.name}: behaviour {raw.get('id')!r} needs exactly one of value, raises, syncs; "
                             f"it has {kinds or 'none'}")
        row = Behaviour(expect=expect, **raw)
        if row.id in seen:
            raise ValueError(f"{path.name}: behaviour id {row.id!r} appears twice")
        seen.add(row.id)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- running a row

def device_for(kind: str):
    """A context manager yielding the torch.device for "cuda", "mps" or "sim" (installed, available)."""
    import torch

    if kind == "sim":
        from kata import sim

        return sim.active()
    return contextlib.nullcontext(torch.device(kind, 0))


class _SyncCount:
    """Counts the syncs in a block: CUDA's sync debug mode, or the simulator's counter."""

    def __init__(self, dev):
        self.dev, self.total = dev, None

    @contextlib.contextmanager
    def counting(self):

        from kata import sim

        if self.dev.type == "cuda" or sim.is_sim(self.dev):
            with (sim.count_cuda_syncs() if self.dev.type == "cuda" else sim.count_syncs()) as syncs:
                yield
            self.total = syncs.total
        else:
            raise NotRunnable(say("syncs can't be counted on {type}: only CUDA's sync debug mode and the simulator "
                                  "count them", type=self.dev.type))


def _execute(source: str, namespace: dict):
    """Run `source`; the value of its last line if that is an expression, else None."""
    tree = ast.parse(textwrap.dedent(source))
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        exec(compile(ast.Module(tree.body[:-1], type_ignores=[]), "<behaviour>", "exec"), namespace)
        return eval(compile(ast.Expression(last.value), "<behaviour>", "eval"), namespace)
    exec(compile(tree, "<behaviour>", "exec"), namespace)
    return None


_ELSEWHERE = r"""
import json, sys, torch
for line in sys.stdin:
    path, map_location = json.loads(line)
    try:
        w = torch.load(path, **({"map_location": map_location} if map_location else {}))["w"]
        answer = {"value": [w.device.type, w.tolist()]}
    except Exception as err:
        answer = {"error": type(err).__name__, "message": str(err)}
    print(json.dumps(answer), flush=True)
"""


class _Elsewhere:
    """``load_elsewhere(path, map_location=None)``: ``torch.load(path)["w"]`` in a fresh interpreter
    that has no accelerator (CUDA hidden, the simulator never installed): ``[device type, values]``,
    or the exception it raised, raised here.  One interpreter, started on first use, serves a run."""

    def __init__(self, dev):
        self.dev, self.proc, self.errors = dev, None, None

    def __call__(self, path, map_location=None):
        if self.dev.type == "mps":
            raise NotRunnable(_("MPS can't be hidden from a fresh process"))
        if self.proc is None:
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
            self.errors = tempfile.TemporaryFile(mode="w+")  # (a pipe nobody reads could fill and block it)
            self.proc = subprocess.Popen([sys.executable, "-c", _ELSEWHERE], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.errors, text=True, env=env)
        try:
            self.proc.stdin.write(json.dumps([str(path), None if map_location is None else str(map_location)]) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.errors.seek(0)
            raise NotRunnable(say("the fresh process ended (exit {code}): {errors}", code=self.proc.wait(),
                                  errors=self.errors.read()[-300:]))
        answer = json.loads(line)
        if "error" in answer:
            raise getattr(builtins, answer["error"], RuntimeError)(answer["message"])
        return answer["value"]

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
            self.errors.close()
            self.proc = None


def _namespace(dev, tmp: Path, elsewhere: _Elsewhere) -> dict:
    import numpy as np
    import torch
    from torch import nn
    from torch.nn import functional as F
    from torch.utils.data import DataLoader, TensorDataset

    try:
        from matplotlib.figure import Figure
    except ImportError:
        def Figure(*args, **kwargs):  # stands in for the class
            raise NotRunnable(_("matplotlib is not installed"))
    module = torch.get_device_module(dev)
    return {"torch": torch, "nn": nn, "F": F, "np": np, "io": io, "copy": copy, "Figure": Figure,
            "DataLoader": DataLoader, "TensorDataset": TensorDataset, "dev": dev, "tmp": tmp,
            "sync": lambda: module.synchronize(), "load_elsewhere": elsewhere}   # looked up as a learner's call is


def _plain(value):
    """Tuples as lists, all the way down (TOML has only arrays)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _pattern(match: str, dev) -> str:
    return match.replace("{device}", re.escape(str(dev))).replace("{type}", re.escape(dev.type))


def _raised(expected: dict, dev, err: BaseException | None) -> bool:
    if err is None or not isinstance(err, getattr(builtins, expected["raises"])):
        return False
    return "match" not in expected or re.search(_pattern(expected["match"], dev), str(err)) is not None


def _describe(result, err: BaseException | None) -> str:
    if err is not None:  # PyTorch's words, as it raised them
        return say("raised {error}: {message}", error=type(err).__name__,
                   message=str(err).splitlines()[0] if str(err) else "")[:300]
    return say("gave {result!r}", result=result)[:300]


def _try(row: Behaviour, dev, elsewhere) -> tuple[object, BaseException | None, int | None]:
    """Run a row: (its result, the exception it raised, the syncs counted)."""
    import torch

    with tempfile.TemporaryDirectory(prefix="kata-conformance-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        namespace = _namespace(dev, Path(tmp), elsewhere)
        if row.setup:
            _execute(row.setup, namespace)
        if row.kind != "syncs":
            try:
                return _execute(row.code, namespace), None, None
            except NotRunnable:
                raise
            except Exception as err:  # the row's outcome, compared with CUDA's in run_one
                return None, err, None
        count = _SyncCount(dev)
        with count.counting():
            result = _execute(row.code, namespace)
        return result, None, count.total


def run_one(row: Behaviour, dev, simulated: bool, elsewhere: _Elsewhere) -> Outcome:
    """One row's outcome on `dev` (`simulated`: the simulator, so the row's mark applies)."""
    try:
        result, err, syncs = _try(row, dev, elsewhere)
    except NotRunnable as why:
        return Outcome(row.id, "not run", str(why))
    except Exception as err:  # setup failed, or a syncs row raised: a difference
        return Outcome(row.id, "differs", _describe(None, err))
    if simulated and row.simulator:
        status = "refused" if _raised(row.simulator, dev, err) else "differs"
        return Outcome(row.id, status, _describe(result, err))
    if row.kind == "raises":
        holds = _raised(row.expect, dev, err)
    elif err is not None:
        holds = False
    elif row.kind == "value":
        holds = _plain(result) == row.expect["value"]
    else:
        want = row.expect["syncs"]
        holds = syncs > 0 if want is True else syncs == 0 if want is False else syncs == want
        counted = say("{count} sync", count=syncs) if syncs == 1 else say("{count} syncs", count=syncs)
        return Outcome(row.id, "holds" if holds else "differs", counted, syncs)
    return Outcome(row.id, "holds" if holds else "differs", "" if holds else _describe(result, err))


def run(kind: str, rows: list[Behaviour] | None = None) -> list[Outcome]:
    """Every row (or `rows`) on the device of `kind`: "cuda", "mps" or "sim"."""
    rows = load() if rows is None else rows
    with device_for(kind) as dev:
        elsewhere = _Elsewhere(dev)
        try:
            return [run_one(row, dev, kind == "sim", elsewhere) for row in rows]
        finally:
            elsewhere.close()


def summary(outcomes: list[Outcome]) -> str:
    """``146/148 behaviours as on CUDA; 2 refused loudly by the simulator, as the table marks them``."""
    counts = {status: sum(o.status == status for o in outcomes) for status in ("holds", "refused", "differs",
                                                                                  "not run")}
    parts = [say("{holds}/{total} behaviours as on CUDA", holds=counts["holds"], total=len(outcomes))]
    if counts["refused"]:
        parts.append(say("{count} refused loudly by the simulator, as the table marks them", count=counts["refused"]))
    if counts["differs"]:
        parts.append(say("{count} differ", count=counts["differs"]))
    if counts["not run"]:
        parts.append(say("{count} not run", count=counts["not run"]))
    return "; ".join(parts)
