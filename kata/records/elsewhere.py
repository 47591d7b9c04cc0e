"""A laptop: a fresh Python process without an accelerator, where a function of a records module runs.

The checkpoint exercise's lesson happens on another machine than the one that
saved the file. :func:`open_elsewhere` runs a function of a records module
(``records/NAME.py``, loaded by its path with :func:`kata.records.module_of`) on
that machine, a child process (``python -m kata.records.elsewhere JOB``): CUDA
hidden (``CUDA_VISIBLE_DEVICES=""``), the simulated accelerator never installed,
so ``torch.load`` there meets what a CPU-only machine meets. The function is
given the target of the learner's folder (kata/harness/target.py) and the job's
arguments, and returns plain values and CPU tensors, written to a file (read back
with ``weights_only=True``) with what the machine saw: ``cuda`` and ``simulated``
(an accelerator, each of them). The child imports torch, the kata's harness and
that records module only: no torchvision, no checks.

Where it can, the laptop is forked instead (:class:`Forks`) from a process that
has imported torch but never installed the simulated accelerator: that process
is the machine already, without paying for torch's import again (4.6 to 6 s of
the check, measured). :func:`serve_laptops` forks that process from the run of
the checks, while the checks are collected and before the kata's plugin installs
the simulated accelerator; under ``kata grade``, from the sandbox's records child
before it installs it (kata/grading/server.py). It forks each laptop from itself,
never from the asking process, and ends every laptop when the run ends. Where the
machine shows a real GPU (``/dev/nvidia*``), CUDA may already be set up and can't
be hidden after it, and where the run's process has the simulator installed
already or other threads (a notebook's kernel), the laptop is a fresh process.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kata.harness import forked
from kata.i18n import _, say

__all__ = ["TIMEOUT", "Forks", "NotRun", "child_env", "limit", "main", "open_elsewhere", "run", "running",
           "serve_laptops", "serve_own_laptops"]

TIMEOUT = 25.0   # seconds: the child imports torch (2 to 5 s) and runs its job


def limit() -> float:
    """A laptop's time: :data:`TIMEOUT`, and where ranks are spawned (kata.records.ranks) the time they may take to
    start, so that a rank that hangs is still said as such."""
    from kata.records import ranks

    return TIMEOUT + (ranks.START_SECONDS if ranks.spawning() else 0.0)


class NotRun(Exception):
    """The fresh process could not run (the machine, not the learner's code): the message says why."""


def open_elsewhere(function, folder: str | Path, args: dict, timeout: float | None = None) -> dict:
    """``function(target, **args)``, a function of a records module, run in a fresh process without an
    accelerator on the target of ``folder`` (the learner's modules), within ``timeout`` (:func:`limit`): what it
    returned (see :func:`main`)."""
    import torch

    timeout = limit() if timeout is None else timeout

    with tempfile.TemporaryDirectory(prefix="kata-elsewhere-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.pt"
        job = {"records": sys.modules[function.__module__].__file__, "function": function.__name__,
               "folder": str(folder), "args": args, "result": str(result_file)}
        job_file.write_text(json.dumps(job))
        status, said = _spawned(job_file, timeout) if _served is None else _forked(job_file, timeout, _served)
        if status != 0 or not result_file.is_file():
            tail = said.strip().splitlines()[-3:]
            raise NotRun(say("the fresh process ended with exit status {status}: {tail}", status=status,
                             tail=" / ".join(tail)))
        return torch.load(result_file, weights_only=True, map_location="cpu")


def child_env(**more: str) -> dict[str, str]:
    """The environment of a new interpreter that imports this kata wherever it is installed (its folder first on
    PYTHONPATH), with ``more``."""
    kata_root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join([kata_root, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, **more}


def _spawned(job_file: Path, timeout: float) -> tuple[int, str]:
    """A new interpreter runs the job: its exit status and what it printed."""
    env = child_env(CUDA_VISIBLE_DEVICES="")
    env.pop("PYTEST_ADDOPTS", None)
    try:
        done = subprocess.run([sys.executable, "-m", "kata.records.elsewhere", str(job_file)], env=env,
                              capture_output=True, text=True, timeout=timeout, cwd=os.getcwd())
    except subprocess.TimeoutExpired:
        raise NotRun(say("the fresh process did not finish within {timeout:g} s", timeout=timeout)) from None
    except OSError as err:
        raise NotRun(say("a fresh Python process could not start here ({error})", error=err)) from None
    return done.returncode, done.stderr or done.stdout


def _forked(job_file: Path, timeout: float, fd: int) -> tuple[int, str]:
    """A laptop server (:class:`Forks`, on the other end of ``fd``) forks the laptop and says how it ended."""
    with socket.socket(fileno=os.dup(fd)) as channel:
        channel.sendall((json.dumps({"job": str(job_file), "cwd": os.getcwd()}) + "\n").encode())
        answer, deadline = b"", time.monotonic() + timeout
        while not answer.endswith(b"\n"):
            if not select.select([channel], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise NotRun(say("the fresh process did not finish within {timeout:g} s", timeout=timeout))
            chunk = channel.recv(4096)
            if not chunk:
                raise NotRun(say("the fresh process ended with exit status {status}: {tail}", status="?",
                                 tail=_("the laptops' server closed its channel")))
            answer += chunk
    output = job_file.with_name("output.txt")
    return json.loads(answer)["status"], output.read_text(errors="replace") if output.is_file() else ""


class Forks:
    """The laptops of the laptops' server (the process :func:`serve_laptops` forks): one forked for each request
    through the other end of :attr:`theirs`. The server calls :meth:`poll` until the run ends, then :meth:`close`:
    every laptop still running is ended then, and one running longer than :func:`limit` before."""

    LIMIT = 16   # laptops for one run at most: the checks make a few (the checkpoint's, the distributed ranks')

    def __init__(self):
        self.ours, self.theirs = socket.socketpair()
        self.ours.setblocking(False)   # a child that never reads its answers can't stop the server
        self.running: dict[int, float] = {}
        self.made, self.buffer = 0, b""
        self.ended = False   # the asking end was closed: no more requests will come

    @staticmethod
    def usable() -> bool:
        """Forking hides no GPU that the server may have opened: only where the machine (or sandbox) shows none."""
        return not any(Path("/dev").glob("nvidia*"))

    def poll(self, wait: float) -> None:
        """Wait up to ``wait`` seconds for a request; fork a laptop for each; answer for each that ended."""
        if select.select([self.ours], [], [], wait)[0]:
            with contextlib.suppress(BlockingIOError):
                chunk = self.ours.recv(1 << 16)
                self.ended = not chunk
                self.buffer = (self.buffer + chunk)[-(1 << 16):]
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                self._fork(line)
        for pid, started in list(self.running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done and time.monotonic() - started > limit():
                forked.end(pid)
                done, status = os.waitpid(pid, 0)
            if done:
                del self.running[pid]
                self._answer(os.waitstatus_to_exitcode(status))

    def _answer(self, status: int) -> None:
        with contextlib.suppress(OSError):
            self.ours.sendall((json.dumps({"status": status}) + "\n").encode())

    def _fork(self, line: bytes) -> None:
        try:
            asked = json.loads(line)
            job, cwd = str(asked["job"]), str(asked.get("cwd", "/"))
        except (ValueError, KeyError, TypeError, AttributeError):
            return self._answer(2)
        if self.made >= self.LIMIT:
            return self._answer(2)
        self.made += 1
        pid = os.fork()
        if pid == 0:
            _laptop(job, cwd)
        self.running[pid] = time.monotonic()

    def close(self) -> None:
        for pid in self.running:
            forked.end(pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.running.clear()
        self.ours.close()
        self.theirs.close()


_served: int | None = None   # the asking end of this run's laptops' server (serve_laptops)


def serve_laptops():
    """Fork, now, the process this run's laptops are forked from: this one as it is (torch imported, the
    simulated accelerator not installed), so that each laptop costs a fork, not a new interpreter. Call it
    before the simulator is installed (the checks' conftest does, while collecting; the grader's records child,
    at its start). Returns the function that ends it, or None where the laptops stay fresh interpreters: a
    machine with a GPU or without fork, a process with the simulator installed, or with other threads running
    (a fork copies only the calling one)."""
    global _served
    import threading

    torch = sys.modules.get("torch")
    if _served is not None or not hasattr(os, "fork") or not Forks.usable() \
            or torch is None or hasattr(torch, "simgpu") or threading.active_count() > 1:
        return None
    # What every laptop does first, done once here: the kata's helpers, and torch's first-use imports (no backward
    # pass before the simulator).
    from kata.harness import target as _target  # noqa: F401 - the laptops load the learner's module with it
    from kata.records import doubles  # noqa: F401 - every laptop builds the checks' tiny model

    forked.warm_torch()
    forks, parent = Forks(), os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _serve(forks, parent)
    forks.ours.close()
    _served = forks.theirs.fileno()

    def stop() -> None:
        global _served
        _served = None
        forks.theirs.close()   # the server sees the end of its requests, ends its laptops and itself
        deadline = time.monotonic() + 5
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                forked.end(pid)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)

    return stop


def serve_own_laptops():
    """:func:`serve_laptops` in a process forked from one that serves them (kata/harness/prefetch.py's helper): the
    server it inherited the channel of is not its own. What stops its own (None: the process it was forked from
    served none)."""
    global _served
    if _served is None:
        return None
    _served = None
    return serve_laptops()


def _serve(forks: Forks, parent: int) -> None:
    """The laptop server forked by :func:`serve_laptops`: a laptop forked for each request, until the run
    closes its end or ends (never returns)."""
    try:
        fd = forks.ours.detach()
        forks.theirs.detach()   # closed below with every other descriptor of the run
        forks.ours = socket.socket(fileno=forked.streams_to(os.open(os.devnull, os.O_WRONLY), keep=fd))
        forks.ours.setblocking(False)
        while not forks.ended and os.getppid() == parent:
            forks.poll(0.005 if forks.running else 0.5)   # a laptop that ended is answered at once
    except BaseException:  # noqa: BLE001 - Ctrl-C, or the run gone: end quietly
        pass
    finally:
        with contextlib.suppress(Exception):
            forks.close()
        os._exit(0)


def _laptop(job: str, cwd: str) -> None:
    """In a laptop forked by :class:`Forks`: its own session, ended with its server, only its output file open,
    CUDA hidden, in the asking process's folder, the job run (never returns)."""
    global _served
    status = 3
    try:
        os.setsid()
        forked.end_with_parent()   # its server
        os.chdir(cwd)
        out = os.open(Path(job).with_name("output.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        forked.streams_to(out)   # none of the server's channels
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        _served = None   # a laptop asks for none
        status = main([job])
    except BaseException:  # noqa: BLE001 - whatever happens, say it and end
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


running: Path | None = None   # the job this process runs (:func:`run`): what a spawned rank runs again (ranks.py)


def run(job_file: str | Path) -> dict:
    """The job in ``job_file`` (see :func:`open_elsewhere`): what its function returned, and what the machine saw."""
    global running
    running = Path(job_file)
    job = json.loads(running.read_text())
    import torch

    from kata import records
    from kata.harness.target import Target

    found = {"cuda": torch.cuda.is_available(), "simulated": hasattr(torch, "simgpu")}
    function = getattr(records.module_of(job["records"]), job["function"])
    return {**function(Target(job["folder"]), **job["args"]), **found}


def main(argv: list[str]) -> int:
    """The laptop: run the job in ``argv[0]``, write what it found to the job's ``result`` file."""
    import torch

    found = run(argv[0])
    torch.save(found, json.loads(Path(argv[0]).read_text())["result"])
    return 0


if __name__ == "__main__":   # as kata.records.elsewhere, the module the records import, not a copy
    from kata.records import elsewhere

    sys.exit(elsewhere.main(sys.argv[1:]))
