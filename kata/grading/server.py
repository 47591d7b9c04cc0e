"""A job's server, inside its sandbox: the heavy libraries imported once, one forked child per request.

Started by the grader (kata/grading/slots.py) as ``python -m kata.grading.server ROLE`` in the sandbox of
kata/grading/sandbox.py, each role imports what its children need (``checks``: pytest, the kata's plugin,
the checks, collected once; ``records``: the audit's records, never the checks). For each request (one
JSON line on stdin: ``{"id", "files", "wall", "quiet", ...}``) it forks a child that reads the request,
writes the files into ``WORK/sub/exercises`` and runs them (pytest with a report log, or the records);
waits for it (ended after ``wall`` seconds, or ``quiet`` seconds without a new report line; meanwhile it
forks the checkpoint checks' laptops, kata/checks/elsewhere.py); ends every other process it can reach;
and forks a process that answers with one JSON line on stdout: ``{"id", "end": "exit" | "wall" | "quiet",
"status", "report", "output" (head and tail), "output_bytes", "disk_full", "seconds"}``. So the server
never holds a submission's files or report, for a later child to find in the memory it inherits. It is
not dumpable (a child can neither trace it nor read its memory), and a child holds none of its pipes
once the request is read. A server that dies or stops answering is replaced by the grader.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import json
import os
import select
import shutil
import signal
import sys
import time
from pathlib import Path

from kata.harness import collector, forked
from kata.i18n import say

__all__ = ["main"]

WORK = Path(os.environ.get("KATA_WORK", "/kata-job"))
REPORT_LIMIT = 48 << 20
OUTPUT_KEEP = 24 << 10
SHARED = ("torch", "torchvision.transforms.v2", "matplotlib.pyplot", "matplotlib.backends.backend_agg", "kata.sim",
          "kata.celeba")   # with torch.nn and torch.optim, torchvision.transforms, NumPy and PIL
PRELOAD = {"checks": SHARED + ("pytest", "pytest_timeout", "pytest_reportlog.plugin", "hypothesis",
                               "kata.harness.plugin", "kata.checks.book", "kata.checks.doubles",
                               "kata.checks.strategies", "kata.checks.messages", "kata.data.synth"),
           "records": SHARED + ("kata.audit", "kata.harness.target")}


def _preload(role: str, collect: list[str]) -> None:
    for name in PRELOAD[role]:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the child imports (and reports) what is missing itself
            pass
    if role == "records":
        from kata import audit, curriculum

        for exercise in curriculum.names():
            audit.records(exercise)
    elif collect:
        import pytest

        # Collected once, never run: the checks and what they import are in every child, asserts rewritten.
        # Without the kata's plugin: no target, no accelerator (those must start after the fork).
        pytest.main(["--collect-only", "-q", "-p", "no:kata", "-p", "no:cacheprovider", "-o", "addopts=", *collect])
        # Once here, not first in every child (2 s): the Unicode tables behind st.text() and the local modules'
        # constants, which Hypothesis would otherwise keep on a disk that a child can't keep.
        with contextlib.suppress(Exception):
            from hypothesis.internal import charmap
            from hypothesis.internal.conjecture.providers import _get_local_constants

            charmap.charmap(), charmap.intervals_from_codec("utf-8"), _get_local_constants()


class _Grading:
    """The checks' child's plugin: each check's ``audit`` mark in its report (the reference's run says what each
    check rests on: kata/grading/scoring.py). An exercise whose checks ran out of time twice has the rest failed
    at once by the kata's plugin, as in every run (kata/harness/plugin.py)."""

    def pytest_runtest_setup(self, item) -> None:
        from kata import audit, curriculum

        exercise = curriculum.exercise_of(str(item.path))
        mark = item.get_closest_marker("audit")
        if mark is not None and exercise is not None:
            item.user_properties.append(("kata_audit", audit.marked(exercise.name, mark,
                                                                    getattr(item, "callspec", None))))


def _child_checks(request: dict) -> int:
    import pytest

    args = [a.replace("{work}", str(WORK)) for a in request["args"]]
    return int(pytest.main(args, plugins=[_Grading()]))


def _child_records(request: dict) -> int:
    from kata import curriculum, sim
    from kata.audit import Context, records, run_records
    from kata.harness.target import Target

    ok, _ = sim.support()
    context = Context(request["seed"], WORK / "tmp", Path(os.environ["KATA_AUDIT_DATA"]),
                      sim.install() if ok else None)
    target = Target(WORK / "sub" / "exercises")
    done = set(request.get("skip", []))
    with open(WORK / "out" / "report.jsonl", "a", encoding="utf-8") as out:
        def write(exercise, name, result):
            try:
                line = json.dumps([exercise, name, result])
            except (TypeError, ValueError) as exc:
                line = json.dumps([exercise, name, {"error": say("the record is not data ({exc})", exc=exc)}])
            out.write(line + "\n")
            out.flush()

        for exercise in curriculum.names():
            skip = {n for n in records(exercise) if f"{exercise}/{n}" in done}
            if len(skip) == len(records(exercise)):
                continue
            for name, result in run_records(exercise, functools.partial(target.load, exercise), context, skip):
                write(exercise, name, result)
    return 0


def _child(role: str, control_in: int, told: int, out_fd: int, laptops: int | None) -> None:
    """In the forked child: the request (its limits told to the server), the files, the role's work; never returns."""
    status = 3
    try:
        os.setsid()
        line = os.fdopen(control_in, "rb", closefd=False).readline()   # the one line the grader sent, and no more
        request = json.loads(line) if line.strip() else None
        os.write(told, json.dumps(request and {k: request.get(k, 0) for k in ("id", "wall", "quiet", "start")})
                 .encode())
        os.close(told)
        if request is None:   # the grader closed the server's input: no more requests
            os._exit(0)
        for name, text in request["files"].items():
            (WORK / "sub" / "exercises" / name).write_text(text, encoding="utf-8")
        laptops = forked.streams_to(out_fd, keep=laptops)
        if laptops is not None:   # the checkpoint checks ask for their laptops there (kata/checks/elsewhere.py)
            os.environ["KATA_LAPTOP_FD"] = str(laptops)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.chdir(WORK / "sub")
        os.umask(0o077)
        status = _child_checks(request) if role == "checks" else _child_records(request)
    except BaseException as exc:  # noqa: BLE001 - whatever happens, say it and end
        print(say("kata grade: the test process ended with {kind}: {exc}", kind=type(exc).__name__, exc=exc),
              file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _end_others(child: int) -> None:
    """Every process this server can reach but itself: the child's leftovers, whatever they did."""
    bubblewrap = os.environ.get("KATA_SANDBOX") == "bubblewrap"
    for _ in range(50):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if bubblewrap or os.environ.get("KATA_SANDBOX") == "user":
                os.kill(-1, signal.SIGKILL)   # a PID namespace (or a user) of its own: all but itself and init
            else:
                os.killpg(child, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)


def _wipe(folder: Path) -> None:
    for entry in list(folder.iterdir()) if folder.is_dir() else []:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()


def _output(path: Path) -> tuple[str, int]:
    """The child's output, its head and tail when long, and its size."""
    with contextlib.suppress(OSError), open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(OUTPUT_KEEP)
        if size > 2 * OUTPUT_KEEP:
            f.seek(size - OUTPUT_KEEP)
            head += f"\n... ({size - 2 * OUTPUT_KEEP:,} bytes of output left out) ...\n".encode()
        return (head + f.read()).decode("utf-8", "replace"), size
    return "", 0


def _laptops():
    """The checkpoint checks' machines without a GPU, forks of this one (None where the sandbox shows a GPU)."""
    from kata.checks.elsewhere import Forks

    return Forks() if Forks.usable() else None


def _serve(role: str, control_in: int, control_out: int) -> bool:
    """One request (False: there are none left): read by the child, answered by a process forked at its end."""
    sandboxed = os.environ.get("KATA_SANDBOX") == "bubblewrap"
    for folder in ("sub/exercises", "out", "tmp", "home", "data"):
        (WORK / folder).mkdir(parents=True, exist_ok=True)
    out_fd = os.open(WORK / "out" / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    report = WORK / "out" / "report.jsonl"
    report.touch()
    forks = _laptops() if role == "checks" else None
    told, tell = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(role, control_in, tell, out_fd, forks.theirs.fileno() if forks else None)
    for fd in (out_fd, tell):
        os.close(fd)
    with os.fdopen(told, "rb") as limits:
        request = json.loads(limits.read() or b"null")
    end, status, size, heard = "exit", 0, 0, start
    while request is not None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        now = time.monotonic()
        grown = report.stat().st_size if report.exists() else 0
        if grown != size:
            size, heard = grown, now
        quiet = request["quiet"] + (request.get("start", 0) if size == 0 else 0)
        if now - start > request["wall"] or now - heard > quiet:
            end = "wall" if now - start > request["wall"] else "quiet"
            forked.end(pid)
            os.waitpid(pid, 0)
            break
        forks.poll(0.05) if forks else time.sleep(0.05)
    if forks:
        forks.close()
    _end_others(pid)
    if request is not None and os.fork() == 0:
        _answer(request["id"], end, status, start, control_out)
    with contextlib.suppress(ChildProcessError):
        os.wait()
    for folder in [WORK] + ([Path("/tmp"), Path("/dev/shm")] if sandboxed else []):
        _wipe(folder)
    return request is not None


def _answer(request_id: int, end: str, status: int, start: float, control_out: int) -> None:
    """In a process forked for it, once every process of the child's is gone: the answer line (never returns)."""
    try:
        report = ""
        with contextlib.suppress(OSError), open(WORK / "out" / "report.jsonl", "rb") as f:
            report = f.read(REPORT_LIMIT).decode("utf-8", "replace")
        output, size = _output(WORK / "out" / "output.log")
        answer = {"id": request_id, "end": end, "status": status, "report": report, "output": output,
                  "output_bytes": size, "seconds": round(time.monotonic() - start, 2),
                  "disk_full": shutil.disk_usage(WORK).free < (1 << 20)}
        with os.fdopen(os.dup(control_out), "w") as answers:
            answers.write(json.dumps(answer) + "\n")
    finally:
        os._exit(0)


def main(argv: list[str]) -> None:
    role = argv[0]
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE 0: no ptrace, no /proc/PID/mem, by any child
    control_in, control_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    with collector.preloading():   # never collected again: a child's collections skip it (and its pages)
        _preload(role, argv[1:])
    os.write(control_out, (json.dumps({"ready": os.getpid(), "role": role}) + "\n").encode())
    while not select.select([control_in], [], [], 1.0)[0] or _serve(role, control_in, control_out):
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
