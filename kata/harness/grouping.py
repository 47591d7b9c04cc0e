"""One cause, one message: a learner's run shows each cause of failure once.

A stub that is not written yet, a module that does not import, a ``plt.show()``
or the seed's tensor history make many checks of one exercise fail with the
same message. In a learner's run, failures of one exercise with the same cause
are shown once in full, followed by "and N more checks fail for the same reason"
with their names; the others are left out of the failure details (they still
count as failed, and ``-rf`` still lists them).

The cause of a failure is its exercise, the kind of exception and the first
line of its message (the checks word a cause the same way whatever the
parameters, and put the specifics on later lines).
"""

from __future__ import annotations

import re

import pytest

from kata import curriculum

__all__ = ["FailureGroups", "cause_of"]

_NUMBERS = re.compile(r"\d+(\.\d+)?")


def cause_of(item: pytest.Item, excinfo: pytest.ExceptionInfo) -> str | None:
    """A key shared by failures with the same cause (None: never grouped)."""
    exercise = curriculum.exercise_of(item.path)
    text = str(excinfo.value).strip()
    if exercise is None or not text:
        return None
    first = _NUMBERS.sub("#", text.splitlines()[0])
    return f"{exercise.name}|{excinfo.typename}|{first}"


class FailureGroups:
    """A plugin for a learner's run: folds failures of the same cause (see the module's docstring)."""

    def __init__(self):
        self.groups: dict[str, list[pytest.TestReport]] = {}
        self.held: list[pytest.TestReport] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cause = getattr(report, "kata_cause", None)
        if report.failed and cause is not None:
            self.groups.setdefault(cause, []).append(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Before the failures are written (the terminal reporter writes them after this hook)."""
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        failed = reporter.stats.get("failed", [])
        for reports in self.groups.values():
            if len(reports) < 2:
                continue
            first, rest = reports[0], reports[1:]
            names = [_name(r) for r in rest]
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            first.longrepr = (f"{first.longreprtext.rstrip()}\n\n"
                              f"and {len(rest)} more check{'s' if len(rest) > 1 else ''} fail for the same "
                              f"reason: {shown}")
            for report in rest:
                if report in failed:
                    failed.remove(report)
                    self.held.append(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        """After the failures are written: put the folded ones back, so the counts are right."""
        terminalreporter.stats.setdefault("failed", []).extend(self.held)
        self.held.clear()


def _name(report: pytest.TestReport) -> str:
    return report.nodeid.split("::", 1)[-1]
