"""The checkpoint checks' laptop as a run of the checks makes it: forked by the laptops' server
(kata.records.elsewhere.Forks, in the process serve_laptops forks: the run's own, or under `kata grade` the
sandbox's records child).

A process asks its laptops' server for a laptop through a socket; the server forks it from itself, with CUDA
hidden and none of the server's descriptors open, answers with its exit status, ends a laptop that runs
too long, and refuses more laptops than one run needs. Here this test's process plays the server (its
loop in the main thread) and a thread plays the asking process; the laptop's job is replaced by one that reports
what the laptop saw. That a laptop forked in the grader's sandbox opens a checkpoint as a machine without a GPU
does is tested by test_grade.py's class run (a load_checkpoint without map_location loses its points there).
"""

import json
import os
import threading
import time
from pathlib import Path

import pytest
import torch

from kata.harness import forked
from kata.records import elsewhere


def ask(forks: elsewhere.Forks, monkeypatch, args: dict, timeout: float = 10.0):
    """open_elsewhere(seen, args) from a thread (the asking process) while this thread serves as the server does."""
    monkeypatch.setattr(elsewhere, "_served", forks.theirs.fileno())   # as serve_laptops does in the asking process
    found = {}

    def child():
        try:
            found["value"] = elsewhere.open_elsewhere(seen, ".", args, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - what the child met, for the test to read
            found["error"] = exc

    thread = threading.Thread(target=child)
    thread.start()
    while thread.is_alive():
        forks.poll(0.02)
    return found


def seen(argv):
    """A laptop's job that writes what the laptop saw (its process, environment and open descriptors)."""
    job = json.loads(Path(argv[0]).read_text())
    if job["args"].get("sleep"):
        time.sleep(job["args"]["sleep"])
    torch.save({"pid": os.getpid(), "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "asked": elsewhere._served is not None,
                "open": [_target(fd) for fd in os.listdir(FDS)]},
               job["result"])
    return int(job["args"].get("status", 0))


FDS = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"   # Linux; elsewhere, no targets to read


def _target(fd: str) -> str:
    try:
        return os.readlink(f"{FDS}/{fd}")
    except OSError:   # the descriptor os.listdir read with
        return ""


@pytest.fixture
def forks(monkeypatch):
    monkeypatch.setattr(elsewhere, "main", seen)
    made = elsewhere.Forks()
    yield made
    made.close()


def test_a_laptop_is_a_fork_with_cuda_hidden_and_none_of_the_servers_descriptors(forks, monkeypatch):
    found = ask(forks, monkeypatch, {})
    assert "error" not in found, found
    laptop = found["value"]
    assert laptop["pid"] != os.getpid(), "the laptop must be a process of its own, forked by the server"
    assert laptop["cuda"] == "", "the laptop must hide CUDA, as a machine without a GPU has none"
    assert not laptop["asked"], "the laptop must not hold the channel on which the child asks for laptops"
    kept = [name for name in laptop["open"] if name.startswith(("socket:", "pipe:"))]
    assert not kept, f"the laptop must hold none of the server's channels; it holds {kept}"


def test_a_laptops_failure_reaches_the_child_as_a_fresh_processs_does(forks, monkeypatch):
    found = ask(forks, monkeypatch, {"status": 1})
    assert isinstance(found.get("error"), elsewhere.NotRun), found
    assert "exit status 1" in str(found["error"]), found["error"]


def test_a_laptop_that_runs_too_long_is_ended(forks, monkeypatch):
    monkeypatch.setattr(elsewhere, "TIMEOUT", 0.5)
    start = time.monotonic()
    found = ask(forks, monkeypatch, {"sleep": 60}, timeout=30)
    assert isinstance(found.get("error"), elsewhere.NotRun), found
    assert time.monotonic() - start < 20, "a laptop past its time must be ended by the server, not waited for"
    assert not forks.running


def test_malformed_requests_and_more_laptops_than_a_run_needs_are_refused(forks, monkeypatch):
    forks.theirs.sendall(b"not json\n")
    forks.poll(1.0)
    forks.theirs.settimeout(5)
    assert json.loads(forks.theirs.recv(4096)) == {"status": 2}, "a request that is not a job must be refused"
    assert not forks.running and forks.made == 0
    for _ in range(elsewhere.Forks.LIMIT):
        assert "error" not in ask(forks, monkeypatch, {})
    found = ask(forks, monkeypatch, {})
    assert isinstance(found.get("error"), elsewhere.NotRun), "a laptop past the limit must be refused"
    assert forks.made == elsewhere.Forks.LIMIT


def test_close_ends_every_laptop_still_running(forks, tmp_path):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"args": {"sleep": 60}, "result": str(tmp_path / "result.pt")}))
    forks.theirs.sendall((json.dumps({"job": str(job)}) + "\n").encode())
    forks.poll(1.0)
    pids = list(forks.running)
    assert len(pids) == 1, "the request must have forked one laptop"
    forks.close()
    for pid in pids:
        with pytest.raises(ChildProcessError):   # ended and reaped
            os.waitpid(pid, os.WNOHANG)


def test_a_process_whose_streams_were_moved_still_serves_its_laptops(tmp_path):
    """As the grader's records child does: its streams moved (kata.harness.forked.streams_to), then serve_laptops;
    the laptops' server must keep its channel whatever the streams it inherited held."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            forked.streams_to(os.open(tmp_path / "output.txt", os.O_WRONLY | os.O_CREAT, 0o600))
            elsewhere.main = seen   # in this child only
            stop = elsewhere.serve_laptops()
            status = 2 if stop is None else 3
            laptop = elsewhere.open_elsewhere(seen, ".", {})
            status = 0 if laptop["pid"] != os.getpid() and laptop["cuda"] == "" else 4
            stop()
        except BaseException:  # noqa: BLE001 - the status says how far it went; the output file, why
            import traceback

            traceback.print_exc()
        finally:
            os._exit(status)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if status == 2:
        pytest.skip("serve_laptops forks no laptops' server here (a simulated accelerator installed, or a GPU)")
    assert status == 0, f"exit status {status}: {(tmp_path / 'output.txt').read_text()[-2000:]}"
