"""The outcome model: what a run of the checks said, grouped one block per cause, and its text.

Every place a learner reads a run's result reads it from here: the failures and
the table of ``pytest exercises`` (kata/harness/grouping.py, scoreboard.py),
``kata watch``, ``kata.check`` in a notebook and ``kata grade``'s feedback. Pure:
no pytest, no files; records in, blocks, rows and text out.

Where the records come from
---------------------------
During a run, the kata's plugin puts on every report of a check (each phase:
setup, call, teardown) ``report.user_properties`` entries, which pytest-reportlog
(``pytest --report-log FILE``) writes with the report:

- ``("kata_exercise", NAME)``: on every report of a kata check;
- ``("kata_outcome", "passed" | "failed" | "todo" | "skipped")``: on the report
  that decides the check (a failure in any phase, a skip, a passing call);
  ``todo`` is a check that stopped at a stub: an unwritten function or class's
  method, or a constant left at its stub's value (kata/harness/failures.py);
- ``("kata_cause", KEY)``: on a failure: failures with the same key have one
  cause (:func:`cause_key`);
- ``("kata_message", TEXT)``: on a failure (what the learner reads) or a skip
  (its reason), exactly as a learner's run shows it, without internal module
  names or Hypothesis's reproduction advice.

:func:`records` turns such reports (reportlog's JSON lines, parsed or not, or
live reports in that shape) into one :class:`Record` per check. A grader that
has only the reportlog file does::

    from kata.harness import outcomes
    with open("report.jsonl") as f:
        summary = outcomes.summarize(outcomes.records(f))
    for block in summary.blocks:            # curriculum order, one per cause
        print(outcomes.heading(block))
        print(outcomes.render_block(block))
    for row in summary.rows:                # one per exercise that ran, in curriculum order
        print(outcomes.render_row(row))

The grouping rule
-----------------
The cause of a failure is its exercise, the kind of exception and the first
line of its message with the numbers masked (:func:`cause_key`): the checks word
one cause the same way whatever the parameters, and put the specifics on later
lines. For an error raised in the learner's code the line read is its place
(``exercises/devices.py, line 14, in device_of: AttributeError``): one line
raising one kind of error is one cause, whatever the values it met
(kata/harness/failures.py). Failures with one cause make one :class:`Block`: the first check's
message, then "and N more checks fail for the same reason: ..." naming the rest;
the table's row counts them as failing and says how many causes there are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kata import curriculum
from kata.i18n import N_, _, pad, say

__all__ = ["CAUSE", "EXERCISE", "MESSAGE", "OUTCOME", "Block", "Record", "Row", "Summary", "cause_key", "check_name",
           "clean", "heading", "properties", "records", "render_block", "render_row", "same_reason",
           "summarize"]

EXERCISE, OUTCOME, CAUSE, MESSAGE = "kata_exercise", "kata_outcome", "kata_cause", "kata_message"
FAILED = ("failed", "todo")
PASSED = N_("passed")     # the table's word after a row's count: 3/8 passed
NAMES_SHOWN = 8          # checks named in a block's last line
WIDTH = 80               # of a block's heading: pytest's own in a terminal of 80 columns

_NUMBERS = re.compile(r"\d+(\.\d+)?")
_INTERNAL = re.compile(r"\b_kata_target_\d+\.?")
_HYPOTHESIS = ("Falsifying example", "Falsifying explicit example", "@reproduce_failure", "You can reproduce",
               "You can add @seed", "Explanation:", "The test always failed when commented parts",
               "Highest target score")


@dataclass(frozen=True)
class Record:
    """One check of a run: ``passed``, ``failed``, ``todo`` (stopped at a stub) or ``skipped``."""

    nodeid: str              # tests/test_model.py::test_x[case]
    exercise: str
    outcome: str
    cause: str | None = None     # failures with one cause share it (None: a cause of its own)
    message: str = ""            # a failure's message, a skip's reason

    @property
    def check(self) -> str:
        return check_name(self.nodeid)


@dataclass(frozen=True)
class Block:
    """One cause of failure: the first check's message, and every check that failed with it."""

    exercise: str
    cause: str
    message: str
    checks: tuple[str, ...]      # node ids, in run order; the first is the one whose message is shown
    todo: bool = False           # the cause is a stub not written yet


# A row's status when its checks all passed, or none started: without and with skipped checks.
_STATUS = {
    "done": (N_("done"), N_("done ({skipped} skipped)")),
    "partial": (N_("all pass of the checks run"), N_("all pass of the checks run ({skipped} skipped)")),
    "not started": (N_("not started: every check stops at the stub"),
                    N_("not started: every check stops at the stub ({skipped} skipped)")),
}


@dataclass(frozen=True)
class Row:
    """One exercise's line of the table."""

    exercise: curriculum.Exercise
    passed: int = 0
    failed: int = 0
    todo: int = 0
    skipped: int = 0
    not_run: int = 0
    causes: int = 0              # the failed checks' causes (each unwritten stub is one more, not counted)
    partial: bool = False        # some of the exercise's checks were left out of the run (-k, -m, a node id)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.todo + self.skipped + self.not_run

    @property
    def counted(self) -> int:
        """The checks that count: all but the skipped ones."""
        return self.total - self.skipped

    @property
    def finished(self) -> bool:
        """Every check that ran and counts passed."""
        return self.passed == self.counted

    @property
    def done(self) -> bool:
        """The exercise is done: all of its checks ran, and passed."""
        return self.finished and self.counted > 0 and not self.partial

    @property
    def status(self) -> str:
        """``done``, ``not started: ...``, ``9 failing (2 causes), 3 at a stub``, ..."""
        if not self.total:
            return _("not checked yet")
        skipped = 1 if self.skipped else 0
        if self.finished:
            return say(_STATUS["partial" if self.partial else "done"][skipped], skipped=self.skipped)
        if self.todo and not self.passed and not self.failed and not self.not_run:
            return say(_STATUS["not started"][skipped], skipped=self.skipped)
        if self.failed > 1 and self.causes == 1:
            failing = say("{failed} failing (one cause)", failed=self.failed)
        elif self.failed > 1 and self.causes:
            failing = say("{failed} failing ({causes} causes)", failed=self.failed, causes=self.causes)
        else:
            failing = say("{failed} failing", failed=self.failed)
        parts = ((self.failed, failing), (self.todo, say("{todo} at a stub", todo=self.todo)),
                 (self.skipped, say("{skipped} skipped", skipped=self.skipped)),
                 (self.not_run, say("{not_run} not run", not_run=self.not_run)))
        return ", ".join(text for n, text in parts if n)


@dataclass(frozen=True)
class Summary:
    """A run: its blocks (one per cause) and rows (one per exercise), in curriculum order."""

    blocks: tuple[Block, ...]
    rows: tuple[Row, ...]

    def row(self, exercise: str) -> Row | None:
        return next((r for r in self.rows if r.exercise.name == exercise), None)


def check_name(nodeid: str) -> str:
    """``test_x[case]`` for ``tests/test_model.py::test_x[case]``."""
    return nodeid.split("::", 1)[-1].replace("::", ".")


def clean(text: str) -> str:
    """A message as a learner reads it: without the made-up package a target's modules are
    imported under (``_kata_target_1.training.History`` is ``training.History``), Hypothesis's
    reproduction advice, or trailing blank space."""
    lines = [line for line in _INTERNAL.sub("", text).splitlines() if not line.lstrip().startswith(_HYPOTHESIS)]
    return "\n".join(lines).strip()


def cause_key(exercise: str, kind: str, message: str) -> str:
    """The grouping rule: failures with the same exercise, kind of exception and first line of
    ``message`` (numbers masked) have one cause."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return f"{exercise}|{kind}|{_NUMBERS.sub('#', first)}"


def properties(exercise: str, outcome: str | None = None, cause: str | None = None,
               message: str | None = None) -> list[tuple[str, str]]:
    """The ``user_properties`` entries of one report (see the module's docstring)."""
    found = [(EXERCISE, exercise)]
    found += [(key, value) for key, value in ((OUTCOME, outcome), (CAUSE, cause), (MESSAGE, message))
              if value is not None]
    return found


def _skip_reason(longrepr) -> str:
    if isinstance(longrepr, (list, tuple)) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return ""


def records(entries: Iterable[Mapping | str]) -> list[Record]:
    """One :class:`Record` per kata check, in run order, from its reports: pytest-reportlog's
    lines (JSON text or parsed), or live reports as dicts with the same keys (``$report_type``,
    ``nodeid``, ``when``, ``outcome``, ``user_properties``, ``longrepr``). Other lines (the
    session's, collection's, warnings') and reports of other tests are left out.

    A check's failure in any phase decides it (the first one); else a skip; else its call."""
    found: dict[str, Record] = {}
    for entry in entries:
        if isinstance(entry, str):
            if not entry.strip():
                continue
            entry = json.loads(entry)
        if entry.get("$report_type", "TestReport") != "TestReport":
            continue
        props = dict(entry.get("user_properties") or ())
        exercise = props.get(EXERCISE)
        if exercise is None:
            continue
        outcome = props.get(OUTCOME)
        if outcome is None:   # a report the kata's plugin did not decide on: pytest's own outcome
            outcome = {"failed": "failed", "skipped": "skipped"}.get(entry.get("outcome"))
            if outcome is None and entry.get("when") == "call" and entry.get("outcome") == "passed":
                outcome = "passed"
        if outcome is None:
            continue
        message = props.get(MESSAGE)
        if message is None:
            message = _skip_reason(entry.get("longrepr")) if outcome == "skipped" else ""
        record = Record(entry["nodeid"], exercise, outcome, props.get(CAUSE), message)
        known = found.get(record.nodeid)
        if known is None or (known.outcome not in FAILED and outcome in FAILED):
            found[record.nodeid] = record
    return list(found.values())


def _order(exercise: str) -> int:
    names = curriculum.names()
    return names.index(exercise) if exercise in names else len(names)


def summarize(found: Iterable[Record], expected: Mapping[str, str] | None = None,
              partial: Iterable[str] = ()) -> Summary:
    """The blocks and rows of a run's records, in curriculum order (within an exercise, in run order).

    ``expected`` maps the node ids the run collected to their exercise: those without a record
    count as not run. ``partial`` names the exercises some of whose checks the run left out."""
    found = sorted(found, key=lambda r: _order(r.exercise))   # stable: run order within an exercise
    blocks: dict[str, list[Record]] = {}
    for r in found:
        if r.outcome in FAILED:
            blocks.setdefault(r.cause or f"{r.exercise}|{r.nodeid}", []).append(r)
    counts: dict[str, dict[str, int]] = {}
    for r in found:
        counts.setdefault(r.exercise, {}).setdefault(r.outcome, 0)
        counts[r.exercise][r.outcome] += 1
    seen = {r.nodeid for r in found}
    for nodeid, exercise in (expected or {}).items():
        if nodeid not in seen:
            counts.setdefault(exercise, {}).setdefault("not run", 0)
            counts[exercise]["not run"] += 1
    causes: dict[str, int] = {}
    for same in blocks.values():
        if same[0].outcome == "failed":
            causes[same[0].exercise] = causes.get(same[0].exercise, 0) + 1
    partial = set(partial)
    rows = tuple(Row(ex, passed=c.get("passed", 0), failed=c.get("failed", 0), todo=c.get("todo", 0),
                     skipped=c.get("skipped", 0), not_run=c.get("not run", 0), causes=causes.get(ex.name, 0),
                     partial=ex.name in partial)
                 for ex in curriculum.exercises() if (c := counts.get(ex.name)))
    return Summary(tuple(Block(same[0].exercise, cause, same[0].message, tuple(r.nodeid for r in same),
                               todo=same[0].outcome == "todo")
                         for cause, same in blocks.items()), rows)


def heading(block: Block, width: int = WIDTH) -> str:
    """The line above a block: its first check's name between rules, as pytest writes it."""
    title = check_name(block.checks[0])
    n = max((width - len(title) - 2) // 2, 1)
    line = f"{'_' * n} {title} {'_' * n}"
    return line + "_" if len(line) + 1 <= width else line


def same_reason(block: Block, names: int = NAMES_SHOWN) -> str:
    """The line naming the other checks of a block ("" when it has one check)."""
    rest = [check_name(c) for c in block.checks[1:]]
    if not rest:
        return ""
    shown = ", ".join(rest[:names])
    if len(rest) > names:
        shown = say("{names} and {more} more", names=shown, more=len(rest) - names)
    if len(rest) == 1:
        return say("and {n} more check fails for the same reason: {checks}", n=len(rest), checks=shown)
    return say("and {n} more checks fail for the same reason: {checks}", n=len(rest), checks=shown)


def render_block(block: Block) -> str:
    """A block's text: its message and, when more checks failed with it, the line naming them."""
    more = same_reason(block)
    return f"{block.message}\n\n{more}" if more else block.message


def render_row(row: Row, extra: str = "") -> str:
    """The exercise's line of the table: ``  3. model        0/8   passed   not started: ...`` (the names as wide
    as the curriculum's longest)."""
    ex, width = row.exercise, curriculum.name_width()
    if not row.total:
        return f"  {ex.number}. {ex.name:<{width}}   -/-    {row.status}{extra}"
    # The status column starts where it does in English, whatever the language's word for "passed".
    passed = pad(_(PASSED), len(PASSED))   # the English word's columns, in any language
    return f"  {ex.number}. {ex.name:<{width}} {row.passed:>3}/{row.total:<3} {passed}   {row.status}{extra}"
