"""The check-running harness: which folder a run checks, and the pytest plugin that runs the checks.

- :mod:`kata.harness.target`: a *target* (a folder of exercise modules) and its lazily
  imported modules;
- :mod:`kata.harness.tracebacks`: from a traceback to the learner's file and line;
- :mod:`kata.harness.plugin`: the pytest plugin (entry point ``kata``);
- :mod:`kata.harness.accelerator`: where the checks marked ``cuda`` run;
- :mod:`kata.harness.failures`: what a failed check says to the learner (its message);
- :mod:`kata.harness.outcomes`: the outcome model: a run's records (as ``--report-log``
  writes them), one block per cause and a row per exercise, and their text; what every
  view of a run reads (pytest's terminal, ``kata watch``, ``kata.check``, the grader);
- :mod:`kata.harness.grouping`: a learner's run's failures, one block per cause;
- :mod:`kata.harness.scoreboard`: the table that ends a learner's run;
- :mod:`kata.harness.settings`: the settings every run of the checks relies on;
- :mod:`kata.harness.forked`: a process forked to run a check's work (the grader's children,
  the checkpoint checks' laptops): its streams on one file, and its end.
"""

from kata.harness.target import Target, TargetError, TargetModule, find_target, module_of, target_of, target_path
from kata.harness.tracebacks import Place, display, learner_error, place_in

__all__ = ["Place", "Target", "TargetError", "TargetModule", "display", "find_target", "learner_error", "module_of",
           "place_in", "target_of", "target_path"]
