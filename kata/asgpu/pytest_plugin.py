"""``pytest --as-gpu``: a project's own tests on the one-GPU machine of ``kata run``.

The kata's pytest plugin (kata/harness/plugin.py) adds the option and registers :class:`AsGpu`
when it is given: the machine is set up as the run configures (before any test trains, as the
simulator needs), a failing test's report gets the kata's lesson where it has one, and the run ends
with the syncs by kind and by line, as ``kata run`` ends.
"""

from __future__ import annotations

import pytest

from kata.i18n import N_, _, say

__all__ = ["HELP", "AsGpu"]

HELP = N_("run the tests on one simulated CUDA GPU, as `kata run` runs a script: torch.cuda says there is one, "
          "cuda tensors live on the simulated accelerator, and the run ends with the syncs by line")
SECTION = N_("kata run: the lesson")


class AsGpu:
    """The pytest plugin object of ``--as-gpu``."""

    def __init__(self, config: pytest.Config):
        from kata import sim
        from kata.asgpu._gpu import install
        from kata.asgpu._loops import Passes, watch_loaders

        install()
        self.folder = config.rootpath
        self.counting = sim.count_syncs()
        self.syncs = self.counting.__enter__()
        self.passes = Passes()
        watch_loaders(self.passes, self.syncs.events, None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and call.excinfo is not None:
            from kata.asgpu._gpu import cuda_words
            from kata.asgpu._report import WHY_AND_FIX, lesson_for

            lesson = lesson_for(call.excinfo.value, self.folder)
            if lesson:
                report.sections.append((_(SECTION), cuda_words(say(WHY_AND_FIX, lesson=lesson))))
        return report

    def pytest_terminal_summary(self, terminalreporter) -> None:
        from kata.asgpu._gpu import cuda_words
        from kata.asgpu._report import sync_report

        self.passes.close_all(len(self.syncs.events))
        terminalreporter.write_line(cuda_words(sync_report(self.syncs, self.passes, self.folder)))
