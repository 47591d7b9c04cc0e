"""The table that ends a learner's run: one line per exercise, then what to do next."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kata import curriculum, progress
from kata.harness.target import Target
from kata.project import locate

__all__ = ["Scoreboard"]


class Scoreboard:
    """Collects each check's outcome (a pytest plugin object) and writes the table."""

    def __init__(self, config: pytest.Config, target: Target):
        self.config = config
        self.target = target
        self.exercise_of: dict[str, str] = {}
        self.outcome: dict[str, str] = {}
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

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            exercise = curriculum.exercise_of(item.path)
            if exercise is not None:
                self.exercise_of[item.nodeid] = exercise.name

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.outcome[report.nodeid] = "todo" if getattr(report, "kata_todo", False) else "failed"
        elif report.skipped:
            self.outcome.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcome.setdefault(report.nodeid, "passed")

    def counts(self) -> dict[str, Counter]:
        counts: dict[str, Counter] = defaultdict(Counter)
        for nodeid, exercise in self.exercise_of.items():
            counts[exercise][self.outcome.get(nodeid, "not run")] += 1
        return counts

    def pytest_sessionfinish(self, session) -> None:
        """Record where each exercise whose checks all ran stands (kata/progress.py): a
        learner's folder, not the reference solutions or the project's own test folders."""
        project = locate()
        if self.target.path.is_relative_to(project.solutions) or self.target.path.is_relative_to(project.checks):
            return
        complete = {}
        for name, c in self.counts().items():
            if name not in self.partial and not c["not run"]:
                complete[name] = (c["passed"], sum(c.values()) - c["skipped"])
        progress.record(self.target.path, complete)

    def scope(self) -> str:
        """What this run checked: all checks, or which subset."""
        parts = []
        if self.config.option.markexpr:
            parts.append(f"checks marked {self.config.option.markexpr!r}")
        if self.config.option.keyword:
            parts.append(f"checks matching -k {self.config.option.keyword!r}")
        if any("::" in arg for arg in self.config.args):
            parts.append("the checks named")
        return " and ".join(parts)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """One line per exercise, in curriculum order, then what to do next."""
        if not self.exercise_of:
            return
        counts = self.counts()
        tr, target = terminalreporter, self.target
        scope = self.scope()
        tr.write_sep("=", f"kata: {target.display()}" + (f" ({scope})" if scope else ""))
        recorded = progress.read(target.path)
        unfinished_here = None
        for ex in curriculum.exercises():
            c = counts.get(ex.name)
            if not c:
                continue
            total, done = sum(c.values()), c["passed"]
            partial = ex.name in self.partial
            unfinished = done < total - c["skipped"]
            if not unfinished:
                status = ("done" if not partial else "all pass of the checks run; `pytest "
                          f"{target.display(ex.name)}` runs them all")
                if c["skipped"]:
                    status += f" ({c['skipped']} skipped: see why above)"
            elif c["todo"] and not done and c["todo"] + c["skipped"] == total:
                status = "not started: every check stops at the stub"
            else:
                status = ", ".join(f"{c[k]} {label}" for k, label in (
                    ("failed", "failing"), ("todo", "at a stub"), ("skipped", "skipped"),
                    ("not run", "not run")) if c[k])
            if unfinished and unfinished_here is None:
                unfinished_here = ex
            tr.write_line(f"  {ex.number}. {ex.name:<9} {done:>3}/{total:<3} passed   {status}",
                          green=not unfinished, red=unfinished)
        next_up = unfinished_here or self.next_elsewhere(counts, recorded)
        tr.write_line("")
        if next_up is None:
            tr.write_line(f"  Every exercise is done. `kata train --target {target.display()}` trains the book's "
                          f"CNN with your code; `kata bench --target {target.display()}` times your sync loop.",
                          green=True, bold=True)
            return
        if unfinished_here is None:
            tr.write_line("  Every exercise checked here passes.", green=True)
        tr.write_line(f"  Next: {next_up.label}: {next_up.title}", bold=True)
        tr.write_line(f"  Edit {target.display(next_up.name)}, check it alone with "
                      f"`pytest {target.display(next_up.name)}`, and see `kata hint {next_up.name}`.")

    def next_elsewhere(self, counts, recorded) -> curriculum.Exercise | None:
        """The first exercise not done, by this run's results or, for the others, the recorded progress."""
        for ex in curriculum.exercises():
            c = counts.get(ex.name)
            if c and ex.name not in self.partial:
                continue  # checked in full here, and done (else it was the next one already)
            if not recorded.get(ex.name, progress.Standing()).done:
                return ex
        return None
