"""What a test process wrote on its results channel, read by the grader, believed only where it may be.

The grading plugin (kata/grading/plugin.py) writes one JSON line per event.
The grader decides from them, and from what it saw itself (how the process
ended, what it had to kill), what each check's outcome is:

* a "passed" or "skipped" counts only for the check that was running (its
  "start" came last), so a line written for another check counts for nothing;
* a check that started and never reported failed, with how the process ended;
* a check that did not run at all fails as "not run" (kata/grading/results.py).
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

from kata.grading import channel

__all__ = ["OUTPUT_KEEP", "ChildRun", "OutputTail", "RunningCheck", "accept", "describe_end", "failed",
           "importing_at_end", "read_events"]

OUTPUT_KEEP = 32 << 10          # bytes of a test process's output kept from its start, and from its end
RESULTS_LIMIT = 32 << 20        # bytes of a results file read at most
MESSAGE_LIMIT = 20000
SIGNAL_NAMES = {getattr(signal, n): n for n in dir(signal) if n.startswith("SIG") and not n.startswith("SIG_")}
OUTCOMES = ("passed", "failed", "skipped", "not run")


class OutputTail:
    """The first and last OUTPUT_KEEP bytes of a stream, and how much there was."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_KEEP - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * OUTPUT_KEEP:
                del self.tail[:-OUTPUT_KEEP]

    def text(self) -> str:
        tail = bytes(self.tail[-OUTPUT_KEEP:])
        cut = self.total - len(self.head) - len(tail)
        middle = f"\n[... {cut:,} bytes of output cut ...]\n" if cut > 0 else ""
        return bytes(self.head).decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace")


@dataclass
class ChildRun:
    """One test process, as the grader saw it."""

    events: list[dict]
    output: OutputTail
    returncode: int | None
    killed_by: str | None   # "wall": the submission's time ran out; "watchdog": one check overran;
    #                         "memory": its processes together passed the ceiling
    seconds: float
    leftovers: int = 0      # processes still there after every attempt to end them (should be 0)
    forged: int = 0         # lines on the results channel not signed by the test process's plugin


class RunningCheck:
    """Follows a results file as it grows: which check is running, since when."""

    def __init__(self, path: Path, key: str):
        self.path = path
        self.key = key
        self.offset = 0
        self.partial = b""
        self.running: str | None = None
        self.since = 0.0

    def poll(self) -> tuple[str | None, float]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except OSError:
            return self.running, self.since
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            event = channel.verify(line, self.key)
            if event is None:
                continue
            if event["e"] == "start":
                self.running, self.since = event.get("id"), time.monotonic()
            elif event["e"] == "result" and event.get("id") == self.running:
                self.running = None
        return self.running, self.since


def read_events(path: Path, key: str) -> tuple[list[dict], int]:
    """The signed events of a results file, and how many lines in it were not (forged)."""
    try:
        with open(path, "rb") as f:
            data = f.read(RESULTS_LIMIT)
    except OSError:
        return [], 0
    return channel.read(data, key)


def failed(kind: str, message: str) -> dict:
    return {"outcome": "failed", "kind": kind, "message": message, "duration": 0.0}


def accept(events: list[dict]) -> tuple[dict[str, dict], str | None]:
    """The results of one test process, and the check it was running when it ended (None if none).
    A "passed" (or "skipped") is believed only for the check that was running."""
    results: dict[str, dict] = {}
    running = None
    for event in events:
        kind, nodeid = event["e"], event.get("id")
        if kind == "start" and isinstance(nodeid, str):
            running = nodeid
        elif kind == "result" and isinstance(nodeid, str):
            outcome = event.get("outcome")
            if outcome not in OUTCOMES or (outcome in ("passed", "skipped") and nodeid != running):
                continue
            duration = event.get("duration")
            results[nodeid] = {
                "outcome": outcome, "kind": str(event.get("kind") or ""),
                "message": str(event.get("message") or "")[:MESSAGE_LIMIT],
                "duration": float(duration) if isinstance(duration, (int, float)) else 0.0,
            }
            if nodeid == running:
                running = None
    return results, running


def importing_at_end(events: list[dict], modules: tuple[str, ...]) -> str | None:
    """The submission module whose import had begun and not ended when the process ended."""
    importing = None
    for event in events:
        if event["e"] == "import" and event.get("module") in modules:
            importing = event["module"]
        elif event["e"] in ("imported", "start"):
            importing = None
    return importing


def describe_end(run: ChildRun, memory_mb: int) -> str:
    """How a test process that did not finish its checks ended, in words."""
    if run.killed_by == "memory":
        return f"was ended: its processes together passed the memory ceiling ({memory_mb:,} MB)"
    exit_event = next((e for e in reversed(run.events) if e["e"] == "exit"), None)
    code, sig = run.returncode, None
    if exit_event is not None and isinstance(exit_event.get("signal"), int):
        sig = exit_event["signal"]
    elif exit_event is not None and isinstance(exit_event.get("code"), int):
        code = exit_event["code"]
    elif code is not None and code < 0:
        sig = -code
    elif code is not None and code > 128 and code - 128 in SIGNAL_NAMES:
        sig = code - 128   # bubblewrap and sh pass a signal on as 128 + its number
    if sig is not None:
        name = SIGNAL_NAMES.get(sig, f"signal {sig}")
        why = {"SIGKILL": ": out of memory, or killed", "SIGSEGV": ": a crash in native code",
               "SIGXCPU": ": it used up its CPU time", "SIGABRT": ": aborted"}.get(name, "")
        return f"was killed by {name}{why}"
    finish = next((e for e in run.events if e["e"] == "finish"), None)
    if finish is not None and finish.get("exitstatus") == 3:
        return "ended with an internal error of pytest (the time limit of a check can strike inside pytest itself)"
    if finish is not None:
        return (f"stopped the test run early (exit status {code}: KeyboardInterrupt or pytest.exit() "
                f"in the submission's code?)")
    if code == 0:
        return "exited with status 0 in the middle of the checks (os._exit() in the submission's code?)"
    return f"exited with status {code} in the middle of the checks (os._exit() or a crash?)"
