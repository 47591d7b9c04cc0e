"""The grader's side of the zygote (kata/grading/zygote.py): start it, ask it for test processes, hear them end.

:class:`Spawner` starts the zygote in the sandbox the plan chose
(kata/grading/sandbox.py), waits until it has imported its libraries, and then
serves every job's thread: :meth:`Spawner.spawn` hands it a test process's
configuration and three descriptors (the results file, the write end of the
output pipe, the read end of a "go" pipe) and gets the process's pid back; a
reader thread collects the exit statuses the zygote reports. A zygote that
dies is started again on the next request.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["Spawner", "SpawnError"]

BOOT = ("import sys; sys.path.insert(0, {root!r}); sys.argv[0] = 'kata-grade-zygote'; "
        "from kata.grading.zygote import main; main({fd}, {collect!r})")
START_TIMEOUT = 180.0


class SpawnError(RuntimeError):
    """The zygote could not be started, or went away."""


class Spawner:
    def __init__(self, argv_prefix: list[str], env: dict[str, str], cwd: Path, collect: list[str] | None = None):
        self.argv_prefix = argv_prefix   # the sandbox's command, up to the Python to run in it
        self.collect = collect or []     # pytest's arguments to collect the checks with, once
        self.env = env
        self.cwd = cwd
        self.lock = threading.Lock()
        self.changed = threading.Condition()
        self.replies: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self.counter = 0
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.missing: list[str] = []
        self.collect_problem = ""
        self.log: list[str] = []

    # --- the zygote's life ------------------------------------------------------------

    def start(self) -> None:
        import kata

        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except (AttributeError, OSError):   # no sequenced packets (macOS): datagrams keep the messages apart too
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        theirs_fd = theirs.fileno()
        root = str(Path(kata.__file__).resolve().parent.parent)
        boot = BOOT.format(root=root, fd=theirs_fd, collect=self.collect)
        argv = [*self.argv_prefix, sys.executable, "-I", "-B", "-c", boot]
        try:
            self.proc = subprocess.Popen(argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(theirs_fd,),
                                         start_new_session=True)
        finally:
            theirs.close()
        self.sock = ours
        threading.Thread(target=self._pump_output, args=(self.proc,), daemon=True).start()
        ours.settimeout(START_TIMEOUT)
        try:
            first = json.loads(ours.recv(1 << 20) or b"{}")
        except (OSError, ValueError):
            first = {}
        ours.settimeout(None)
        if "ready" not in first:
            self.stop()
            output = "\n".join(self.log[-30:])
            raise SpawnError("the grader's zygote did not start" + (f":\n{output}" if output else ""))
        self.missing = first.get("missing", [])
        self.collect_problem = first.get("collect", "")
        threading.Thread(target=self._read, args=(ours,), daemon=True).start()

    def _pump_output(self, proc: subprocess.Popen) -> None:
        """The zygote's own output (pytest's collection): its last lines kept, for when it fails."""
        for line in proc.stdout:
            self.log.append(line.decode(errors="replace").rstrip())
            del self.log[:-200]

    def _read(self, sock: socket.socket) -> None:
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                with self.changed:
                    if self.sock is sock:
                        self.sock = None
                    self.changed.notify_all()
                return
            message = json.loads(data)
            with self.changed:
                if "exit" in message:
                    self.exits[message["exit"]] = message["status"]
                elif "id" in message:
                    self.replies[message["id"]] = message["pid"]
                self.changed.notify_all()

    def alive(self) -> bool:
        return self.sock is not None and self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.sock is not None:
            try:
                self.sock.send(json.dumps({"op": "stop"}).encode())
            except OSError:
                pass
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, 9)
                except OSError:
                    pass
                self.proc.wait()

    # --- test processes -----------------------------------------------------------------

    def spawn(self, config: dict, results_fd: int, output_fd: int, go_fd: int) -> int:
        """Start a test process; returns its pid (waiting for the "go" byte before it does anything)."""
        with self.lock:
            if not self.alive():
                self.stop()
                self.start()
            self.counter += 1
            request = {"op": "spawn", "id": self.counter, "config": config}
            try:
                socket.send_fds(self.sock, [json.dumps(request).encode()], [results_fd, output_fd, go_fd])
            except OSError as err:
                raise SpawnError(f"the grader's zygote went away ({err})") from None
            number = self.counter
        with self.changed:
            if not self.changed.wait_for(lambda: number in self.replies or self.sock is None, timeout=60):
                raise SpawnError("the grader's zygote did not answer")
            if number not in self.replies:
                raise SpawnError("the grader's zygote went away")
            return self.replies.pop(number)

    def exit_status(self, pid: int) -> int | None:
        """The wait status of ``pid`` if it has ended (as its parent, the zygote, saw it)."""
        with self.changed:
            return self.exits.get(pid)

    def wait(self, pid: int, timeout: float) -> int | None:
        with self.changed:
            self.changed.wait_for(lambda: pid in self.exits or self.sock is None, timeout=timeout)
            return self.exits.pop(pid, None)
