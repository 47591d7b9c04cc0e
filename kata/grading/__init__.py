"""Grading a class: ``kata grade`` and ``kata gradescope`` (what their grades rest on: docs/teaching.md, "The
trust model").

A hand-in's code only answers questions, in a sandbox; every verdict is computed outside it. The modules, in
the order a run meets them: batch (a whole run), intake (taking a hand-in), vetting (notes for review, never
points), sandbox (what protects the machine), slots and server (a job's two servers: the records', in the
sandbox; the verdicts', the grader's own), leftovers (the sandbox as it was, after each hand-in), hostile (every
byte from a sandbox), runner (one hand-in), scoring (points), reports (what is written), gradescope (the
autograder bundle) and texts (the longer sentences). Importing this package imports none of them.
"""

from __future__ import annotations

import importlib

__all__ = ["GradeError", "Limits", "grade"]

_HOMES = {"grade": "kata.grading.batch", "Limits": "kata.grading.sandbox", "GradeError": "kata.grading.intake"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
