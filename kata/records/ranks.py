"""Ranks: a record's work run on a real ``torch.distributed`` process group of a few processes, as data.

:func:`on_ranks` forks ``world`` processes from the one asking the records (the learner's module, imported
there, comes along), joins them in a gloo process group over loopback on a free port (inside the grader's
sandbox only loopback exists, which is all it needs), runs ``work(rank, world)`` on each and returns what each
rank returned, in rank order. Forked processes start in a fraction of a second, where spawned ones import torch
again: where there is no ``os.fork`` (Windows), or ``KATA_RANKS=spawn`` asks for it, each rank is a new interpreter
instead (:func:`main`), which runs the laptop's whole job again as that rank: there, each :func:`on_ranks` call runs
its ``work`` for that rank alone, sends the answer to the laptop and returns every rank's, as the laptop gathered
them. What a job does besides :func:`on_ranks` runs once in each rank too, so it must be harmless to repeat, and
a job ends at its first failed call (a :class:`RankFailed` ends its ranks).

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
import json
import os
import pickle
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from kata.i18n import _, say

__all__ = ["HANG_SECONDS", "SPAWN", "START_SECONDS", "WORLD", "RankEnded", "RankFailed", "RankHung", "as_data",
           "backend_for", "from_data", "main", "on_ranks", "spawning"]

HANG_SECONDS = 4.0   # a rank that has not finished by then waits for something no other rank will do
START_SECONDS = 30.0   # a spawned rank imports torch and the learner's module before its first work
WORLD = 2   # the ranks a record runs on: the fewest that show what one process can't
SPAWN = "KATA_RANKS"   # =spawn: spawned ranks where fork exists too (how the fallback is tested)
_AS_RANK = "KATA_RANK_OF"   # a spawned rank's environment: which rank it is, where its group and laptop are


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


def _send(channel: socket.socket, value) -> None:
    data = pickle.dumps(value)
    channel.sendall(len(data).to_bytes(8, "big") + data)


def _receive(channel: socket.socket):
    """One value :func:`_send` wrote on ``channel``; None when the writer closed it first."""
    data, need, size = b"", 8, None
    while len(data) < need:
        chunk = channel.recv(need - len(data))
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


def _gather(channels: list[socket.socket], seconds: float) -> list:
    """What each rank sent (``{"ended": True}`` for one whose process ended without a word, None for one still
    silent when ``seconds`` passed), and no longer once a rank has sent an error or ended (the others would only
    wait for it)."""
    found, pending, deadline = [None] * len(channels), dict(enumerate(channels)), time.monotonic() + seconds
    while pending and (left := deadline - time.monotonic()) > 0:
        ready = select.select(list(pending.values()), [], [], left)[0]
        for rank in [r for r, fd in pending.items() if fd in ready]:
            found[rank] = _receive(pending.pop(rank)) or {"ended": True}
            if ("error" in found[rank] and not found[rank].get("transport")) or "ended" in found[rank]:
                return found   # the cause: a transport error may only follow another rank's
    return found


def _joined(rank: int, world: int, port: int, device, timeout: float) -> None:
    """This process in the group of ``world`` ranks on ``port`` (once), on one thread, the simulated accelerator
    installed first where ``device`` is on it (here, before this rank's first backward pass)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if device is not None and str(device).split(":")[0] != "cpu":
        from kata import sim

        if sim.is_sim(str(device)):
            sim.install()
    if not dist.is_initialized():
        dist.init_process_group(backend_for(device), init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, timeout=timedelta(seconds=timeout))


class _Report:
    """A rank's one report of a piece of work on ``channel``: what ``work`` gave, its error, or (the watchdog's,
    after :data:`HANG_SECONDS`) the learner's line the rank waits at; whichever comes first, alone."""

    def __init__(self, channel: socket.socket, folder):
        self.channel, self.folder, self.lock, self.sent = channel, folder, threading.Lock(), False
        main = threading.main_thread().ident
        self.watchdog = threading.Timer(HANG_SECONDS, lambda: self.send(
            {"hung": _learner_line(sys._current_frames().get(main), folder)}))
        self.watchdog.daemon = True
        self.watchdog.start()

    def send(self, found: dict) -> None:
        with self.lock:
            if not self.sent:
                self.sent = True
                _send(self.channel, found)

    def run(self, work: Callable, rank: int, world: int) -> None:
        from kata import records

        try:
            found = {"data": work(rank, world)}
        except Exception as exc:  # noqa: BLE001 - the learner's error is this rank's answer
            found = {"error": [type(exc).__name__, str(exc), records.raised_within(exc, self.folder),
                               records.placed(exc, self.folder)], "transport": _transport(exc)}
        self.watchdog.cancel()
        self.send(found)


def _rank(rank: int, world: int, port: int, work: Callable, folder, device, channel: socket.socket) -> None:
    """A forked rank: join the group, run ``work``, send what it gave (or why not), wait to be stopped."""
    try:
        report = _Report(channel, folder)   # the watchdog's time counts the group's start too
        _joined(rank, world, port, device, 3 * HANG_SECONDS)
        report.run(work, rank, world)
        while True:   # kept in the group until every rank reported: one that left would break the others' waits
            time.sleep(60)
    except BaseException:  # noqa: BLE001 - whatever happens in a forked rank, it reports and exits
        _broke(channel)
    finally:
        os._exit(0)


def _broke(channel: socket.socket) -> None:
    """Report the error being handled, met outside the learner's work (the rank's own machinery), on ``channel``."""
    with contextlib.suppress(Exception):
        _send(channel, {"error": ["RuntimeError", traceback.format_exc(limit=3).strip().splitlines()[-1], None, {}]})


def _forked(work: Callable, world: int, folder, device) -> tuple[list, Callable]:
    """``world`` forked ranks at work: their channels, and what ends them."""
    port = _free_port()
    children, channels = [], []
    sys.stdout.flush(), sys.stderr.flush()
    for rank in range(world):
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:   # the rank
            ours.close()
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, 0)
            _rank(rank, world, port, work, folder, device, theirs)
        theirs.close()
        children.append(pid)
        channels.append(ours)

    def end() -> None:
        for channel in channels:
            channel.close()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return channels, end


class _Spawned:
    """A laptop's spawned ranks (:func:`main`): started at its job's first :func:`on_ranks` call, each running the
    job again as its rank, and kept for the job's next calls."""

    current: _Spawned | None = None
    ended = False   # a call of this job failed and its ranks are gone: its next call would meet new ranks at its first

    def __init__(self, world: int, job: str):
        listener = socket.create_server(("127.0.0.1", 0))
        self.key, self.world, self.processes, self.channels = secrets.token_hex(16), world, [], [None] * world
        spec = {"world": world, "port": _free_port(), "laptop": listener.getsockname()[1], "key": self.key}
        from kata.records.elsewhere import child_env

        sys.stdout.flush(), sys.stderr.flush()
        try:
            for rank in range(world):
                env = child_env(**{_AS_RANK: json.dumps({**spec, "rank": rank})})
                self.processes.append(subprocess.Popen([sys.executable, "-m", "kata.records.ranks", job], env=env,
                                                       stdin=subprocess.DEVNULL))
            self._meet(listener, time.monotonic() + START_SECONDS)
        except BaseException:
            self.end()
            raise
        finally:
            listener.close()

    def _meet(self, listener: socket.socket, deadline: float) -> None:
        """Each rank's channel, as it connects and names itself with the key."""
        listener.settimeout(0.5)
        while None in self.channels:
            for rank, process in enumerate(self.processes):
                if process.poll() is not None and self.channels[rank] is None:
                    raise RuntimeError(say("rank {rank}'s new Python process ended (exit status {status}) before it "
                                           "reached its work", rank=rank, status=process.returncode))
            if time.monotonic() > deadline:
                raise RuntimeError(say("the spawned ranks did not all start within {seconds:g} s",
                                       seconds=START_SECONDS))
            with contextlib.suppress(TimeoutError):
                channel = listener.accept()[0]
                channel.settimeout(START_SECONDS)
                hello = _receive(channel)
                channel.settimeout(None)
                if isinstance(hello, dict) and hello.get("key") == self.key and self.channels[hello["rank"]] is None:
                    self.channels[hello["rank"]] = channel
                else:
                    channel.close()

    def end(self) -> None:
        for channel in filter(None, self.channels):
            channel.close()
        for process in self.processes:
            process.kill()
            process.wait()
        if _Spawned.current is self:
            _Spawned.current, _Spawned.ended = None, True


def _spawned(world: int) -> tuple[list, Callable]:
    """The laptop's spawned ranks (started now, for its job's first call): their channels, and what ends them."""
    from kata.records import elsewhere

    if elsewhere.running is None:
        raise RuntimeError("spawned ranks run a laptop's job again: on_ranks runs only in a laptop "
                           "(kata.records.elsewhere)")
    if _Spawned.ended:
        raise RuntimeError("a call of this job failed and ended its spawned ranks, which run the job from its start: "
                           "a job ends at its first failed on_ranks call")
    if _Spawned.current is None or _Spawned.current.world != world:
        _Spawned.current = _Spawned(world, str(elsewhere.running))
    return _Spawned.current.channels, _Spawned.current.end


_as_rank: dict | None = None   # in a spawned rank: which it is, its group's port, its channel to the laptop


def _spawned_rank(work: Callable, folder, device) -> list:
    """In a spawned rank, an :func:`on_ranks` call: this rank's ``work``, reported; every rank's answer, as the laptop
    gathered them (the process ends here where the laptop sends none: a rank failed or hung)."""
    rank, world, channel = _as_rank["rank"], _as_rank["world"], _as_rank["channel"]
    _joined(rank, world, _as_rank["port"], device, START_SECONDS)   # the others may still be importing
    _Report(channel, folder).run(work, rank, world)
    everyone = _receive(channel)
    if everyone is None:
        os._exit(0)
    return everyone


def spawning() -> bool:
    """Whether :func:`on_ranks` spawns its ranks: where there is no fork, or ``KATA_RANKS=spawn`` asks."""
    return not hasattr(os, "fork") or os.environ.get(SPAWN) == "spawn"


def on_ranks(work: Callable[[int, int], object], module=None, world: int = WORLD, device=None) -> list:
    """``work(rank, world)`` on each of ``world`` ranks of a gloo process group (CPU tensors, and those of
    ``device``'s type): each rank's answer, in rank order. The learner's code is that of ``module`` (its folder
    names the lines of errors and hangs). Raises :class:`RankFailed` or :class:`RankHung`."""
    from kata import records

    folder = records._folder_of(module) if module is not None else None
    if _as_rank is not None:
        return _spawned_rank(work, folder, device)
    spawned = spawning()
    first = spawned and _Spawned.current is None
    channels, end = _spawned(world) if spawned else _forked(work, world, folder, device)
    try:   # every watchdog has reported by then, on a busy machine too (spawned ranks: once they have started)
        found = _gather(channels, HANG_SECONDS + 3 + (START_SECONDS if first else 0))
    except BaseException:
        end()
        raise
    if not spawned or any(one is None or "data" not in one for one in found):
        end()
    else:
        for channel in channels:
            _send(channel, [one["data"] for one in found])
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


def main(argv: list[str]) -> int:
    """A spawned rank (``python -m kata.records.ranks JOB``, ``KATA_RANK_OF`` in its environment): the laptop's job
    ``JOB`` run again, each :func:`on_ranks` call of it as this rank."""
    global _as_rank
    _as_rank = json.loads(os.environ.pop(_AS_RANK))
    channel = socket.create_connection(("127.0.0.1", _as_rank["laptop"]))
    _send(channel, {"key": _as_rank["key"], "rank": _as_rank["rank"]})
    _as_rank["channel"] = channel
    from kata.records import elsewhere

    try:
        elsewhere.run(argv[0])   # what it returns is the laptop's to give
    except BaseException:  # noqa: BLE001 - said in the laptop's output, and to the laptop (not read as gloo's end)
        traceback.print_exc()
        _broke(channel)
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":   # as kata.records.ranks, the module the records import, not a copy
    from kata.records import ranks

    sys.exit(ranks.main(sys.argv[1:]))
