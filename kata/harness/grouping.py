"""One cause, one block: a learner's run shows each cause of failure once, in curriculum order.

:class:`Recorder` is the pytest plugin of a learner's run that keeps each check's
record (from the ``user_properties`` the kata's plugin puts on its reports: the
same records pytest-reportlog writes, see kata/harness/outcomes.py) and, before
pytest writes the failures, puts them in the order of the outcome model's
blocks: the first check of each cause, its message followed by "and N more
checks fail for the same reason" naming the others, which are left out of the
failure details (they still count as failed, and ``-rf`` still lists them).

A run that names a plugin object of this class (``pytest.main(args,
plugins=[Recorder()])``, as ``kata.check`` does) gets its records afterwards.
"""

from __future__ import annotations

import pytest

from kata.harness import outcomes

__all__ = ["Recorder"]


class Recorder:
    """Each kata check's record, in run order; and the failures, folded one per cause."""

    def __init__(self):
        self.entries: list[dict] = []
        self.tracebacks = False   # the learner asked for pytest's tracebacks (--tb=...)
        self._reports: dict[str, pytest.TestReport] = {}
        self._held: list[pytest.TestReport] = []

    @property
    def records(self) -> list[outcomes.Record]:
        return outcomes.records(self.entries)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.entries.append({"$report_type": "TestReport", "nodeid": report.nodeid, "when": report.when,
                             "outcome": report.outcome, "user_properties": list(report.user_properties),
                             "longrepr": report.longrepr if report.skipped else None})
        if report.failed:
            self._reports.setdefault(report.nodeid, report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Before the failures are written (the terminal reporter writes them after this hook)."""
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        failed = reporter.stats.get("failed", [])
        listed = {id(r) for r in failed}
        shown = []
        for block in outcomes.summarize(self.records).blocks:
            reports = [self._reports[c] for c in block.checks if id(self._reports.get(c)) in listed]
            if not reports:
                continue
            first = reports[0]
            if not self.tracebacks:
                first.longrepr = outcomes.render_block(block)
            elif len(block.checks) > 1:
                first.longrepr = f"{first.longreprtext.rstrip()}\n\n{outcomes.same_reason(block)}"
            shown.append(first)
            self._held += reports[1:]
        if shown:
            mine = {id(r) for r in shown + self._held}
            reporter.stats["failed"] = shown + [r for r in failed if id(r) not in mine]

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        """After the failures are written: put the folded ones back, so the counts are right."""
        terminalreporter.stats.setdefault("failed", []).extend(self._held)
        self._held.clear()
