"""Argument types, option groups and text helpers that several subcommands share."""

from __future__ import annotations

import argparse
from functools import cache

from kata.i18n import N_, _, language, say, width

__all__ = ["HelpFormatter", "add_grading_options", "count", "localize", "plot_language", "positive", "seconds"]


def count(text: str) -> int:
    """A whole number >= 0 (a count of images)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(say("{text!r} is not a whole number", text=text)) from None
    if value < 0:
        raise argparse.ArgumentTypeError(say("{value} is negative; a count of images is 0 or more", value=value))
    return value


def positive(text: str) -> int:
    """A whole number >= 1."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError(_("must be at least 1"))
    return value


def seconds(text: str) -> float:
    """A number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(say("{text!r} is not a number of seconds", text=text)) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(_("must be more than 0 seconds"))
    return value


def add_grading_options(p: argparse.ArgumentParser, memory: int = 4096) -> None:
    """The limits and policies `kata grade` and `kata gradescope` share."""
    p.add_argument("--timeout", type=seconds, default=300, metavar="SECONDS",
                   help=_("wall-clock limit for one submission's whole run (default 300)"))
    p.add_argument("--test-timeout", type=seconds, default=30, metavar="SECONDS",
                   help=_("time limit for one check (default 30)"))
    p.add_argument("--memory", type=positive, default=memory, metavar="MB",
                   help=say("memory ceiling of all of a submission's processes together (default {memory})",
                            memory=memory))
    p.add_argument("--processes", type=positive, default=128, metavar="N",
                   help=_("processes and threads a submission may have at once (default 128)"))
    p.add_argument("--disk", type=positive, default=512, metavar="MB",
                   help=_("what a submission may write, all its files together (default 512)"))
    p.add_argument("--slow", action="store_true",
                   help=_("also run the checks marked slow (default: the checks `pytest exercises` runs)"))


# --- text in columns: a Korean glyph is two columns wide ------------------------------------------------------

def _wrap(text: str, columns: int) -> list[str]:
    """``text``'s words in lines of at most ``columns`` terminal columns."""
    lines, line = [], ""
    for word in text.split():
        if line and width(line) + 1 + width(word) > columns:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


# argparse's own words in a help page, as Python 3.10 and later write them (translated where shown).
_ARGPARSE = (N_("usage: "), N_("positional arguments"), N_("options"), N_("show this help message and exit"))


def localize(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with argparse's own words in its help (the group titles, ``-h``'s help) in the kata's language."""
    for group in parser._action_groups:
        group.title = _(group.title) if group.title else group.title
    for action in parser._actions:
        if "-h" in action.option_strings and action.help:
            action.help = _(action.help)
    return parser


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, wrapped by terminal columns where a text has wide (Korean) glyphs; English as
    argparse wraps it."""

    def add_usage(self, usage, actions, groups, prefix=None):
        if prefix is None and _(_ARGPARSE[0]) != _ARGPARSE[0]:
            prefix = _(_ARGPARSE[0])
        return super().add_usage(usage, actions, groups, prefix)

    def _split_lines(self, text, width_):
        if width(text) == len(text):
            return super()._split_lines(text, width_)
        return _wrap(self._whitespace_matcher.sub(" ", text).strip(), width_)

    def _fill_text(self, text, width_, indent):
        if width(text) == len(text):
            return super()._fill_text(text, width_, indent)
        return "\n".join(indent + line for line in _wrap(text, width_ - len(indent)))


# --- plots: Korean labels where a font can draw them --------------------------------------------------------

# Fonts with Hangul, in the order they are looked for (Linux, macOS, Windows).
_KOREAN_FONTS = ("Noto Sans CJK KR", "Noto Sans KR", "NanumGothic", "Nanum Gothic", "UnDotum", "Baekmuk Gulim",
                 "Apple SD Gothic Neo", "AppleGothic", "Malgun Gothic", "Noto Sans CJK JP", "Droid Sans Fallback")


@cache
def _korean_font() -> str | None:
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in _KOREAN_FONTS if name in installed), None)


def plot_language():
    """``(translate, rc)`` for a plot: its labels in the kata's language and the rcParams to draw them with
    (``matplotlib.rc_context(rc)`` around the drawing). Korean where an installed font has Hangul; else the
    English, which any font draws, rather than empty boxes."""
    font = _korean_font() if language() != "en" else None
    if font is None:
        return (lambda message: message), {}
    return _, {"font.family": [font, "DejaVu Sans"]}
