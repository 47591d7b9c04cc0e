"""Grading a class: ``kata grade``, ``kata gradescope`` and ``kata release``.

A grade must be one a teacher can defend: it rests on what a submission's code
computes, never on what that code says about itself, and one submission can
affect nothing but its own grade. Three layers see to it:

1. **vetting** (:mod:`~kata.grading.vetting`): before anything runs, the
   grader reads each submission's source; what reaches past what these
   exercises need (files, processes, the interpreter's insides, the checks'
   own code, changing a library the checks use) flags the submission for
   review: its row says ``flagged:`` with file, line and construct, and
   ``--flagged zero`` (the default) gives it 0 until the teacher looks;
2. **the tripwire** (:mod:`~kata.grading.tripwire`), in each test process:
   refuses and reports what the source could hide (frames, code objects,
   patched library modules, programs, sockets, the folders it must not read),
   and compares the verdict's machinery after every check; each outcome is
   signed (:mod:`~kata.grading.channel`), so a forged line counts for nothing;
3. **the sandbox** (:mod:`~kata.grading.sandbox`): an unprivileged user of
   its own, bubblewrap (no solutions, no network, own ``/tmp`` and
   ``/dev/shm``, own PID namespace), one cgroup for its memory and process
   count, limits per process; the grader (:mod:`~kata.grading.runner`) reads
   the outcomes itself and ends every process first.

The modules, by role: :mod:`~kata.grading.intake` (taking a submission's
files); :mod:`~kata.grading.vetting` with its :mod:`~kata.grading.rules`;
:mod:`~kata.grading.runner` (test processes and their limits) with
:mod:`~kata.grading.sandbox`, :mod:`~kata.grading.cgroups`,
:mod:`~kata.grading.procs`, :mod:`~kata.grading.spawner` (the grader's side of
the zygote) and :mod:`~kata.grading.events` (reading the results channel,
:mod:`~kata.grading.channel`); in the sandbox :mod:`~kata.grading.zygote`
(what every test process is forked from), :mod:`~kata.grading.child` (a test
process), :mod:`~kata.grading.namespaces`, :mod:`~kata.grading.plugin` (its
pytest plugin) and :mod:`~kata.grading.tripwire`; then
:mod:`~kata.grading.results`, :mod:`~kata.grading.scoring`,
:mod:`~kata.grading.reference`, :mod:`~kata.grading.reports` and
:mod:`~kata.grading.batch` (a whole run); :mod:`~kata.grading.gradescope`
(the autograder bundle) and :mod:`~kata.grading.release` (the learners' copy).

Importing this package imports none of them: the test process imports only
what it needs.
"""

from __future__ import annotations

import importlib

__all__ = ["GradeError", "Limits", "grade"]

_HOMES = {"grade": "kata.grading.batch", "Limits": "kata.grading.runner", "GradeError": "kata.grading.intake"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
