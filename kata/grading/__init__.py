"""Grading a class: ``kata grade`` and ``kata gradescope`` (what their grades rest on: docs/teaching.md, "The
trust model"). The modules, in the order a run meets them: batch, intake, vetting, sandbox, slots and server,
leftovers, hostile, runner, scoring, reports, gradescope and texts. Importing this package imports none of them.
"""
