"""The errors a learner's code raises in a run of the checks, traced: each error that leaves a function of the
learner's folder for a caller outside it (a record, a check), whatever then catches it: each in-process run
(tests/selftest/in_process.py) keeps them. A known mistake's run must name the learner's line of each
(tests/selftest/test_known_wrong.py), as the kata's rule says: every error raised in the checks' run is shown
with the learner's file and line (kata.records.caught, kata.harness.failures).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

# Not a learner's error: the kata's own control flow (a spy's refusal, a stub), a generator's end, pytest's outcomes.
NOT_ERRORS = (NotImplementedError, StopIteration, StopAsyncIteration, GeneratorExit, KeyboardInterrupt)


class Escapes:
    """A tracer (sys.settrace) of the functions of ``folder``: as a context manager, it collects each error that
    leaves one of them for a caller outside the folder, ``(kind, function, source) -> "file.py, line N"``."""

    def __init__(self, folder: Path):
        self.folder = str(Path(folder).resolve())
        self.found: dict[tuple[str, str, str], str] = {}
        self._pending: dict[int, BaseException] = {}

    def _mine(self, frame) -> bool:
        return frame is not None and frame.f_code.co_filename.startswith(self.folder)

    def __enter__(self):
        """Trace while the records are asked (kata.records.ask_all): the learner's code runs nowhere else in a run of
        the checks, and tracing every call of pytest's own work too made each run 1.7 times as long."""
        from kata import records

        folder, local, ask_all = self.folder, self._local, records.ask_all

        def call(frame, event, arg):   # every call while asked: as little as it can be (a method call doubles it)
            return local if frame.f_code.co_filename.startswith(folder) else None

        def asked(*args, **kwargs):
            before = sys.gettrace()
            sys.settrace(call)
            try:
                return ask_all(*args, **kwargs)
            finally:
                sys.settrace(before)

        records.ask_all = asked
        self._restore = lambda: setattr(records, "ask_all", ask_all)
        return self

    def _local(self, frame, event, arg):
        if event == "exception":
            self._pending[id(frame)] = arg[1:]   # the error, and its traceback from this frame down
        elif event == "line":
            self._pending.pop(id(frame), None)   # handled in the frame: it goes on
        elif event == "return":
            exc, tb = self._pending.pop(id(frame), (None, None))
            if arg is None and exc is not None and not self._mine(frame.f_back) and self._an_error(exc):
                mine = [f for f in traceback.extract_tb(tb) if f.filename.startswith(self.folder)]
                if mine:   # where it was raised: the last of the learner's lines
                    key = (type(exc).__name__, mine[-1].name, (mine[-1].line or "").strip())
                    self.found.setdefault(key, f"{Path(mine[-1].filename).name}, line {mine[-1].lineno}")
        return self._local

    @staticmethod
    def _an_error(exc: BaseException) -> bool:
        module = type(exc).__module__ or ""
        return not (isinstance(exc, NOT_ERRORS) or module.startswith(("kata", "_pytest", "pytest", "records")))

    def __exit__(self, *exc_info):
        self._restore()


def unnamed(escapes: dict, expected: set, texts: list[str]) -> list[str]:
    """Each error of ``escapes`` (but those in ``expected``: what the reference raises by design, by kind,
    function and source) whose learner's line no text of ``texts`` names."""
    return [f"{kind} from {function} ({where}: {source})" for (kind, function, source), where in escapes.items()
            if (kind, function, source) not in expected and not any(where in text for text in texts)]
