"""Static vetting: a submission's source, read by the grader before any of it runs.

The checks run a submission's code in the same interpreter as themselves, so
the grade must not rest on that code behaving. These exercises need little:
torch, torchvision, numpy, matplotlib (and PIL under them), a few modules of
the standard library (math, collections, typing, functools, itertools,
numbers, dataclasses, copy, time, random, ...), ``kata.celeba``, and each
other (``from .devices import to_python``). Whatever an ordinary solution
writes with those passes; what reaches past them is a :class:`Finding` (file,
line, construct, why), and the grader flags the submission for review:

* imports outside that list (``os``, ``sys``, ``subprocess``, ``ctypes``,
  ``importlib``, ``pytest``, ``kata.checks``, ...), and the parts of the
  allowed libraries that load or run code or change them for everyone
  (``torch.load``, ``torch.hub``, ``torch.library``, ``torch.overrides``,
  global module hooks, ``numpy.load``, ...);
* the ways around that list: the builtins ``open``, ``exec``, ``eval``,
  ``compile``, ``__import__``, ``globals``, ``vars``, ``breakpoint``;
  ``getattr`` with a computed name; ``setattr``/``delattr`` on a library's
  objects; three-argument ``type``; metaclasses; a module used as a value;
* introspection: dunder attributes (``__defaults__``, ``__globals__``,
  ``__subclasses__``, ...) beyond the few ordinary code reads (``__init__``,
  ``__name__``, ...), frame and traceback attributes, private attributes of a
  library's objects (``torch._C``);
* changing what the checks compare with: assigning or deleting an attribute of
  a library (``torch.allclose = ...``), and classes that decide how they
  compare, hash, convert or look up attributes (``__eq__``, ``__bool__``,
  ``__torch_function__``, ``__getattr__``, ...).

Names follow Python's scoping: ``def forward(self, input)`` uses a parameter,
not the builtin ``input``. A module that is not valid Python is not vetted: it
fails to import, and none of it runs. Static vetting of Python can't be
complete; it is the first of three layers (kata/grading/__init__.py): what it
misses meets the tripwire in the test process (kata/grading/tripwire.py) and
the sandbox around it.
"""

from __future__ import annotations

import ast
import importlib.machinery
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from kata.grading.rules import (
    ALLOWED_MODULES,
    CHECKED_BUILTINS,
    DENIED_BUILTINS,
    DUNDER_DEFINES,
    DUNDER_NAMES,
    DUNDER_READS,
    FILE_ATTRIBUTES,
    KATA_ALLOWED,
    NAMEDTUPLE_API,
    SHOWN_MODULES,
    SYSTEM_MODULES,
)
from kata.grading.rules import denied_attribute as _denied_attribute
from kata.grading.rules import denied_path as _denied_path
from kata.grading.rules import reads_files as _reads_files
from kata.grading.rules import under as _under

__all__ = ["Finding", "vet_folder", "vet_source"]

_DUNDER = re.compile(r"^__\w+__$")
_FORMAT_FIELD_DUNDER = re.compile(r"\{[^{}]*?(__\w+?__)[^{}]*\}")   # "{0.__globals__}".format(f)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)

INSIDES = "the interpreter's insides: an ordinary solution doesn't need them"
LIBRARY_CHANGE = "changes a library's object, which the checks use too"
LOADS_CODE = "this part of the library loads or runs code, or changes it for everyone"
READS_FILES = "reads files: the exercises get their data from their arguments and kata.celeba"


@dataclass(frozen=True)
class Finding:
    """One construct that reaches past what the exercises need."""

    file: str       # "exercises/data.py"
    line: int
    construct: str  # "import os", "torch.allclose = ...", ".__defaults__"
    why: str

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.construct} ({self.why})"


@dataclass
class _Scope:
    node: ast.AST
    bound: set[str] = field(default_factory=set)
    imports: dict[str, str] = field(default_factory=dict)   # name -> dotted path imported
    declared_global: set[str] = field(default_factory=set)

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ['a', 'b', 'c'] when the expression is a plain attribute chain on a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


@cache
def _is_module(path: str) -> bool:
    """Whether ``path`` (``torch.nn``) names a module, found without importing anything."""
    parts = path.split(".")
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0])
        for part in parts[1:]:
            if spec is None or not spec.submodule_search_locations:
                return False
            spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
    except (ImportError, ValueError, OSError):
        return False
    return spec is not None


def _bindings(scope: _Scope) -> None:
    """Fill ``scope`` with the names its own code binds (not those of nested scopes)."""
    node = scope.node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                scope.bound.add(arg.arg)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        body = [g.target for g in node.generators]
    elif isinstance(node, ast.Lambda):
        body = [node.body]
    else:
        body = list(node.body)
    stack = list(body)
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.bound.add(item.name)
            stack += [*item.decorator_list, *getattr(item, "bases", []),
                      *[k.value for k in getattr(item, "keywords", [])]]
            if not isinstance(item, ast.ClassDef):
                stack += [d for d in item.args.defaults + item.args.kw_defaults if d is not None]
            continue
        if isinstance(item, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if not isinstance(item, ast.Lambda):
                stack.append(item.generators[0].iter)
            continue
        if isinstance(item, ast.Name) and isinstance(item.ctx, (ast.Store, ast.Del)):
            scope.bound.add(item.id)
        elif isinstance(item, ast.ExceptHandler) and item.name:
            scope.bound.add(item.name)
        elif isinstance(item, (ast.Global, ast.Nonlocal)):
            if isinstance(item, ast.Global):
                scope.declared_global.update(item.names)
        elif isinstance(item, ast.Import):
            for alias in item.names:
                bound = alias.asname or alias.name.split(".")[0]
                scope.bound.add(bound)
                scope.imports[bound] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(item, ast.ImportFrom):
            for alias in item.names:
                if alias.name != "*":
                    bound = alias.asname or alias.name
                    scope.bound.add(bound)
                    if item.level == 0 and item.module:
                        scope.imports[bound] = f"{item.module}.{alias.name}"
        elif isinstance(item, ast.MatchAs | ast.MatchStar) and item.name:
            scope.bound.add(item.name)
        elif isinstance(item, ast.MatchMapping) and item.rest:
            scope.bound.add(item.rest)
        stack += list(ast.iter_child_nodes(item))
    scope.bound -= scope.declared_global


def _split(node: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """A scope's node as (what is evaluated in the enclosing scope, what runs in its own)."""
    if isinstance(node, ast.Module):
        return [], list(node.body)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        outside = [*getattr(node, "decorator_list", []), *a.defaults, *[d for d in a.kw_defaults if d is not None]]
        if not isinstance(node, ast.Lambda):
            outside += [arg.annotation for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                        if arg is not None and arg.annotation is not None]
            outside += [node.returns] if node.returns is not None else []
            return outside, list(node.body)
        return outside, [node.body]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]], list(node.body)
    first, *rest = node.generators
    inside = [first.target, *first.ifs, *rest]
    inside += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    return [first.iter], inside


class _Vetter(ast.NodeVisitor):
    def __init__(self, file: str, siblings: frozenset[str]):
        self.file = file
        self.siblings = siblings
        self.findings: list[Finding] = []
        self.parents: dict[int, ast.AST] = {}
        self.annotations: set[int] = set()
        self.aliases: dict[str, str] = {}   # module-wide: name -> dotted library path (x = torch.testing)
        self.scopes: list[_Scope] = []
        self.scope_of: dict[int, _Scope] = {}

    def flag(self, node: ast.AST, construct: str, why: str) -> None:
        self.findings.append(Finding(self.file, getattr(node, "lineno", 0), construct, why))

    # --- the first pass: scopes, annotations, aliases -------------------------------------

    def prepare(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, (ast.Module, *_SCOPES)):
                scope = _Scope(node)
                _bindings(scope)
                self.scope_of[id(node)] = scope
            annotations = []
            if isinstance(node, ast.arg) and node.annotation is not None:
                annotations.append(node.annotation)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                annotations.append(node.returns)
            elif isinstance(node, ast.AnnAssign):
                annotations.append(node.annotation)
            for annotation in annotations:
                self.annotations.update(id(n) for n in ast.walk(annotation))
        module_scope = self.scope_of[id(tree)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                chain = _dotted(node.value)
                base = chain and self.import_path_anywhere(chain[0], module_scope)
                if base:
                    self.aliases[node.targets[0].id] = ".".join([base, *chain[1:]])

    def import_path_anywhere(self, name: str, module_scope: _Scope) -> str | None:
        if name in module_scope.imports:
            return module_scope.imports[name]
        return next((s.imports[name] for s in self.scope_of.values() if name in s.imports), None)

    def visit(self, node: ast.AST):
        scope = self.scope_of.get(id(node))
        if scope is None:
            return super().visit(node)
        check = getattr(self, f"check_{type(node).__name__}", None)
        if check is not None:
            check(node)
        outside, inside = _split(node)
        for child in outside:          # decorators, defaults, bases: evaluated where the definition is
            self.visit(child)
        self.scopes.append(scope)
        try:
            for child in inside:
                self.visit(child)
        finally:
            self.scopes.pop()
        return None

    # --- what a name stands for --------------------------------------------------------

    def resolve(self, name: str) -> _Scope | None:
        """The scope whose binding ``name`` refers to here (None: a builtin, or undefined)."""
        innermost = True
        for scope in reversed(self.scopes):
            if scope.is_class and not innermost:
                continue
            innermost = False
            if name in scope.declared_global:
                module = self.scopes[0]
                return module if name in module.bound else None
            if name in scope.bound:
                return scope
        return None

    def library(self, name: str) -> str | None:
        """The dotted path ``name`` stands for when it is an imported library name or an alias of one."""
        scope = self.resolve(name)
        if scope is None:
            return None
        if name in scope.imports:
            return scope.imports[name]
        return self.aliases.get(name)

    def library_path(self, node: ast.AST) -> str | None:
        chain = _dotted(node)
        base = chain and self.library(chain[0])
        return ".".join([base, *chain[1:]]) if base else None

    def is_module_name(self, name: str) -> bool:
        scope = self.resolve(name)
        if scope is None or name not in scope.imports:
            return False
        path = scope.imports[name]
        return path.split(".")[0] in ALLOWED_MODULES and _is_module(path)

    # --- imports ------------------------------------------------------------------------

    def check_module(self, node: ast.AST, path: str, construct: str) -> None:
        top = path.split(".")[0]
        if top == "kata":
            if not _under(path, KATA_ALLOWED):
                self.flag(node, construct, "only kata.celeba of the kata is for the exercises; the rest holds "
                                           "the checks and what they compare with")
        elif top not in ALLOWED_MODULES:
            self.flag(node, construct, f"`{top}` is not among the modules these exercises need ({SHOWN_MODULES})")
        elif any(part.startswith("_") for part in path.split(".")[1:]):
            self.flag(node, construct, "a private module of a library")
        elif _denied_path(path) or any(_denied_attribute(p) for p in path.split(".")[1:]):
            self.flag(node, construct, LOADS_CODE)
        elif _reads_files(path):
            self.flag(node, construct, READS_FILES)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_module(node, alias.name, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = ", ".join(a.name for a in node.names)
        if node.level:
            construct = f"from {'.' * node.level}{node.module or ''} import {names}"
            local = [node.module] if node.module else [a.name for a in node.names]
            if node.level != 1 or (node.module and "." in node.module) or not set(local) <= self.siblings:
                self.flag(node, construct, "a relative import may only name another exercise's module")
            return
        module = node.module or ""
        construct = f"from {module} import {names}"
        if module == "kata":
            for alias in node.names:
                self.check_module(node, f"kata.{alias.name}", construct)
            return
        self.check_module(node, module, construct)
        for alias in node.names:
            path = f"{module}.{alias.name}"
            if alias.name == "*":
                continue
            if alias.name.startswith("_") and alias.name not in NAMEDTUPLE_API:
                self.flag(node, construct, f"`{alias.name}` is private to the library")
            elif _denied_path(path) or _denied_attribute(alias.name):
                self.flag(node, construct, f"`{alias.name}`: {LOADS_CODE}, or reaches the system")
            elif _reads_files(path) or alias.name in FILE_ATTRIBUTES:
                self.flag(node, construct, f"`{alias.name}` {READS_FILES}")

    # --- names, attributes and calls ----------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        name, load = node.id, isinstance(node.ctx, ast.Load)
        parent = self.parents.get(id(node))
        builtin = self.resolve(name) is None
        if builtin and (name in DENIED_BUILTINS or (_DUNDER.match(name) and name not in DUNDER_NAMES)):
            self.flag(node, name, "reaches past what the exercises need (files, code, the interpreter's insides)")
        elif builtin and load and name in SYSTEM_MODULES:
            self.flag(node, name, "a module that reaches the system or the interpreter")
        elif builtin and load and name in CHECKED_BUILTINS and id(node) not in self.annotations:
            direct = isinstance(parent, ast.Call) and parent.func is node
            type_check = (name == "type" and isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                          and parent.func.id in ("isinstance", "issubclass") and node in parent.args[1:])
            if not direct and not type_check:
                self.flag(node, name, f"`{name}` used as a value: only a direct call can be checked")
        elif (load and self.is_module_name(name) and id(node) not in self.annotations
              and not (isinstance(parent, ast.Attribute) and parent.value is node)):
            self.flag(node, name, f"uses the module `{self.library(name)}` itself as a value")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        store = isinstance(node.ctx, (ast.Store, ast.Del))
        path = self.library_path(node)
        if _DUNDER.match(attr):
            if store or attr not in DUNDER_READS:
                self.flag(node, f".{attr}", INSIDES)
            elif attr == "__class__" and isinstance(node.value, ast.Attribute) and node.value.attr == "__class__":
                self.flag(node, ".__class__.__class__", INSIDES)
        elif attr.startswith("_") and attr not in NAMEDTUPLE_API:
            root = _root(node.value)
            if not isinstance(root, ast.Name) or self.library(root.id):
                self.flag(node, path or f".{attr}", "a private attribute of a library's object")
        elif _denied_attribute(attr):
            self.flag(node, path or f".{attr}", "reaches the system, the interpreter's insides or a global hook")
        elif path and _denied_path(path):
            self.flag(node, path, LOADS_CODE)
        elif attr in FILE_ATTRIBUTES or (path and _reads_files(path)):
            self.flag(node, path or f".{attr}", READS_FILES)
        if store:
            root = _root(node.value)
            if not isinstance(root, ast.Name) or self.library(root.id):
                what = path or ast.unparse(node)
                construct = f"del {what}" if isinstance(node.ctx, ast.Del) else f"{what} = ..."
                self.flag(node, construct, LIBRARY_CHANGE)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in CHECKED_BUILTINS and self.resolve(func.id) is None:
            self.check_builtin_call(node, func.id)
        elif len(node.args) == 3 or any(k.arg in ("bases", "dict") for k in node.keywords):
            if ((isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type")
                    or (isinstance(func, ast.Attribute) and func.attr == "__class__")):
                self.flag(node, f"{ast.unparse(func)}(name, bases, namespace)", "makes a class at run time")
        self.generic_visit(node)

    def check_builtin_call(self, node: ast.Call, name: str) -> None:
        if name == "type":
            if len(node.args) != 1 or node.keywords:
                self.flag(node, "type(name, bases, namespace)", "makes a class at run time")
            elif isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Name) \
                    and node.args[0].func.id == "type":
                self.flag(node, "type(type(...))", INSIDES)
            return
        if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or not isinstance(node.args[1].value, str):
            self.flag(node, f"{name}(..., <computed name>)", "an attribute whose name is computed can't be vetted")
            return
        attr = node.args[1].value
        if (attr.startswith("_") and attr not in NAMEDTUPLE_API | DUNDER_READS) or _denied_attribute(attr):
            self.flag(node, f"{name}(..., {attr!r})", INSIDES)
        elif name in ("setattr", "delattr"):
            root = _root(node.args[0])
            if not isinstance(root, ast.Name) or self.library(root.id):
                self.flag(node, f"{name}({ast.unparse(node.args[0])}, {attr!r}, ...)", LIBRARY_CHANGE)

    def visit_Constant(self, node: ast.Constant) -> None:
        text = node.value
        if isinstance(text, str) and _DUNDER.match(text) and text != "__main__":
            if text not in DUNDER_READS | DUNDER_NAMES | DUNDER_DEFINES:
                self.flag(node, repr(text), "names the interpreter's insides in a string")
        elif isinstance(text, str):
            for field in _FORMAT_FIELD_DUNDER.finditer(text):
                if field[1] not in DUNDER_READS | DUNDER_NAMES:
                    self.flag(node, repr(field[0]), "a format field that reaches the interpreter's insides")
                    break

    # --- definitions ----------------------------------------------------------------------

    def check_ClassDef(self, node: ast.ClassDef) -> None:
        for keyword in node.keywords:
            if keyword.arg == "metaclass":
                self.flag(node, f"class {node.name}(metaclass=...)", "a metaclass decides how a class behaves")
        for item in node.body:
            names = []
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [item.name]
            elif isinstance(item, ast.Assign):
                names = [t.id for t in item.targets if isinstance(t, ast.Name)]
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names = [item.target.id]
            for name in names:
                if _DUNDER.match(name) and name not in DUNDER_DEFINES:
                    self.flag(item, f"{node.name}.{name}", "decides how its objects compare, convert, hash or "
                                                          "look up attributes, which the checks rely on")

    def check_FunctionDef(self, node: ast.FunctionDef) -> None:
        if isinstance(self.parents.get(id(node)), ast.Module) and _DUNDER.match(node.name):
            self.flag(node, f"def {node.name}", "a module-level hook changes how the module is used")

    check_AsyncFunctionDef = check_FunctionDef


def vet_source(source: str | bytes, file: str, siblings: Iterable[str] = ()) -> list[Finding]:
    """The findings in one module's source (none for a module that is not valid Python)."""
    try:
        tree = ast.parse(source, filename=file)
    except (SyntaxError, ValueError):
        return []
    vetter = _Vetter(file, frozenset(siblings))
    vetter.prepare(tree)
    vetter.visit(tree)
    return sorted(set(vetter.findings), key=lambda f: (f.line, f.construct))


def vet_folder(folder: Path, modules: Iterable[str], shown_as: str = "exercises") -> list[Finding]:
    """The findings in each ``folder/NAME.py`` of ``modules``, shown as ``exercises/NAME.py``."""
    from kata import curriculum

    modules = list(modules)
    siblings = frozenset(curriculum.names()) | frozenset(modules)
    findings = []
    for name in modules:
        path = Path(folder) / f"{name}.py"
        if path.is_file():
            findings += vet_source(path.read_bytes(), f"{shown_as}/{name}.py", siblings)
    return findings
