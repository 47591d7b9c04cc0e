"""Notes for the teacher's review, never points: what in a submission's source reaches past what the exercises
need. What ordinary code uses is never noted (``os``, ``pathlib``, ``sys``, type hints, prints, helper modules).
"""

from __future__ import annotations

import ast
import threading

from kata.i18n import N_, _, say

__all__ = ["review"]

# module (or its first part) -> why a teacher may want to look
MODULES = {
    "ctypes": N_("calls into C directly"), "subprocess": N_("starts programs"),
    "socket": N_("opens network connections"), "multiprocessing": N_("starts processes"),
    "importlib": N_("imports code by name"), "gc": N_("walks the interpreter's objects"),
    "marshal": N_("loads code objects"), "pickle": N_("loads objects that can run code"),
    "codecs": N_("may change how source is read"), "builtins": N_("changes Python's own functions"),
    "threading": N_("runs code beside the checks"),
    "kata.checks": N_("the checks' own helpers (the book's CNN and loop)"), "kata.grading": N_("the grader's own code"),
    "kata.records": N_("the records the grader asks"), "kata.harness": N_("the checks' machinery"),
    "kata.project": N_("where the kata's files (and the answers) are"), "solutions": N_("the reference solutions"),
    "kata.data.synth": N_("the kata's synthetic CelebA"), "kata.sim": N_("the simulated accelerator's insides"),
    "pytest": N_("the test runner"), "_pytest": N_("the test runner's insides"),
}
CALLS = {"exec": N_("runs text as code"), "eval": N_("runs text as code"), "compile": N_("makes code from text"),
         "__import__": N_("imports code by name"), "globals": N_("reaches the module's globals"),
         "setattr": N_("changes attributes by name")}
ATTRIBUTES = {"__code__", "__globals__", "__subclasses__", "__builtins__", "f_back", "f_globals", "f_locals",
              "tb_frame", "gi_frame", "modules", "_getframe", "meta_path", "path_hooks", "settrace", "setprofile"}


def _why(name: str) -> str | None:
    """Why a teacher may want to look at an import of module ``name`` (None: nothing to note)."""
    return next((why for prefix, why in MODULES.items() if name == prefix or name.startswith(prefix + ".")), None)


def _module_notes(node) -> list[tuple[int, str, str]]:
    """Notes on the modules an import reaches: ``from X import Y`` reaches X, or each ``X.Y`` where X needs none."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif _why(node.module or ""):
        names = [node.module]
    else:
        names = [f"{node.module}.{a.name}" for a in node.names if node.module and a.name != "*"]
    return [(node.lineno, f"import {name}", _(why)) for name in names if (why := _why(name))]


_PARSING = threading.Lock()   # CPython 3.11's ast.parse is not safe on two threads at once ("recursion depth mismatch")


def review(files: dict[str, str]) -> list[str]:
    """One note per finding: 'exercises/NAME.py line N: construct (why)'."""
    notes = []
    for name, source in sorted(files.items()):
        try:
            with _PARSING:
                tree = ast.parse(source, filename=name)
        except (SyntaxError, ValueError) as err:
            notes.append(say("exercises/{name}: Python can't read it ({kind}); if it imports all the same, something "
                             "else decoded it", name=name, kind=type(err).__name__))
            continue
        found = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                found += _module_notes(node)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALLS:
                found.append((node.lineno, f"{node.func.id}(...)", _(CALLS[node.func.id])))
            elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
                found.append((node.lineno, f".{node.attr}", _("the interpreter's insides")))
            elif isinstance(node, ast.MatchClass):
                found.append((node.lineno, _("a match class pattern"), _("reads attributes without naming them")))
        notes += [say("exercises/{name} line {line}: {what} ({why})", name=name, line=line, what=what, why=why)
                  for line, what, why in sorted(set(found))]
    return notes
