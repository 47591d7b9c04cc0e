"""Checks for exercise 8, distributed (being written).

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""
