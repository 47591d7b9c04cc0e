"""Grading a class: ``kata grade`` and ``kata gradescope``.

A grade must be one a teacher can defend, and one a submission's own process
cannot talk up. Each check's points rest on two things:

1. **the check passed** in the submission's sandbox (kata/grading/sandbox.py:
   bubblewrap, limits; kata/grading/server.py, kata/grading/slots.py; each
   hand-in in a sandbox restored and checked after the one before,
   kata/grading/leftovers.py), read from pytest's own report log
   (kata/grading/runner.py), every byte of it as hostile input
   (kata/grading/hostile.py);
2. **the audit agrees**: the submission's contract functions, called again on
   inputs drawn for this hand-in in a sandbox without the checks, gave the
   reference's answers, and its source declares the reference's settings
   (kata/audit; compared outside, kata/audit/reference.py). A check that
   passed while a fact resting on the work or the source disagrees earns
   nothing and the row says ``forged:``; one resting on the graded process,
   ``not confirmed:`` (kata/grading/scoring.py).

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
