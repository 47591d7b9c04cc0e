"""What a failed check says to the learner: the one place that turns an exception into its message.

The kata's plugin asks here for every failure of a check against a target
(``pytest exercises``, ``kata watch``'s rounds, ``kata.check`` in a notebook,
the grader's sandbox), and puts the answer on the report (``kata_message``,
``kata_cause``: kata/harness/outcomes.py) and, in a learner's run, in place of
pytest's traceback:

- a module that is missing, does not import or lacks a name: the target's
  one line (:class:`~kata.harness.target.TargetError`);
- a check past its time limit: that, and where the learner's code was;
- a stub's ``NotImplementedError``: which function is not written yet; a
  name the check read still at its stub's value (``SMILING = None``,
  :class:`~kata.harness.target.NotSetYet`): which name is not set yet. Both
  are a stub (``todo``), whatever else of the exercise is written;
- a check's own assertion: its message, without pytest's rewriting of the
  ``assert`` expression and without Hypothesis's notes (the falsifying
  example names the check's internals; the messages describe the input);
- an error raised in the learner's code: its place (file or notebook cell,
  line, function), the error, and the line; errors of one kind raised by one
  line are one cause, whatever their values (``'Linear' object has no
  attribute 'device'`` and ``'NoneType' object ...``);
- a check's own assertion about an error the learner's code raised, which the
  check read from a record (re-raised, or caught there: kata.records.caught):
  its message, and under it the learner's line for each such error that the
  message does not already name (``raised``: the check's ``kata_raised``);
- any other error: the error and where it was raised (a library, or the check).

Hypothesis reports several failures of one check as an exception group: its
first failure is the one described.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from kata.harness.outcomes import clean
from kata.harness.target import NotSetYet, Target, TargetError
from kata.harness.tracebacks import Place, display, unwritten
from kata.i18n import N_, say

__all__ = ["RAISED_AT", "Failure", "describe", "innermost"]

RAISED_AT = N_("{kind} raised at {where}: {source}")


@dataclass(frozen=True)
class Failure:
    """A failure as the learner reads it."""

    message: str
    kind: str                 # the kind of exception, for the grouping rule
    todo: bool = False        # stopped at a stub not written yet
    traceback: bool = False   # pytest would show a traceback (kept where the learner asks: --tb=...)
    headline: str = ""        # what the grouping rule reads, when not the message's first line

    @property
    def cause(self) -> str:
        """What failures of one cause share (kata.harness.outcomes.cause_key reads it)."""
        return self.headline or self.message

def innermost(exc: BaseException) -> BaseException:
    """The first failure inside an exception group (Hypothesis's, for several failures)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(excinfo: pytest.ExceptionInfo, target: Target, timeout: float, raised=()) -> Failure:
    """The message of a check's failure against ``target`` (``timeout``: its time limit, in seconds; ``raised``:
    the errors of the learner's code the check read, each ``[kind, [file, line, function, source]]``)."""
    exc = innermost(excinfo.value)
    kind = type(exc).__name__
    if isinstance(exc, TargetError):
        return Failure(clean(str(exc)), kind)
    if isinstance(exc, NotSetYet):
        return Failure(clean(str(exc)), kind, todo=True)
    place = target.place_of(exc)
    if isinstance(exc, pytest.fail.Exception) and str(exc).startswith("Timeout"):
        if place:
            message = say("this check did not finish within {timeout:g} s, its time limit (it needs a few seconds); "
                          "your code was at {where}: {source}.\n  A plt.pause() or plt.show() waiting for a window, "
                          "time.sleep(), an endless loop, or far more work than the check asks for?",
                          timeout=timeout, where=place.where, source=place.source)
        else:
            message = say("this check did not finish within {timeout:g} s, its time limit (it needs a few seconds)."
                          "\n  A plt.pause() or plt.show() waiting for a window, time.sleep(), an endless loop, or "
                          "far more work than the check asks for?", timeout=timeout)
        return Failure(message, "Timeout")
    if isinstance(exc, NotImplementedError) and place is not None:
        return Failure(clean(unwritten(exc, place)), kind, todo=True)
    if place is None and isinstance(exc, (AssertionError, pytest.fail.Exception)):
        return Failure(_named(clean(_assertion(exc)) or clean(excinfo.exconly()), raised), kind)
    if place is not None:   # one line of the learner's code, one kind of error: one cause, whatever the values
        return Failure(clean(_raised_at(exc, place)), kind, traceback=True, headline=f"{place.where}: {kind}")
    return Failure(clean(f"{kind}: {exc}" + _origin(exc)), kind, traceback=True)


def _named(message: str, raised) -> str:
    """``message``, and under it the learner's line of each error in ``raised`` that it does not name yet."""
    lines = []
    for kind, (file, line, function, source) in raised:
        where = Place(Path(file), line, function, source).where
        if where not in message and (said := say(RAISED_AT, kind=kind, where=where, source=source)) not in lines:
            lines.append(said)
    return "\n".join([message, *("  " + line for line in lines)])


def _assertion(exc: BaseException) -> str:
    """A check's message, without pytest's rewriting of the assert's expression (it shows the check's
    internals); a bare ``assert`` gives its expression's first line."""
    text = str(exc)
    if isinstance(exc, AssertionError):
        text = text.splitlines()[0] if text.startswith("assert ") else text.split("\nassert ")[0]
    return text.strip()


def _raised_at(exc: BaseException, place: Place) -> str:
    line = f"\n    {place.source}" if place.source else ""
    return f"{place.where}: {type(exc).__name__}: {exc}".rstrip() + line


def _origin(exc: BaseException) -> str:
    """Where an error that the learner's code did not raise was raised: a library's function or the check."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return ""
    code, file = tb.tb_frame.f_code, Path(tb.tb_frame.f_code.co_filename)
    parts = file.parts
    if "site-packages" in parts:
        shown = "/".join(parts[parts.index("site-packages") + 1:])
        return "\n  " + say("(raised in {file}, in {function}, while the check ran)", file=shown,
                             function=code.co_name)
    return "\n  " + say("(raised in {file}, line {line}, in {function}, while the check ran)", file=display(file),
                         line=tb.tb_lineno, function=code.co_name)
