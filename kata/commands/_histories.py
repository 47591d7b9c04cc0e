"""What ``kata train`` sees of the learner's histories: the seed's plot, and what each list held and where.

:class:`HistoryWatch` reads every history ``train`` hands to ``on_epoch``: which lists hold entries
that are not Python floats, and the line of the learner's code that put them there (read from the
frame that called ``on_epoch``); on the simulated accelerator it draws the history as the book
does (:func:`book_plot`), so a history of device tensors crashes as the seed's did, explained.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kata.checks import lessons
from kata.checks.lessons import say
from kata.commands._args import plot_language
from kata.harness.target import Target
from kata.harness.tracebacks import display
from kata.i18n import N_, _
from kata.records.history import HISTORY_NAMES

__all__ = ["KINDS", "HistoryWatch", "SeedsCrash", "book_plot", "plain"]


class SeedsCrash(Exception):
    """The book's plot of the history failed as the seed's did; the message explains it."""


def plain(value):
    """A history entry as a JSON number, whatever the learner returned."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().item()
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- what the histories held, and where it was put there --------------------------------------

# The kinds of history entry that are not Python floats, as the checks name them (kata.checks.lessons).
KINDS = ("device tensor", "grad tensor", "cpu tensor", "numpy scalar")


def _kind(value) -> str | None:
    """Why a history entry is not a Python float (one of KINDS); None if it is a number that plots."""
    from kata.checks.messages import entry_kind

    kind = entry_kind(value)
    return kind if kind in KINDS else None


def _describe(value) -> str:
    from kata.checks.messages import describe

    return describe(value)


def book_plot(history):
    """The book's learning curves, drawn from the raw history exactly as the seed's notebook did
    (no conversion: a device tensor makes NumPy raise, as it did for the seed)."""
    import matplotlib
    import numpy as np
    from matplotlib.figure import Figure

    shown, rc = plot_language()
    fig = Figure(figsize=(12, 4))
    x_arr = np.arange(len(history[0])) + 1
    panels = ((history[0], history[1], N_("Train loss"), N_("Validation loss"), N_("Loss")),
              (history[2], history[3], N_("Train acc."), N_("Validation acc."), N_("Accuracy")))
    with matplotlib.rc_context(rc):
        for panel, (train_hist, valid_hist, train_label, valid_label, what) in enumerate(panels):
            ax = fig.add_subplot(1, 2, panel + 1)
            ax.plot(x_arr, train_hist, "-o", label=shown(train_label))
            ax.plot(x_arr, valid_hist, "--<", label=shown(valid_label))
            ax.legend()
            ax.set_xlabel(shown(N_("Epoch")))
            ax.set_ylabel(shown(what))
    return fig


class HistoryWatch:
    """What the learner's histories hold, per list, and the line of their code that put
    it there (read from the frame that called on_epoch, the learner's train)."""

    def __init__(self, target: Target, training: str):
        self.target, self.training = target, training   # the module whose train keeps the histories
        self.found: dict[str, dict[str, tuple[int, object]]] = {}   # kind -> {list name: (epoch, value)}
        self.origin: dict[str, str] = {}                           # list name -> "file, line N: source"

    def look(self, history, caller) -> None:
        for name, values in zip(HISTORY_NAMES, history, strict=False):
            for epoch, value in enumerate(values):
                kind = _kind(value)
                if kind and name not in self.found.setdefault(kind, {}):
                    self.found[kind][name] = (epoch, value)
                    self.origin.setdefault(name, self._origin(name, history, caller))

    def _origin(self, name: str, history, frame) -> str:
        """``exercises/training.py, line 52: accuracy_hist_train.append(...)``, or ''."""
        while frame is not None and not Path(frame.f_code.co_filename).resolve().is_relative_to(self.target.path):
            frame = frame.f_back
        if frame is None:
            return ""
        index = HISTORY_NAMES.index(name)
        lists = {n for n, v in frame.f_locals.items() if v is history[index]}
        wholes = {n for n, v in frame.f_locals.items() if v is history}
        file, line = Path(frame.f_code.co_filename), frame.f_lineno
        try:
            source = file.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError):
            return ""
        functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and f.lineno <= line <= (f.end_lineno or f.lineno)]

        def is_the_list(node) -> bool:
            if isinstance(node, ast.Name):
                return node.id in lists
            if isinstance(node, ast.Attribute):
                return node.attr == name
            return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in wholes
                    and isinstance(node.slice, ast.Constant) and node.slice.value == index)

        for node in ast.walk(functions[-1]) if functions else ():
            hit = ((isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "extend", "insert") and is_the_list(node.func.value))
                   or (isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                       is_the_list(t.value if isinstance(t, ast.Subscript) else t)
                       for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))))
            if hit:
                text = ast.get_source_segment(source, node) or ""
                return say("{file}, line {line}: {code}", file=display(file), line=node.lineno,
                           code=" ".join(text.split()))
        return say("{file}, in {function}", file=display(file), function=functions[-1].name) if functions \
            else display(file)

    def _lists(self, kind: str) -> str:
        lines = []
        for name, (epoch, value) in self.found.get(kind, {}).items():
            where = say(", put there at {origin}", origin=self.origin[name]) if self.origin.get(name) else ""
            lines.append(say("  {name} (epoch {epoch}: {value}){where}", name=name, epoch=epoch + 1,
                             value=_describe(value), where=where))
        return "\n".join(lines)

    def plot_as_the_book_does(self, history) -> None:
        """Draw the history as the seed did; its crash raises SeedsCrash, explained."""
        try:
            book_plot(history)
        except (TypeError, RuntimeError) as err:
            if "numpy" not in str(err):
                raise
            kind = "device tensor" if "device type tensor" in str(err) else "grad tensor"
            floats = [n for n, h in zip(HISTORY_NAMES, history, strict=False) if all(_kind(v) is None for v in h)]
            shown = ""
            if floats:
                template = lessons.TRAIN_CRASH_FLOATS if len(floats) > 1 else lessons.TRAIN_CRASH_FLOAT
                shown = say(template, names=", ".join(floats))
            error = f"{type(err).__name__}: {err}"   # NumPy's words, as it raised them
            raise SeedsCrash(say(lessons.TRAIN_CRASH, error=error,
                                    held=_(lessons.ENTRY_HELD[kind]), lists=self._lists(kind), floats=shown,
                                    lesson=_(lessons.ENTRY_LESSONS[kind]),
                                    training=self.target.display(self.training))) from None

    def notes(self) -> list[str]:
        """One note per kind of entry that is not a Python float, each with its own reason (the checks'
        own words: kata.checks.lessons)."""
        training = self.target.display(self.training)
        found = []
        for kind in KINDS:
            if not self.found.get(kind):
                continue
            note = say(lessons.TRAIN_NOTE, held=_(lessons.ENTRY_HELD[kind]), lists=self._lists(kind),
                       lesson=_(lessons.ENTRY_LESSONS[kind]), training=training)
            if kind == "cpu tensor":
                note += "\n" + say(lessons.TRAIN_NOTE_SIM, target=self.target.display())
            found.append(note)
        return found
