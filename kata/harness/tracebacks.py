"""From a traceback to the learner's file and line: the one place that does it.

An exception raised while a check runs the learner's code has frames in the
kata, in PyTorch and in the learner's folder. What a learner needs is the last
frame in their own folder: ``exercises/training.py, line 42, in train``.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

from kata.i18n import N_, _, english_of_stub_text, say

__all__ = ["Place", "display", "learner_error", "place_in", "unwritten"]


def display(path: str | Path) -> str:
    """A path as short as it can be said from the current folder."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


_WHERE = {   # a place in the learner's code: with its line or not, in a function or in the module's top level
    ("line", False): N_("{file}, line {line}, in {function}"),
    ("line", True): N_("{file}, line {line}, in its top level"),
    ("file", False): N_("{file}, in {function}"),
    ("file", True): N_("{file}, in its top level"),
}


@dataclass(frozen=True)
class Place:
    """A line of the learner's code (``label``: how to name its file, when not by its path:
    a notebook's ``Cell In[5]``)."""

    file: Path
    line: int | None
    function: str
    source: str
    label: str | None = None

    @property
    def file_name(self) -> str:
        """``exercises/data.py`` (or the label)."""
        return self.label or display(self.file)

    @property
    def where(self) -> str:
        """``exercises/data.py, line 4, in load_splits`` (``at its top level`` for module code)."""
        top = self.function == "<module>"
        if self.line:
            return say(_WHERE["line", top], file=self.file_name, line=self.line, function=self.function)
        return say(_WHERE["file", top], file=self.file_name, function=self.function)

    def __str__(self) -> str:
        return self.where


def place_in(exc: BaseException, folder: Path) -> Place | None:
    """The last frame of ``exc``'s traceback in a file under ``folder`` (or in the file
    ``folder``); else where the record that met it said it was raised there (``exc.kata_raised_at``: an
    error met in another process, a rank's); or None."""
    folder = Path(folder).resolve()

    def mine(file: Path) -> bool:
        return file == folder if folder.suffix == ".py" else file.is_relative_to(folder)

    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        file = Path(exc.filename).resolve()
        if mine(file):
            return Place(file, exc.lineno, "<module>", (exc.text or "").strip())
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        file = Path(frame.filename).resolve()
        if mine(file):
            found = Place(file, frame.lineno, frame.name, (frame.line or "").strip())
    at = getattr(exc, "kata_raised_at", None)   # met in another process (a rank, a laptop): where it said
    if found is None and isinstance(at, (list, tuple)) and len(at) == 4 and mine(Path(str(at[0])).resolve()):
        found = Place(Path(str(at[0])).resolve(), int(at[1]), str(at[2]), str(at[3]))
    return found


def learner_error(exc: BaseException, folder: Path) -> str | None:
    """Say in a line or two what went wrong in the code under ``folder``; None if the
    error was not raised there (then it is the kata's, or a library's, to explain).

    A NotImplementedError raised there is an exercise not written yet.
    """
    place = place_in(exc, folder)
    if place is None:
        return None
    if isinstance(exc, NotImplementedError):
        return unwritten(exc, place)
    return (f"{place.where}: {type(exc).__name__}: {exc}\n"
            + "  " + say("`pytest {file}` runs the checks that say what is expected there", file=display(place.file)))


def unwritten(exc: NotImplementedError, place: Place) -> str:
    """What a stub's NotImplementedError raised at ``place`` says: which function is not written yet."""
    text = str(exc)
    english = english_of_stub_text(text)
    if "not written yet" in english:  # the stub's own words say it (in English, or a stub in Korean)
        return f"{place.file_name}: {_(english)}"
    if text:
        return say("{file}: `{function}` is not written yet:\n  {message}", file=place.file_name,
                   function=place.function, message=text)
    return say("{file}: `{function}` is not written yet", file=place.file_name, function=place.function)
