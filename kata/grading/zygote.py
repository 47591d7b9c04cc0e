"""The zygote: one process that has imported the heavy libraries, and forks every test process.

A fresh Python spends about five seconds of CPU importing torch, torchvision,
matplotlib, hypothesis and pytest; a class of twenty would spend minutes on it.
The grader (kata/grading/spawner.py) starts one zygote per ``kata grade``, in
the sandbox (inside bubblewrap, as root with only the capabilities a test
process needs to shut itself in: making namespaces and changing user). It
imports those libraries and the kata's helpers for the checks, and has pytest
collect the pristine checks once (without the kata's plugin: no target, no
accelerator, nothing run), so that they and all they import are in memory,
asserts rewritten, in every test process forked from it. Nothing here may
start a thread a fork can't carry (CUDA, autograd's device threads: the
simulated accelerator is installed after the fork). It never imports a
submission's code. Then it serves requests on a Unix socket:

    {"op": "spawn", "id": n, "config": {...}} + descriptors [results, output, go]
        -> {"id": n, "pid": pid}             a forked test process (kata/grading/child.py)
    (when one ends)  -> {"exit": pid, "status": wait status}

When the grader goes away (the socket closes), it ends its test processes and
itself.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import sys

__all__ = ["PRELOAD", "main"]

# What the checks and the kata's plugin import (pytest imports the checks themselves afresh).
PRELOAD = ("pytest", "pytest_timeout", "hypothesis", "hypothesis.strategies",
           "hypothesis.extra.numpy", "numpy", "PIL.Image", "PIL.ImageDraw", "torch", "torch.nn", "torch.optim",
           "torch.utils.data", "torchvision", "torchvision.transforms", "torchvision.datasets", "matplotlib",
           "matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.pyplot", "matplotlib.font_manager",
           "kata.curriculum", "kata.project", "kata.harness.plugin", "kata.harness.target", "kata.harness.tracebacks",
           "kata.harness.scoreboard", "kata.harness.accelerator", "kata.checks", "kata.checks.book",
           "kata.checks.doubles", "kata.checks.strategies", "kata.checks.snapshots", "kata.checks.messages",
           "kata.checks.history", "kata.sim", "kata.celeba", "kata.data", "kata.data.synth", "kata.grading.plugin",
           "kata.grading.tripwire", "kata.grading.namespaces")
MESSAGE_LIMIT = 1 << 20


def _preload() -> list[str]:
    import importlib

    missing = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that is gone or broken is imported (and reported) by the checks
            missing.append(name)
    from kata import curriculum

    curriculum.exercises()   # read (and checked against the checkout) while the solutions are still in view
    return missing


def _collect(args: list[str]) -> str:
    """Collect the checks once (never run them): pytest imports (and rewrites the asserts of) the checks
    and everything they import, so each test process forked from here finds them imported. '' or why not."""
    if not args:
        return ""
    import pytest

    from kata.grading.plugin import without_explain

    class Settle:
        @pytest.hookimpl(trylast=True)
        def pytest_configure(self, config):
            without_explain()   # after the conftest's profile, before the checks' @settings

    try:
        code = pytest.main(["--collect-only", "-q", *args], plugins=[Settle()])
    except Exception as exc:  # noqa: BLE001 - the test processes will collect for themselves
        return f"{type(exc).__name__}: {exc}"
    return "" if code in (0, 5) else f"collecting the checks ended with status {int(code)}"


def _send(sock: socket.socket, message: dict) -> bool:
    try:
        sock.send(json.dumps(message).encode())
        return True
    except OSError:
        return False


def _spawn(sock: socket.socket, request: dict, fds: list[int]) -> int:
    results_fd, output_fd, go_fd = fds
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            sock.close()
            os.setsid()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(output_fd, 1)
            os.dup2(output_fd, 2)
            for fd in (null, output_fd):
                os.close(fd)
            from kata.grading.child import start

            start(request["config"], results_fd, go_fd)
        finally:
            os._exit(5)
    for fd in fds:
        os.close(fd)
    return pid


def _reap(sock: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)
        _send(sock, {"exit": pid, "status": status})


def main(control_fd: int, collect: list[str] | None = None) -> None:
    sock = socket.socket(fileno=control_fd)
    missing = _preload()
    problem = _collect(collect or [])
    gc.collect()
    gc.freeze()   # what is here now is never collected again: a test process's collections skip it (and its pages)
    sys.stdout.flush()
    _send(sock, {"ready": os.getpid(), "missing": missing, "collect": problem})
    children: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([sock], [], [], 0.05)
            _reap(sock, children)
            if not ready:
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MESSAGE_LIMIT, 4)
            except OSError:
                break
            if not data:
                break
            request = json.loads(data)
            del data   # it holds the test process's key: not to be inherited as bytes
            if request.get("op") == "stop":
                break
            if request.get("op") == "spawn" and len(fds) == 3:
                pid = _spawn(sock, request, fds)
                children.add(pid)
                _send(sock, {"id": request["id"], "pid": pid})
            else:
                for fd in fds:
                    os.close(fd)
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)
