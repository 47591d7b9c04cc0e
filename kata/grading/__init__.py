"""Grading a class: ``kata grade`` and ``kata gradescope``.

A grade must be one a teacher can defend, and one a submission's own process
cannot talk up. So the submission's process only answers questions: in its
sandbox (kata/grading/sandbox.py: bubblewrap, limits; kata/grading/server.py,
kata/grading/slots.py; each hand-in in a sandbox restored and checked after the
one before, kata/grading/leftovers.py) its functions are asked the exercises'
records (records/NAME.py) on inputs drawn for this hand-in, and give back data
(kata/records/wire.py), every byte of it read as hostile input
(kata/grading/hostile.py); what its source declares is read in the grader. Every
verdict is computed outside it: the checks run in the grader's own process on
those answers (kata/grading/runner.py), and a check's points are earned when it
passes there (kata/grading/scoring.py). A forged answer is an ordinary failing
check; the points resting on what only the process can report (a constant, a
shape, a property, a behaviour) are listed as such.

The other modules: intake (taking a hand-in), vetting (notes for review, never
points), reports, batch (a whole run) and gradescope (the autograder bundle).

Importing this package imports none of them.
"""

from __future__ import annotations

import importlib

__all__ = ["GradeError", "Limits", "grade"]

_HOMES = {"grade": "kata.grading.batch", "Limits": "kata.grading.sandbox", "GradeError": "kata.grading.intake"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
