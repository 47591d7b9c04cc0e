"""Grading a class: ``kata grade`` and ``kata gradescope`` (what their grades rest on: docs/teaching.md, "The
trust model"). The modules, in the order a run meets them: batch, intake, vetting, sandbox, slots and server,
leftovers, hostile, runner, scoring, reports, gradescope and texts. Importing this package imports none of them.
"""

from __future__ import annotations

import importlib

__all__ = ["GradeError", "Limits", "grade"]

_HOMES = {"grade": "kata.grading.batch", "Limits": "kata.grading.sandbox", "GradeError": "kata.grading.intake"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
