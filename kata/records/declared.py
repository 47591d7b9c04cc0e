"""What a hand-in's code declares, read from its source text in the grader's process: the optimizers and
loss modules its training builds, and its model's dropout rates.

These are the settings a grade holds the learner to that its numbers can't show: a patched ``Adam.step``
can step with the book's learning rate while the code asks for another, and a property can show the
book's dropout rate over another one. Whatever the graded process reports about itself is its own to
forge, so these are read where it can't answer for them: from the source it handed in, with :mod:`ast`,
never by running it. A call is read by the name it calls (``Adam``, ``optim.Adam``, ``torch.optim.Adam``
or an alias imported for it) and its arguments by value: literals, arithmetic on them, ``float(...)`` and
NumPy's or torch's scalar constructors around them, a name bound once to one of those (in the module or
the function), a parameter's default (the factory ``make_optimizer(params, lr=1e-3)``, with each call of
it), parameter groups written as a list of dicts. Anything else (``args.lr``, ``**kwargs``, a class
chosen at run time, an optimizer built by ``getattr``) is not guessed: the reading says where, the
teacher reviews it, and it costs no point.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from pathlib import Path

from kata.i18n import _, say

__all__ = ["RELATIVE", "Unresolved", "files_of", "read"]

IMPLEMENTATION = ("foreach", "fused", "capturable", "differentiable")   # how a step runs, not what it computes
# Scalar constructors around a literal (np.float64(0.001), torch.tensor(1e-3)): the value as a Python number.
SCALARS = {"float": float, "float16": float, "float32": float, "float64": float, "double": float, "half": float,
           "single": float, "longdouble": float, "int": int, "int32": int, "int64": int, "tensor": None,
           "as_tensor": None, "asarray": None, "array": None}
# torch.nn.functional's dropouts, and where p sits among their positional arguments.
DROPOUT_FUNCTIONS = {f"functional.{name}": 1 for name in ("dropout", "dropout1d", "dropout2d", "dropout3d",
                                                           "alpha_dropout", "feature_alpha_dropout")}
RELATIVE = 1e-6   # a rate read as float32 (np.float32(0.001)) is the book's rate


class Unresolved(Exception):
    """A value the source does not fix."""


@cache
def _torch() -> dict:
    """torch's optimizer, loss and dropout classes by name, each with its settings' names and defaults."""
    import torch
    from torch import nn
    from torch.nn.modules import loss

    def params(cls):
        return [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]

    found = {"optimizers": {}, "losses": set(), "dropouts": {}}
    for name, value in vars(torch.optim).items():
        if isinstance(value, type) and issubclass(value, torch.optim.Optimizer) and value is not torch.optim.Optimizer:
            found["optimizers"][name] = params(value)
    for name, value in vars(nn).items():
        if isinstance(value, type) and issubclass(value, loss._Loss) and not name.startswith("_"):
            found["losses"].add(name)
        if isinstance(value, type) and issubclass(value, nn.modules.dropout._DropoutNd):
            found["dropouts"][name] = params(value)
    return found


# --- one file -------------------------------------------------------------------------------------------------


class _File:
    """One module's syntax tree, with what resolving a name in it needs."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.tree = ast.parse(text, filename=name)
        self.parents: dict[ast.AST, ast.AST] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)

    def where(self, node: ast.AST) -> str:
        return say("{file} line {line}", file=self.name, line=getattr(node, "lineno", "?"))

    def function_of(self, node: ast.AST):
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _parameters(function) -> set[str]:
    args = function.args
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}


def _assignments(scope: ast.AST) -> list[ast.AST]:
    """Every target that binds a name in ``scope``."""
    found = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            found += node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr,
                               ast.comprehension)):
            found.append(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            found.append(node.optional_vars)
    return found


def _bound_in(scope: ast.AST) -> set[str]:
    return {name for target in _assignments(scope) for name in _names(target)}


def _callee(call: ast.Call) -> str:
    """The last name a call calls: ``Adam`` of ``torch.optim.Adam(...)``, ``A`` of ``A(...)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _aliases(files: list[_File]) -> dict[str, str]:
    """What each name an import binds stands for: ``A`` -> ``torch.optim.Adam``, ``F`` -> ``torch.nn.functional``."""
    found = {}
    for f in files:
        for node in ast.walk(f.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str:
    """``torch.nn.functional`` for ``F`` (imported as that) or for ``torch.nn.functional`` itself."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value, aliases)}.{node.attr}"
    return ""


class _Reader:
    def __init__(self, files: list[_File]):
        self.files = files
        self.aliases = _aliases(files)
        self.depth = 0

    def name(self, call: ast.Call) -> str:
        """The class or function a call names, as torch names it (``Adam`` for ``A`` imported as
        ``from torch.optim import Adam as A``); a function of torch.nn.functional as ``functional.NAME``."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.aliases.get(func.id, func.id).rsplit(".", 1)[-1]
        if isinstance(func, ast.Attribute):
            base = _dotted(func.value, self.aliases)
            return f"functional.{func.attr}" if base.endswith("functional") or base == "torch" else func.attr
        return ""

    # --- values ---

    def value(self, node: ast.AST, f: _File):
        self.depth += 1
        try:
            if self.depth > 20:
                raise Unresolved(_("a value built too deep to read"))
            return self._value(node, f)
        finally:
            self.depth -= 1

    def _value(self, node: ast.AST, f: _File):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str, type(None))):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value(node.operand, f)
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            a, b = self.value(node.left, f), self.value(node.right, f)
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)) or \
                    (isinstance(node.op, ast.Pow) and abs(b) > 64):
                raise Unresolved(_("arithmetic the reading does not do"))
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.Pow: a ** b}.get(type(node.op)) \
                if not isinstance(node.op, ast.Div) else a / b
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.value(e, f) for e in node.elts)
        if isinstance(node, ast.Call) and _callee(node) in SCALARS and len(node.args) == 1 and \
                all(k.arg == "dtype" for k in node.keywords):
            v, make = self.value(node.args[0], f), SCALARS[_callee(node)]
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise Unresolved(say("{code} is known only when it runs", code=ast.unparse(node)[:60]))
            if _callee(node) in ("float32", "single"):
                import numpy as np

                return float(np.float32(v))
            return make(v) if make else v
        if isinstance(node, ast.Name):
            return self.name_value(node, f)
        raise Unresolved(say("{code} is known only when it runs", code=ast.unparse(node)[:60]))

    def name_value(self, node: ast.Name, f: _File):
        values = [self.value(origin, g) for origin, g in self.origins(node, f)]
        distinct = list({repr(v): v for v in values}.values())
        return distinct[0] if len(distinct) == 1 else ("one of", *distinct)

    def origins(self, node: ast.Name, f: _File) -> list[tuple[ast.AST, _File]]:
        """The expressions a name read at ``node`` may stand for: its one binding in the function, else in the
        module; a parameter's arguments at each call and its default; a loop's items over a literal."""
        scope = f.function_of(node)
        for where in ([scope] if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else []) + [f.tree]:
            if where is not f.tree and node.id in _parameters(where):
                return self.parameter(where, node.id, f)
            bound = self.bound_once(where, node.id)
            if bound is not None:
                return [(bound, f)]
            looped = self.loop_items(where, node.id)
            if looped:
                return [(item, f) for item in looped]
            if where is not f.tree and node.id in _bound_in(where):
                break
        raise Unresolved(say("{name} is not bound once to a value the source fixes", name=node.id))

    @staticmethod
    def loop_items(scope: ast.AST, name: str) -> list[ast.AST]:
        """What ``name`` takes in the one loop that binds it, over a literal list or tuple (of tuples, where the
        loop unpacks them): ``for c_in, c_out, p in ((3, 32, 0.5), ...)``; [] for anything else."""
        loops = [n for n in ast.walk(scope) if isinstance(n, ast.For) and name in _names(n.target)]
        if len(loops) != 1 or not isinstance(loops[0].iter, (ast.List, ast.Tuple)) or \
                sum(name in _names(t) for t in _assignments(scope)) != 1:
            return []
        target, items = loops[0].target, loops[0].iter.elts
        if isinstance(target, ast.Name):
            return list(items)
        index = next((i for i, t in enumerate(getattr(target, "elts", [])) if isinstance(t, ast.Name)
                      and t.id == name), None)
        if index is None or not all(isinstance(i, (ast.Tuple, ast.List)) and len(i.elts) == len(target.elts)
                                    for i in items):
            return []
        return [i.elts[index] for i in items]

    @staticmethod
    def bound_once(scope: ast.AST, name: str):
        """The one expression ``name`` is assigned in ``scope`` (anywhere in it, nested functions included: for a
        module, nothing may rebind it), or None: bound more than once, or otherwise than by ``name = value``."""
        found = []
        for node in ast.walk(scope):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id == name:
                    found.append(node.value)
                elif any(name in _names(t) for t in targets):
                    found.append(None)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr, ast.comprehension)):
                if name in _names(node.target):
                    found.append(None)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                if name in _names(node.optional_vars):
                    found.append(None)
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                found.append(None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                found.append(None)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name.split(".")[0]) == name for a in node.names):
                found.append(None)
        return found[0] if len(found) == 1 else None

    def parameter(self, function, name: str, f: _File) -> list[tuple[ast.AST, _File]]:
        """What each call of ``function`` in the hand-in passes for its parameter ``name``, and its default where
        a call leaves it out (or none calls it by name)."""
        args = function.args
        names = [a.arg for a in [*args.posonlyargs, *args.args]]
        defaults = dict(zip(names[len(names) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        found, omitted = [], False
        calls = [(c, g) for g in self.files for c in ast.walk(g.tree)
                 if isinstance(c, ast.Call) and _callee(c) == function.name]
        for call, g in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                raise Unresolved(say("{function}(...) is called with * or ** arguments", function=function.name))
            given = {k.arg: k.value for k in call.keywords}
            offset = 1 if names and names[0] in ("self", "cls") and isinstance(call.func, ast.Attribute) else 0
            if name in names and offset <= names.index(name) < len(call.args) + offset:
                given[name] = call.args[names.index(name) - offset]
            if name in given:
                found.append((given[name], g))
            else:
                omitted = True
        if omitted or not calls:
            if name not in defaults:
                raise Unresolved(say("{name}, a parameter of {function} without a default", name=name,
                                     function=function.name))
            found.append((defaults[name], f))
        return found

    # --- calls ---

    def arguments(self, call: ast.Call, params: list, f: _File) -> tuple[dict, list[str]]:
        """{setting: value} of a constructor call (the defaults where not given), and what stayed unread."""
        unread = []
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return {}, [say("{where}: {call} takes * or ** arguments", where=f.where(call), call=_callee(call))]
        given = dict(zip([p.name for p in params], call.args))
        given.update({k.arg: k.value for k in call.keywords})
        settings = {}
        for p in params:
            if p.name == "params":
                continue
            if p.name in given:
                try:
                    settings[p.name] = self.value(given[p.name], f)
                except Unresolved as why:
                    unread.append(say("{where}: {call}'s {name}: {why}", where=f.where(call), call=_callee(call),
                                      name=p.name, why=why))
            elif p.default is not inspect.Parameter.empty and p.kind != p.VAR_KEYWORD:
                settings[p.name] = _plain(p.default)
        return settings, unread

    def groups(self, call: ast.Call, f: _File) -> tuple[list[dict], list[str]]:
        """The parameter groups' own settings (``[{}]``: one group, the call's settings), and what stayed unread."""
        node = next((k.value for k in call.keywords if k.arg == "params"), call.args[0] if call.args else None)
        try:
            return self._groups(node, f, call)
        except Unresolved as why:
            return [{}], [say("{where}: the parameters {code}: {why}", where=f.where(call),
                              code=ast.unparse(node)[:60] if node is not None else "?", why=why)]

    def _groups(self, node, f: _File, call: ast.Call) -> tuple[list[dict], list[str]]:
        self.depth += 1
        try:
            if self.depth > 20 or node is None:
                raise Unresolved(_("not model.parameters() or a list of groups"))
            if isinstance(node, ast.Name):
                found, unread = [], []
                for origin, g in self.origins(node, f):
                    groups, more = self._groups(origin, g, call)
                    found, unread = found + [x for x in groups if x not in found], unread + more
                return found, unread
            if isinstance(node, ast.Call) and _callee(node) in ("parameters", "named_parameters"):
                return [{}], []
            if not isinstance(node, (ast.List, ast.Tuple)):
                raise Unresolved(_("not model.parameters() or a list of groups"))
            found, unread = [], []
            for element in node.elts:
                if not isinstance(element, ast.Dict) or None in element.keys:
                    raise Unresolved(_("a parameter group the reading can't take apart"))
                group = {}
                for key, value in zip(element.keys, element.values):
                    key = key.value if isinstance(key, ast.Constant) else None
                    if key == "params":
                        continue
                    try:
                        group[str(key)] = self.value(value, f)
                    except Unresolved as why:
                        unread.append(say("{where}: a parameter group's {name}: {why}", where=f.where(call),
                                          name=key, why=why))
                found.append(group)
            return found or [{}], unread
        finally:
            self.depth -= 1


def _plain(value):
    """A default as JSON: numbers, strings, tuples as lists."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def _json(value):
    return [_json(v) for v in value] if isinstance(value, tuple) else value


def files_of(folder: Path) -> dict[str, str]:
    """A folder's Python files as text, as the grader takes a hand-in's (kata/grading/intake.py)."""
    return {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(Path(folder).glob("*.py"))}


def read(files: dict[str, str], module: str) -> dict:
    """What ``module`` (and the hand-in's helper modules beside it) declares: each optimizer (its class and
    each parameter group's settings), each loss module's class, each dropout rate; and what could not be read
    (``unresolved``, for the teacher's review)."""
    from kata import curriculum

    exercises = set(curriculum.names())
    parsed = []
    for name, text in sorted(files.items()):
        if name == f"{module}.py" or name.removesuffix(".py") not in exercises:
            try:
                parsed.append(_File(name, text))
            except (SyntaxError, ValueError):
                continue   # a module that does not parse fails its checks; its helpers are read as they are
    torch, reader = _torch(), _Reader(parsed)
    found = {"optimizers": [], "losses": [], "dropouts": [], "unresolved": []}
    for f in parsed:
        for call in (n for n in ast.walk(f.tree) if isinstance(n, ast.Call)):
            name = reader.name(call)
            if name in torch["optimizers"]:
                settings, unread = reader.arguments(call, torch["optimizers"][name], f)
                groups, unread_groups = reader.groups(call, f)
                found["optimizers"].append({"class": name, "where": f.where(call), "groups": [
                    {k: _json(v) for k, v in {**settings, **g}.items() if k not in IMPLEMENTATION} for g in groups]})
                found["unresolved"] += unread + unread_groups
            elif name in torch["losses"]:
                found["losses"].append({"class": name, "where": f.where(call)})
            elif name in torch["dropouts"] or name in DROPOUT_FUNCTIONS:
                p = next((k.value for k in call.keywords if k.arg == "p"), None)
                index = DROPOUT_FUNCTIONS.get(name, 0)
                p = p if p is not None or len(call.args) <= index else call.args[index]
                try:
                    rate = reader.value(p, f) if p is not None else 0.5
                except Unresolved as why:
                    found["unresolved"].append(say("{where}: {call}'s p: {why}", where=f.where(call), call=name,
                                                   why=why))
                    continue
                found["dropouts"].append({"p": _json(rate), "where": f.where(call)})
    return found
