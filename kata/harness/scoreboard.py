"""The table that ends a learner's run: one line per exercise, then what to do next."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kata import curriculum, progress
from kata.harness import outcomes
from kata.harness.grouping import Recorder
from kata.harness.target import Target
from kata.i18n import _, say
from kata.project import locate

__all__ = ["Scoreboard"]


class Scoreboard:
    """The table of a learner's run (a pytest plugin object), from the records ``recorder`` keeps;
    it also runs the checks in the table's order."""

    def __init__(self, config: pytest.Config, target: Target, recorder: Recorder):
        self.config = config
        self.target = target
        self.recorder = recorder
        self.started = time.time()          # before the learner's code is imported: edits after it are news
        self.exercise_of: dict[str, str] = {}
        self.partial: set[str] = set()   # exercises some of whose checks this run left out
        for arg in config.args:  # a check named by its node id: its exercise ran only in part
            exercise = curriculum.exercise_of(Path(arg.split("::")[0]).resolve()) if "::" in arg else None
            if exercise is not None:
                self.partial.add(exercise.name)

    def pytest_deselected(self, items) -> None:
        for item in items:
            exercise = curriculum.exercise_of(item.path)
            if exercise is not None:
                self.partial.add(exercise.name)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The checks run in curriculum order (the files' names would put data's first)."""
        order = {name: k for k, name in enumerate(curriculum.names())}

        def rank(item: pytest.Item) -> int:
            exercise = curriculum.exercise_of(item.path)
            return order[exercise.name] if exercise is not None else len(order)

        items.sort(key=rank)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            exercise = curriculum.exercise_of(item.path)
            if exercise is not None:
                self.exercise_of[item.nodeid] = exercise.name

    def summary(self) -> outcomes.Summary:
        return outcomes.summarize(self.recorder.records, self.exercise_of, self.partial)

    def pytest_sessionfinish(self, session) -> None:
        """Record where each exercise whose checks all ran stands (kata/progress.py): a
        learner's folder, not the reference solutions or the project's own test folders."""
        project = locate()
        if self.target.path.is_relative_to(project.solutions) or self.target.path.is_relative_to(project.checks):
            return
        progress.record(self.target.path, {row.exercise.name: progress.Standing.of(row)
                                           for row in self.summary().rows if not row.partial and not row.not_run},
                        started=self.started)

    def scope(self) -> str:
        """What this run checked: all checks, or which subset."""
        parts = []
        if self.config.option.markexpr:
            parts.append(say("checks marked {expression!r}", expression=self.config.option.markexpr))
        if self.config.option.keyword:
            parts.append(say("checks matching -k {keyword!r}", keyword=self.config.option.keyword))
        if any("::" in arg for arg in self.config.args):
            parts.append(_("the checks named"))
        scope = parts[0] if parts else ""
        for more in parts[1:]:
            scope = say("{scope} and {more}", scope=scope, more=more)
        return scope

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """One line per exercise, in curriculum order, then what to do next."""
        if not self.exercise_of:
            return
        summary = self.summary()
        tr, target = terminalreporter, self.target
        scope = self.scope()
        tr.write_sep("=", f"kata: {target.display()}" + (f" ({scope})" if scope else ""))
        unfinished_here = None
        for row in summary.rows:
            extra = say("; `pytest {path}` runs them all", path=target.display(row.exercise.name)) if row.partial \
                else ""
            if row.finished and row.skipped:
                extra += _(": see why above")
            if not row.finished and unfinished_here is None:
                unfinished_here = row.exercise
            tr.write_line(outcomes.render_row(row, extra), green=row.finished, red=not row.finished)
        next_up = unfinished_here or self.next_elsewhere(summary)
        tr.write_line("")
        if next_up is None:
            tr.write_line("  " + say("Every exercise is done. `kata train --target {target}` trains the book's CNN "
                                     "with your code; `kata bench --target {target}` times your sync loop.",
                                     target=target.display()),
                          green=True, bold=True)
            return
        if unfinished_here is None:
            tr.write_line("  " + _("Every exercise checked here passes."), green=True)
        tr.write_line("  " + say("Next: {exercise}: {title}", exercise=next_up.label, title=next_up.title),
                      bold=True)
        tr.write_line("  " + say("Edit {path}, check it alone with `pytest {path}`, and see `kata hint {name}`.",
                                 path=target.display(next_up.name), name=next_up.name))

    def next_elsewhere(self, summary: outcomes.Summary) -> curriculum.Exercise | None:
        """The first exercise not done, by this run's results or, for the others, the recorded progress
        (which this run just updated)."""
        recorded = progress.read(self.target.path)
        for ex in curriculum.exercises():
            row = summary.row(ex.name)
            if row is not None and not row.partial:
                continue  # checked in full here, and done (else it was the next one already)
            if not recorded.get(ex.name, progress.Standing()).still_done:
                return ex
        return None
