"""Helpers for the checks in tests/: what the checks compare learners' code with.

- :mod:`kata.checks.book`: the book's own pieces (the CNN, the transforms, the
  label, the training loop, the history's names);
- :mod:`kata.checks.messages`: values and device errors put into words.
"""
