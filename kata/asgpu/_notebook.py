"""A notebook (``.ipynb``) under ``kata run``: its code cells, top to bottom, in this process.

Each code cell is compiled under its own name, ``NAME.ipynb[cell N]`` (N counts the code cells
from 1, as a fresh kernel's ``In [N]`` does when run top to bottom), with its source in
:mod:`linecache`, so a failure and the sync report name the cell and its line.  Lines of IPython
syntax (``%magic``, ``!shell``) are left out, blank, so the lines keep their numbers; a cell's last
expression is evaluated, and shown as a notebook shows it (its ``repr``), through ``display``.

Running the cells in this process, rather than in a kernel (nbclient), is what lets the machine
of :mod:`kata.asgpu._gpu` be set up around them as for a script, and costs no kernel's start.
"""

from __future__ import annotations

import ast
import json
import linecache
from pathlib import Path

__all__ = ["cells", "execute"]


def cells(path: Path) -> list[tuple[str, str]]:
    """(name, source) of each code cell, IPython's own lines blanked."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    found = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
        found.append((f"{Path(path).resolve()}[cell {len(found) + 1}]", "\n".join(lines)))
    return found


def _display(*values) -> None:
    for value in values:
        if value is not None:
            print(repr(value))


def execute(path: Path) -> None:
    """Run the notebook's code cells in order, in one namespace, as ``__main__``."""
    namespace = {"__name__": "__main__", "__file__": str(Path(path).resolve()), "__builtins__": __builtins__,
                 "display": _display}
    for name, source in cells(path):
        lines = source.splitlines(keepends=True)
        linecache.cache[name] = (len(source), None, lines, name)
        tree = ast.parse(source, filename=name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            _display(eval(compile(last, name, "eval"), namespace))
