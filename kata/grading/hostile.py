"""Every byte from a sandbox is hostile input: its report files opened, and its lines decoded, with care.

A report is opened without following a link or waiting (a FIFO in its place can't hold a server); a line is decoded
only when short and shallow enough for ``json.loads`` (100,000 nested lists would raise RecursionError), and
whatever decoding raises is the line's problem, never the run's.
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate

from kata.i18n import say

__all__ = ["DEPTH_LIMIT", "LINE_LIMIT", "Unreadable", "decode", "open_regular"]

# Characters in one line: the reference's largest record is about 2.6 MB, a learner's transform that keeps
# 178x178 images makes it about 11 MB; as much as the grader reads of a whole report (server.REPORT_LIMIT).
LINE_LIMIT = 48 << 20
DEPTH_LIMIT = 100      # brackets open at once (the deepest record is about 15)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


class Unreadable(ValueError):
    """A report, or one of its lines, the grader does not read: the message says why."""


def decode(line: str):
    """The JSON value of one line from a sandbox, or :class:`Unreadable`."""
    if len(line) > LINE_LIMIT:
        raise Unreadable(say("a line of {n:,} characters (at most {limit:,} are read)", n=len(line), limit=LINE_LIMIT))
    brackets = _BRACKETS.findall(_STRING.sub("", line))
    if max(accumulate(1 if b in "[{" else -1 for b in brackets), default=0) > DEPTH_LIMIT:
        raise Unreadable(say("a line nested more than {limit} deep", limit=DEPTH_LIMIT))
    try:
        return json.loads(line)
    except Exception as exc:  # noqa: BLE001 - whatever the line makes the decoder do, it is the line's problem
        raise Unreadable(say("a line that is not JSON ({kind})", kind=type(exc).__name__)) from None


def open_regular(path: str | os.PathLike):
    """``path`` opened for reading in binary, when it is a regular file and not a link; else :class:`Unreadable`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise Unreadable(say("{name} could not be opened ({error})", name=os.path.basename(path),
                             error=err.strerror)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unreadable(say("{name} is not a regular file", name=os.path.basename(path)))
    return os.fdopen(fd, "rb")
