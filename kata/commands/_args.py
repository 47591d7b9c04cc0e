"""Argument types and option groups that several subcommands share."""

from __future__ import annotations

import argparse

__all__ = ["add_grading_options", "count", "positive", "seconds"]


def count(text: str) -> int:
    """A whole number >= 0 (a count of images)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a count of images is 0 or more")
    return value


def positive(text: str) -> int:
    """A whole number >= 1."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def seconds(text: str) -> float:
    """A number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def add_grading_options(p: argparse.ArgumentParser, memory: int = 4096) -> None:
    """The limits and policies `kata grade` and `kata gradescope` share."""
    p.add_argument("--timeout", type=seconds, default=300, metavar="SECONDS",
                   help="wall-clock limit for one submission's whole run (default 300)")
    p.add_argument("--test-timeout", type=seconds, default=30, metavar="SECONDS",
                   help="time limit for one check (default 30)")
    p.add_argument("--memory", type=positive, default=memory, metavar="MB",
                   help=f"memory ceiling of all of a submission's processes together (default {memory})")
    p.add_argument("--processes", type=positive, default=128, metavar="N",
                   help="processes and threads a submission may have at once (default 128)")
    p.add_argument("--disk", type=positive, default=512, metavar="MB",
                   help="what a submission may write, all its files together (default 512)")
    p.add_argument("--slow", action="store_true",
                   help="also run the checks marked slow (default: the checks `pytest exercises` runs)")
