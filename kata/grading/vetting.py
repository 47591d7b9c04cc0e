"""Notes for the teacher's review: what in a submission's source reaches past what the exercises need.

Points never rest on this (the audit decides them, kata/audit): a note only
says where a teacher may want to look (``review:`` in the status, points
kept). What ordinary code uses is never noted: ``os``, ``pathlib``, ``sys``,
``logging``, ``argparse``, type hints, dataclasses, prints, helper modules.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["review"]

# module (or its first part) -> why a teacher may want to look
MODULES = {
    "ctypes": "calls into C directly", "subprocess": "starts programs", "socket": "opens network connections",
    "multiprocessing": "starts processes", "importlib": "imports code by name", "gc": "walks the interpreter's objects",
    "marshal": "loads code objects", "pickle": "loads objects that can run code", "codecs": "may change how "
    "source is read", "builtins": "changes Python's own functions", "threading": "runs code beside the checks",
    "kata.checks": "the checks' own helpers (the book's CNN and loop)", "kata.grading": "the grader's own code",
    "kata.audit": "the audit's own code", "kata.harness": "the checks' machinery", "kata.project": "where the "
    "kata's files (and the answers) are", "solutions": "the reference solutions", "pytest": "the test runner",
    "_pytest": "the test runner's insides",
}
CALLS = {"exec": "runs text as code", "eval": "runs text as code", "compile": "makes code from text",
         "__import__": "imports code by name", "globals": "reaches the module's globals", "setattr": "changes "
         "attributes by name"}
ATTRIBUTES = {"__code__", "__globals__", "__subclasses__", "__builtins__", "f_back", "f_globals", "f_locals",
              "tb_frame", "gi_frame", "modules", "_getframe", "meta_path", "path_hooks", "settrace", "setprofile"}


def _module_notes(node) -> list[tuple[int, str, str]]:
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    found = []
    for name in names:
        for prefix, why in MODULES.items():
            if name == prefix or name.startswith(prefix + "."):
                found.append((node.lineno, f"import {name}", why))
    return found


_PARSING = threading.Lock()   # CPython 3.11's ast.parse is not safe on two threads at once ("recursion depth mismatch")


def review(files: dict[str, str]) -> list[str]:
    """One note per finding: 'exercises/NAME.py line N: construct (why)'."""
    notes = []
    for name, source in sorted(files.items()):
        try:
            with _PARSING:
                tree = ast.parse(source, filename=name)
        except (SyntaxError, ValueError) as err:
            notes.append(f"exercises/{name}: Python can't read it ({type(err).__name__}); if it imports all the "
                         "same, something else decoded it")
            continue
        found = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                found += _module_notes(node)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALLS:
                found.append((node.lineno, f"{node.func.id}(...)", CALLS[node.func.id]))
            elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
                found.append((node.lineno, f".{node.attr}", "the interpreter's insides"))
            elif isinstance(node, ast.MatchClass):
                found.append((node.lineno, "a match class pattern", "reads attributes without naming them"))
        notes += [f"exercises/{name} line {line}: {what} ({why})" for line, what, why in sorted(set(found))]
    return notes
