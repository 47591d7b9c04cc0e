"""A notebook (``.ipynb``) under ``kata run``: its code cells, top to bottom, in this process.

Each code cell is compiled under its own name, ``NAME.ipynb[cell N]`` (N counts the code cells
from 1, as a fresh kernel's ``In [N]`` does when run top to bottom), with its source in
:mod:`linecache`, so a failure and the sync report name the cell and its line.  Lines of IPython
syntax (``%magic``, ``!shell``) are left out, blank, so the lines keep their numbers; a cell's last
expression is evaluated, and shown as a notebook shows it (its ``repr``), through ``display``.  Of the
cell magics, ``%%writefile [-a] FILE`` writes its cell to FILE (a later cell may import it), those
whose cell is Python (``%%time``, ``%%capture``, ...) run it, and the rest (``%%bash``, ``%%html``,
...) are left out, as ``!shell`` lines are.  ``get_ipython()`` gives a shell whose magics do nothing,
and ``tqdm.notebook``'s bars (Jupyter's widgets) are tqdm's own, drawn in the terminal.

Running the cells in this process, rather than in a kernel (nbclient), is what lets the machine
of :mod:`kata.asgpu._gpu` be set up around them as for a script, and costs no kernel's start.
"""

from __future__ import annotations

import ast
import json
import linecache
import shlex
import sys
import types
from pathlib import Path
from typing import NamedTuple

__all__ = ["Cell", "cells", "execute"]

# Cell magics whose cell is Python, run as it is (what they add, a time or a captured output, is left out).
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "python", "python3"}


class Cell(NamedTuple):
    name: str      # 'PATH[cell N]'
    source: str    # its Python, IPython's own lines blanked
    writes: tuple[str, str] | None = None   # %%writefile: (the file, "w" or "a"), the cell being what it writes


def cells(path: Path) -> list[Cell]:
    """Each code cell, IPython's own lines blanked (a cell magic's cell: see the module's doc)."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    found = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        name = f"{Path(path).resolve()}[cell {len(found) + 1}]"
        head, _, body = source.lstrip("\n").partition("\n")
        words = shlex.split(head[2:]) if head.startswith("%%") else []
        if words[:1] == ["writefile"] and len(words) > 1:
            found.append(Cell(name, body, (words[-1], "a" if "-a" in words[1:-1] else "w")))
            continue
        if words and words[0] not in PYTHON_CELL_MAGICS:
            source = "\n" * source.count("\n")   # not Python (%%bash, %%html, ...): left out, as !shell lines are
        lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
        found.append(Cell(name, "\n".join(lines)))
    return found


def _display(*values) -> None:
    for value in values:
        if value is not None:
            print(repr(value))


class _Shell:
    """What ``get_ipython()`` gives a notebook's code here: a shell whose magics and shell commands do nothing, as
    the lines of IPython's own syntax are left out."""

    def run_line_magic(self, *args, **kwargs) -> None:
        return None

    run_cell_magic = system = run_line_magic

    def getoutput(self, *args, **kwargs) -> list:
        return []

    def __repr__(self) -> str:
        return "<kata run: a notebook's code cells, run in a terminal>"


def _terminal_tqdm() -> None:
    """``tqdm.notebook`` draws its bars with Jupyter's widgets, which a terminal has not: there they are tqdm's own."""
    try:
        import tqdm
        import tqdm.std
    except ImportError:
        return
    shim = types.ModuleType("tqdm.notebook", "tqdm's own bars, for a notebook's cells run in a terminal (kata run)")
    shim.tqdm = shim.tqdm_notebook = tqdm.std.tqdm
    shim.trange = shim.tnrange = tqdm.std.trange
    sys.modules["tqdm.notebook"] = tqdm.notebook = shim


def execute(path: Path) -> None:
    """Run the notebook's code cells in order, in one namespace, as ``__main__``."""
    shell = _Shell()
    namespace = {"__name__": "__main__", "__file__": str(Path(path).resolve()), "__builtins__": __builtins__,
                 "display": _display, "get_ipython": lambda: shell}
    _terminal_tqdm()
    for name, source, writes in cells(path):
        if writes is not None:
            _write(source, *writes)
            continue
        lines = source.splitlines(keepends=True)
        linecache.cache[name] = (len(source), None, lines, name)
        tree = ast.parse(source, filename=name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            _display(eval(compile(last, name, "eval"), namespace))


def _write(text: str, file: str, mode: str) -> None:
    """``%%writefile [-a] FILE``: the cell into FILE, said as IPython says it."""
    target = Path(file).expanduser()
    print(f"Appending to {file}" if mode == "a" else f"Overwriting {file}" if target.exists() else f"Writing {file}")
    with open(target, mode, encoding="utf-8") as out:
        out.write(text)
