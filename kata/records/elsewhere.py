"""A laptop: a fresh Python process without an accelerator, where a checkpoint saved on one is opened.

The checkpoint exercise's lesson happens on another machine than the one that
saved the file. :func:`open_elsewhere` starts that machine as a child process
(``python -m kata.records.elsewhere JOB``), once for the record that needs it
(records/checkpoint.py's laptop; importing torch takes seconds): CUDA hidden
(``CUDA_VISIBLE_DEVICES=""``), the simulated accelerator never installed, so
``torch.load`` there meets what a CPU-only machine meets. The child imports the
learner's module from its folder (kata/harness/target.py), tries PyTorch's own
``torch.load(file)`` and then the learner's ``load_checkpoint`` for each call
the job names, continues training on the CPU after each, and writes what it
found as a file of plain values and CPU tensors (read back with
``weights_only=True``). It imports torch and the kata's harness only: no
torchvision, no checks.

Where it can, the laptop is forked instead (:class:`Forks`) from a process that
has imported torch but never installed the simulated accelerator: that process
is the machine already, without paying for torch's import again (4.6 to 6 s of
the check, measured). Under ``kata grade`` it is the sandbox's server
(kata/grading/server.py), and its child asks it through the socket the server
gives it (:func:`ask_through`). In any other run of the checks it is forked from the run
itself by :func:`serve_laptops`, while the checks are collected and before the
kata's plugin installs the simulated accelerator. Either server forks each laptop
from itself, never from the asking process, and ends every laptop when the run
ends. Where the machine shows a real GPU (``/dev/nvidia*``), CUDA may already be
set up and can't be hidden after it, and where the run's process has the
simulator installed already or other threads (a notebook's kernel), the laptop
is a fresh process.
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

__all__ = ["CALLS", "TIMEOUT", "Forks", "NotRun", "ask_through", "main", "open_elsewhere", "serve_laptops"]

TIMEOUT = 25.0   # seconds: the child imports torch (2 to 5 s) and trains a tiny model for a few batches
# The checkpoint's laptop's calls of load_checkpoint (a job's "calls"): how each is said, and its device argument.
CALLS = {"load_checkpoint(path, model, optimizer)": None,
         "load_checkpoint(path, model, optimizer, device='cpu')": "cpu"}


class NotRun(Exception):
    """The fresh process could not run (the machine, not the learner's code): the message says why."""


def open_elsewhere(job: dict, timeout: float = TIMEOUT) -> dict:
    """Run ``job`` in a fresh process without an accelerator; what it found (see :func:`main`).

    ``job``: ``folder`` (the learner's modules), ``module``, ``file`` (the checkpoint), ``seed`` (of the
    fresh model it loads into), ``batches`` (kata.records.doubles.fixed_batches' arguments), ``epochs``
    (trained after each load) and ``calls`` ({label: the device argument, or None for none})."""
    import torch

    with tempfile.TemporaryDirectory(prefix="kata-elsewhere-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.pt"
        job_file.write_text(json.dumps({**job, "result": str(result_file)}))
        status, said = _spawned(job_file, timeout) if _served is None else _forked(job_file, timeout, _served)
        if status != 0 or not result_file.is_file():
            tail = said.strip().splitlines()[-3:]
            raise NotRun(say("the fresh process ended with exit status {status}: {tail}", status=status,
                             tail=" / ".join(tail)))
        return torch.load(result_file, weights_only=True, map_location="cpu")


def _spawned(job_file: Path, timeout: float) -> tuple[int, str]:
    """A new interpreter runs the job: its exit status and what it printed."""
    kata_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join([kata_root, *filter(None, [os.environ.get("PYTHONPATH")])])}
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
                                 tail=_("the grading server closed the laptop's channel")))
            answer += chunk
    output = job_file.with_name("output.txt")
    return json.loads(answer)["status"], output.read_text(errors="replace") if output.is_file() else ""


class Forks:
    """A grading server's laptops, forked from the server (torch imported, no accelerator installed) for its
    checks' child, which asks through the other end of :attr:`theirs` (kept open: :func:`ask_through`).

    The server calls :meth:`poll` while it waits for the child and :meth:`close` when the run ends: every
    laptop still running is ended then, and one running longer than ``TIMEOUT`` before."""

    LIMIT = 8   # laptops for one run at most: the checks make one

    def __init__(self):
        self.ours, self.theirs = socket.socketpair()
        self.ours.setblocking(False)   # a child that never reads its answers can't stop the server
        self.running: dict[int, float] = {}
        self.made, self.buffer = 0, b""
        self.ended = False   # the asking end was closed: no more requests will come

    @staticmethod
    def usable() -> bool:
        """Forking hides no GPU that the server may have opened: only where the sandbox shows none."""
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
            if not done and time.monotonic() - started > TIMEOUT:
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


_served: int | None = None   # the asking end of a laptop server: a grading server's, or this run's own (serve_laptops)


def ask_through(fd: int | None) -> None:
    """In a grading server's checks child: ask for laptops through ``fd``, the server's socket (None: no more)."""
    global _served
    _served = fd


def serve_laptops():
    """Fork, now, the process this run's laptops are forked from: this one as it is (torch imported, the
    simulated accelerator not installed), so that each laptop costs a fork, not a new interpreter. Call it
    before the simulator is installed (the checks' conftest does, while collecting). Returns the function
    that ends it, or None where the laptops stay fresh interpreters: a grading server's checks (their
    server forks them), a machine with a GPU or without fork, a process with the simulator installed, or
    with other threads running (a fork copies only the calling one)."""
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


def _serve(forks: Forks, parent: int) -> None:
    """The laptop server forked by :func:`serve_laptops`: a laptop forked for each request, until the run
    closes its end or ends (never returns)."""
    try:
        fd = forks.ours.detach()
        forks.theirs.detach()   # closed below with every other descriptor of the run
        forks.ours = socket.socket(fileno=forked.streams_to(os.open(os.devnull, os.O_WRONLY), keep=fd))
        forks.ours.setblocking(False)
        while not forks.ended and os.getppid() == parent:
            forks.poll(0.5)
    except BaseException:  # noqa: BLE001 - Ctrl-C, or the run gone: end quietly
        pass
    finally:
        with contextlib.suppress(Exception):
            forks.close()
        os._exit(0)


def _laptop(job: str, cwd: str) -> None:
    """In a laptop forked by :class:`Forks`: its own session, only its output file open, CUDA hidden, in the
    asking child's folder, the job run (never returns)."""
    status = 3
    try:
        os.setsid()
        os.chdir(cwd)
        out = os.open(Path(job).with_name("output.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        forked.streams_to(out)   # none of the server's channels
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        ask_through(None)   # a laptop asks for none
        status = main([job])
    except BaseException:  # noqa: BLE001 - whatever happens, say it and end
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


# --- the child ------------------------------------------------------------------------------------


def _error(exc: BaseException, target) -> dict:
    place = target.place_of(exc)
    return {"type": type(exc).__name__, "message": str(exc)[:1500], "where": place.where if place else "",
            "source": place.source if place else "", "not_written": isinstance(exc, NotImplementedError)}


def _plain(value, depth: int = 0):
    """A returned value as plain data: its kind, and what it holds (tensors as CPU copies)."""
    import torch

    if depth > 4:
        return {"kind": "deep"}
    if type(value) in (int, float, bool, str, type(None)):
        return {"kind": type(value).__name__, "value": value}
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "device": str(value.device), "grad": value.requires_grad,
                "value": value.detach().cpu().clone()}
    if isinstance(value, (list, tuple)):
        kind = "namedtuple" if hasattr(type(value), "_fields") else type(value).__name__
        return {"kind": kind, "items": [_plain(v, depth + 1) for v in value]}
    return {"kind": type(value).__name__, "value": repr(value)[:80]}


def _optimizer(optimizer) -> list:
    """Per parameter (in the optimizer's order): its device, and each of its state tensors' device and values."""
    found = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            found.append({"param": str(p.device), "state": {
                name: {"device": str(t.device), "value": t.detach().cpu().clone()}
                for name, t in state.items() if hasattr(t, "device")}})
    return found


def _optimizer_state(optimizer) -> dict:
    """The optimizer's state_dict, its tensors copied to the CPU."""
    import torch

    saved = optimizer.state_dict()
    return {"state": {i: {k: v.detach().cpu().clone() if isinstance(v, torch.Tensor) else v for k, v in s.items()}
                      for i, s in saved["state"].items()}, "param_groups": saved["param_groups"]}


def _load(module, target, job: dict, device) -> dict:
    import torch

    from kata.records.doubles import fixed_batches, tiny_model, train_batches

    model = tiny_model(job["seed"])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    try:
        kwargs = {} if device is None else {"device": device}
        returned = module.load_checkpoint(job["file"], model, optimizer, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the learner's error is what this machine found
        return {"error": _error(exc, target)}
    found = {"error": None, "returned": _plain(returned), "devices": [str(p.device) for p in model.parameters()],
             "state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
             "optimizer": _optimizer(optimizer), "optimizer_state": _optimizer_state(optimizer), "step_error": None}
    try:
        place = next(model.parameters()).device
        train_batches(model, optimizer, fixed_batches(**job["batches"]), job["epochs"], device=place)
    except Exception as exc:  # noqa: BLE001 - the next step's error, for the check to explain
        found["step_error"] = _error(exc, target)
    found["after"] = [p.detach().cpu().clone() for p in model.parameters()]
    return found


def main(argv: list[str]) -> int:
    """The child: run the job in ``argv[0]``, write what it found to the job's ``result`` file."""
    job = json.loads(Path(argv[0]).read_text())
    import torch

    from kata.harness.target import Target

    found = {"cuda": torch.cuda.is_available(), "simulated": hasattr(torch, "simgpu"), "torch_load": "",
             "calls": {}}
    try:
        torch.load(job["file"])
    except Exception as exc:  # noqa: BLE001 - PyTorch's own error is the lesson
        found["torch_load"] = f"{type(exc).__name__}: {exc}"
    target = Target(job["folder"])
    module = target.load(job["module"])
    for label, device in job["calls"].items():
        found["calls"][label] = _load(module, target, job, device)
    torch.save(found, job["result"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
