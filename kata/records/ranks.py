"""Ranks: a record's work run on a real ``torch.distributed`` process group of a few processes, as data.

:func:`on_ranks` forks ``world`` processes from the one asking the records (the learner's module, imported
there, comes along), joins them in a gloo process group over loopback on a free port (inside the grader's
sandbox only loopback exists, which is all it needs), runs ``work(rank, world)`` on each and returns what each
rank returned, in rank order. Forked processes start in a fraction of a second, where spawned ones would import
torch again; a platform without ``os.fork`` is told so in one line.

Ranks are forked from a process that has never run a backward pass (PyTorch refuses autograd in a child forked
after one): the records call it in a laptop of :mod:`kata.records.elsewhere`, and a rank on the simulated
accelerator installs it itself. A rank that raises makes :func:`on_ranks` raise :class:`RankFailed` (the rank's
error, its kind and text, and where the learner's code raised it); a rank that does not finish within
:data:`HANG_SECONDS` (the other ranks wait in a collective it skipped, or it waits in one they skipped) is stopped
and reported by the line of the learner's code it was waiting at: :class:`RankHung`. Both carry
``kata_raised_at`` and ``kata_placed``, which :func:`kata.records.answer` sends as any error's.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from kata.i18n import _, say

__all__ = ["HANG_SECONDS", "WORLD", "RankEnded", "RankFailed", "RankHung", "as_data", "backend_for", "from_data",
           "on_ranks"]

HANG_SECONDS = 4.0   # a rank that has not finished by then waits for something no other rank will do
WORLD = 2   # the ranks a record runs on: the fewest that show what one process can't


class RankFailed(RuntimeError):
    """A rank's error, as the rank met it (``kind``, ``text``, ``rank``)."""

    met_elsewhere = True   # kata.records.answer sends where it was (kata_raised_at, kata_placed) as the rank saw it

    def __init__(self, rank: int, kind: str, text: str, raised_at=None, placed=None):
        super().__init__(f"rank {rank}: {kind}: {text}")
        self.rank, self.kind, self.text = rank, kind, text
        self.kata_raised_at, self.kata_placed = raised_at, placed or {}


class RankHung(RankFailed):
    """A rank still waiting after :data:`HANG_SECONDS`, and where (the learner's line, when it was there)."""

    def __init__(self, hung: list[tuple[int, list | None]], done: tuple[int, ...] = ()):
        """``hung``: each rank still waiting and where (its line first: a rank that had one said it first)."""
        said = "; ".join(say("rank {rank} hung at {where} (waited {seconds:g} s)", rank=rank, where=_where(at),
                             seconds=HANG_SECONDS) for rank, at in hung)
        if done:
            said += say("; rank {ranks} had returned", ranks=", ".join(map(str, done)))
        RuntimeError.__init__(self, said)
        (self.rank, raised_at), self.kind, self.text = hung[0], "RankHung", str(self)
        self.kata_raised_at, self.kata_placed = raised_at, {}


def _where(raised_at) -> str:
    if not raised_at:
        return _("outside your code")
    return say("{file}, line {line}: {source}", file=Path(raised_at[0]).name, line=raised_at[1], source=raised_at[3])


class RankEnded(RankHung):
    """A rank whose process ended without an answer: gloo ends a process whose collectives do not pair with the
    other ranks' (a collective one rank alone calls meets the other's next one, of another size)."""

    def __init__(self, rank: int):
        RuntimeError.__init__(self, say(
            "rank {rank}'s process ended without an answer: its collectives did not pair with the other ranks' (one "
            "that only some ranks call meets the others' next one), and gloo ended it", rank=rank))
        self.rank, self.kind, self.text = rank, "RankEnded", str(self)
        self.kata_raised_at, self.kata_placed = None, {}


def backend_for(device=None) -> str:
    """The process group's backend: gloo for the CPU, and for ``device``'s type too (CUDA's tensors and the
    simulated accelerator's, whose collectives compute on the CPU)."""
    kind = str(getattr(device, "type", device)).split(":")[0] if device is not None else "cpu"
    return "gloo" if kind == "cpu" else f"cpu:gloo,{kind}:gloo"


def as_data(exc: RankFailed) -> dict:
    """A rank's error as plain data (what a laptop of kata.records.elsewhere sends back); :func:`from_data` undoes."""
    return {"rank": exc.rank, "kind": exc.kind, "text": exc.text, "raised_at": exc.kata_raised_at,
            "placed": exc.kata_placed, "said": str(exc)}


def from_data(found: dict) -> RankFailed:
    """The error :func:`as_data` described: a stub's NotImplementedError as itself (every stub's reads the same)."""
    if found["kind"] == "NotImplementedError":
        return NotImplementedError(found["text"])
    kind = {"RankHung": RankHung, "RankEnded": RankEnded}.get(found["kind"], RankFailed)
    exc = kind.__new__(kind)
    RuntimeError.__init__(exc, found["said"])
    exc.rank, exc.kind, exc.text = found["rank"], found["kind"], found["text"]
    exc.kata_raised_at, exc.kata_placed = found["raised_at"], found["placed"] or {}
    return exc


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _learner_line(frame, folder) -> list | None:
    """The innermost frame of ``frame``'s stack in a file under ``folder``, as ``raised_at`` says it."""
    from kata import records

    root = Path(folder).resolve() if folder else None
    while frame is not None and root is not None:
        if Path(frame.f_code.co_filename).resolve().is_relative_to(root):
            return records.line_of(frame, frame.f_lineno)
        frame = frame.f_back
    return None


def _send(fd: int, value) -> None:
    data = pickle.dumps(value)
    os.write(fd, len(data).to_bytes(8, "big"))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int):
    """One value :func:`_send` wrote on ``fd`` (readable now); None when the writer closed it first."""
    data, need, size = b"", 8, None
    while len(data) < need:
        chunk = os.read(fd, need - len(data))
        if not chunk:
            return None
        data += chunk
        if size is None and len(data) == 8:
            size = need = int.from_bytes(data, "big")
            data = b""
    return pickle.loads(data)


def _transport(exc: BaseException) -> bool:
    """Whether ``exc`` is gloo's word that a peer went away or stopped answering (a consequence of another rank's
    hang or end, said as that), not an error of this rank's own."""
    text = str(exc)
    return type(exc).__name__.startswith("Dist") or "third_party/gloo" in text or "Connection closed by peer" in text


def _gather(pipes: list[int], seconds: float) -> list:
    """What each rank sent (``{"ended": True}`` for one whose process ended without a word, None for one still
    silent when ``seconds`` passed), and no longer once a rank has sent an error or ended (the others would only
    wait for it)."""
    found, pending, deadline = [None] * len(pipes), dict(enumerate(pipes)), time.monotonic() + seconds
    while pending and (left := deadline - time.monotonic()) > 0:
        ready = select.select(list(pending.values()), [], [], left)[0]
        for rank in [r for r, fd in pending.items() if fd in ready]:
            found[rank] = _receive(pending.pop(rank)) or {"ended": True}
            if ("error" in found[rank] and not found[rank].get("transport")) or "ended" in found[rank]:
                return found   # the cause: a transport error may only follow another rank's
    return found


def _rank(rank: int, world: int, port: int, work: Callable, folder, device, fd: int) -> None:
    """A forked rank: join the group, run ``work``, send what it gave (or why not), wait to be stopped."""
    main = threading.main_thread().ident

    def hung():   # the process stays (the other ranks would meet a closed connection) until on_ranks ends it
        frame = sys._current_frames().get(main)
        _send(fd, {"hung": _learner_line(frame, folder)})

    watchdog = threading.Timer(HANG_SECONDS, hung)
    watchdog.daemon = True
    try:
        import torch
        import torch.distributed as dist

        from kata import records

        torch.set_num_threads(1)
        watchdog.start()
        if device is not None and str(device).split(":")[0] != "cpu":
            from kata import sim

            if sim.is_sim(str(device)):
                sim.install()   # here, before this rank's first backward pass (never in the process it forks from)
        dist.init_process_group(backend_for(device), init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=3 * HANG_SECONDS))
        try:
            found = {"data": work(rank, world)}
        except Exception as exc:  # noqa: BLE001 - the learner's error is this rank's answer
            found = {"error": [type(exc).__name__, str(exc), records.raised_within(exc, folder),
                               records.placed(exc, folder)], "transport": _transport(exc)}
        watchdog.cancel()
        _send(fd, found)
        while True:   # kept in the group until every rank reported: one that left would break the others' waits
            time.sleep(60)
    except BaseException:  # noqa: BLE001 - whatever happens in a forked rank, it reports and exits
        with contextlib.suppress(Exception):
            _send(fd, {"error": ["RuntimeError", traceback.format_exc(limit=3).strip().splitlines()[-1], None, {}]})
    finally:
        os._exit(0)


def on_ranks(work: Callable[[int, int], object], module=None, world: int = WORLD, device=None) -> list:
    """``work(rank, world)`` on each of ``world`` forked ranks of a gloo process group (CPU tensors, and those of
    ``device``'s type): each rank's answer, in rank order. The learner's code is that of ``module`` (its folder
    names the lines of errors and hangs). Raises :class:`RankFailed` or :class:`RankHung`."""
    if not hasattr(os, "fork"):
        raise RuntimeError("the distributed checks run their ranks as forked processes, which this platform "
                           "does not have: run them on Linux or macOS")
    from kata import records

    folder = records._folder_of(module) if module is not None else None
    port = _free_port()
    children, pipes = [], []
    sys.stdout.flush(), sys.stderr.flush()
    for rank in range(world):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:   # the rank
            os.close(read)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, 0)
            _rank(rank, world, port, work, folder, device, write)
        os.close(write)
        children.append(pid)
        pipes.append(read)
    try:
        found = _gather(pipes, HANG_SECONDS + 3)   # every watchdog has reported by then, on a busy machine too
    finally:
        for fd in pipes:
            os.close(fd)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    hung = [rank for rank, one in enumerate(found) if one is None or "hung" in one]
    ended = [rank for rank, one in enumerate(found) if one is not None and "ended" in one]
    errors = [rank for rank, one in enumerate(found) if one is not None and "error" in one]
    # the cause first: a rank's own error; then a rank that ended or hung, which the others' transport errors follow
    own = [rank for rank in errors if not found[rank].get("transport")] or ([] if hung or ended else errors)
    if own:
        kind, text, at, placed = found[own[0]]["error"]
        raise RankFailed(own[0], kind, text, at, placed)
    if ended:
        raise RankEnded(ended[0])
    if hung:
        done = tuple(r for r, one in enumerate(found) if one is not None and "data" in one)
        places = [(rank, (found[rank] or {}).get("hung")) for rank in hung]
        raise RankHung(sorted(places, key=lambda one: one[1] is None), done)
    return [one["data"] for one in found]
