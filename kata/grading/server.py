"""A job's server, ``python -m kata.grading.server ROLE``: the heavy libraries imported once, a child per request
(one JSON line on stdin), in a folder of its own. ``records``, in the hand-in's sandbox, asks a hand-in's modules
the records; ``verdicts``, the grader's own process, never given a hand-in's code, runs the checks on their answers.
A process forked once every other process of the sandbox is ended reads the report as hostile input, brings the
sandbox back (kata/grading/leftovers.py) and answers one JSON line on stdout (slots.Answer): the server never holds
a hand-in's files for a later child to inherit. Why: docs/teaching.md, "The trust model", 5.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import json
import os
import posix
import secrets
import select
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from kata.grading import hostile
from kata.grading.leftovers import Leftovers
from kata.harness import collector, forked
from kata.i18n import say, set_language
from kata.project import ProjectError, locate

__all__ = ["main"]

WORK = Path("/kata-job")      # the job's folder (KATA_WORK), a folder of its own per hand-in inside it
KIND = "none"                 # the sandbox (KATA_SANDBOX): "bubblewrap", "user" or "none"
DATA = Path(".")              # the run's data, the records' small CelebA (KATA_DATA)
RECORDS = Path("records")     # the exercises' records (records/ of the checkout: KATA_HOME)
REPORT_LIMIT = 48 << 20
OUTPUT_KEEP = 24 << 10
SHARED = ("torch", "torchvision.transforms.v2", "matplotlib.pyplot", "matplotlib.backends.backend_agg", "kata.sim",
          "kata.celeba")   # with torch.nn and torch.optim, torchvision.transforms, NumPy and PIL
PRELOAD = {"verdicts": SHARED + ("pytest", "pytest_timeout", "pytest_reportlog.plugin", "hypothesis",
                               "kata.harness.plugin", "kata.checks.book", "kata.records.doubles",
                               "kata.records.strategies", "kata.checks.messages", "kata.data.synth"),
           "records": SHARED + ("kata.records", "kata.records.elsewhere", "kata.harness.target")}


def _preload(role: str, collect: list[str]) -> None:
    for name in PRELOAD[role]:
        with contextlib.suppress(Exception):   # the child imports (and reports) what is missing itself
            importlib.import_module(name)
    with contextlib.suppress(Exception):
        forked.warm_torch()
    if role == "records":
        from kata import curriculum, records

        for exercise in curriculum.names():
            records.load(RECORDS / f"{exercise}.py")
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


def _child_records(request: dict, folder: Path) -> int:
    from kata import curriculum, records, sim
    from kata.harness.target import Target
    from kata.records import elsewhere

    laptops = elsewhere.serve_laptops()   # forked from this process as it is: torch imported, no accelerator
    records.few_threads()   # as in a learner's run (kata/harness/plugin.py): the same floats, no spinning thread
    context = records.Context(sim.install() if sim.support()[0] else None, folder / "tmp", DATA / records.DATA)
    target = Target(folder / "exercises")
    done = set(request.get("skip", []))
    with open(folder / "out" / "report.jsonl", "a", encoding="utf-8") as out, records.using(context):
        for exercise in curriculum.names():
            skip = {n.split("/", 1)[1] for n in done if n.startswith(f"{exercise}/")}
            load = functools.partial(target.imported, exercise)
            for name, result in records.ask_exercise(exercise, load, request["seed"], RECORDS / f"{exercise}.py",
                                                     skip):
                try:
                    line = json.dumps([exercise, name, result])
                except (TypeError, ValueError) as exc:
                    line = json.dumps([exercise, name, {"error": say("the record is not data ({exc})", exc=exc)}])
                out.write(line + "\n")
                out.flush()
    if laptops:
        laptops()
    return 0


def _child(role: str, folder: Path, control_in: int, told: int, out_fd: int) -> None:
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
        from kata.harness.target import Target

        Target.only(request["files"])   # a module not handed in is missing, whatever the disk holds
        for name, text in request["files"].items():
            (folder / "exercises" / name).write_text(text, encoding="utf-8")
        if "records" in request:   # answers to check (the grader's, a hand-in's records): no hand-in's code here
            answers = {**request["records"], "celeba": str(DATA / request["records"]["celeba"])}
            (folder / "records.json").write_text(json.dumps(answers), encoding="utf-8")
        forked.streams_to(out_fd)
        home = folder / "home"
        os.environ.update(HOME=str(home), TMPDIR=str(folder / "tmp"), MPLCONFIGDIR=str(home / ".matplotlib"),
                          XDG_CACHE_HOME=str(home / ".cache"), TORCH_HOME=str(home / ".torch"))
        tempfile.tempdir = None   # found again, in this hand-in's own folder
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.chdir(folder)
        os.umask(0o077)
        if role == "records":
            status = _child_records(request, folder)
        else:
            import pytest

            status = int(pytest.main([a.replace("{work}", str(folder)) for a in request["args"]]))
    except BaseException as exc:  # noqa: BLE001 - whatever happens, say it and end
        print(say("kata grade: the test process ended with {kind}: {exc}", kind=type(exc).__name__, exc=exc),
              file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _wait(pid: int, request: dict, report: Path, control_out: int, leftovers: Leftovers) -> str:
    """Until the child ends (seen, not reaped: its group stays whole) or is ended: "exit", "wall" or "quiet". Each
    second, the grader is told what the sandbox holds outside its processes' memory."""
    start = heard = told = time.monotonic()
    size = 0
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        now = time.monotonic()
        with contextlib.suppress(OSError):
            grown = os.lstat(report).st_size
            size, heard = (grown, now) if grown != size else (size, heard)
        if now - told >= 1:
            told = now
            os.write(control_out, (json.dumps({"held": leftovers.held()}) + "\n").encode())
        quiet = request["quiet"] + (request.get("start", 0) if size == 0 else 0)
        if now - start > request["wall"] or now - heard > quiet:
            forked.end(pid)
            return "wall" if now - start > request["wall"] else "quiet"
        time.sleep(0.02)
    return "exit"


def _serve(role: str, control_in: int, control_out: int, leftovers: Leftovers) -> bool:
    """One request (False: there are none left), read by its child, answered by a process forked at its end."""
    folder = WORK / secrets.token_hex(16)   # never reused, and no earlier hand-in can know it
    for name in ("exercises", "out", "tmp", "home"):
        (folder / name).mkdir(parents=True, mode=0o700)
    out_fd = os.open(folder / "out" / "output.log", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    report = folder / "out" / "report.jsonl"
    report.touch()
    told, tell = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(role, folder, control_in, tell, out_fd)
    for fd in (out_fd, tell):
        os.close(fd)
    with os.fdopen(told, "rb") as limits:
        request = json.loads(limits.read() or b"null")
    end = _wait(pid, request, report, control_out, leftovers) if request is not None else "exit"
    status = leftovers.end_processes(pid)
    if os.fork() == 0:
        _answer(request, end, status, start, folder, control_out, leftovers)
    with contextlib.suppress(ChildProcessError):
        os.wait()
    return request is not None


def _answer(request: dict | None, end: str, status: int, start: float, folder: Path, control_out: int,
            leftovers: Leftovers) -> None:
    """The report and output read as a stranger's, the sandbox brought back, the answer written; never returns."""
    try:
        report, why = "", ""
        try:
            with hostile.open_regular(folder / "out" / "report.jsonl") as f:
                report = f.read(REPORT_LIMIT).decode("utf-8", "replace")
        except (OSError, hostile.Unreadable) as exc:
            why = say("left its report unreadable ({why})", why=exc)
        try:   # the output's head and tail, when long
            with hostile.open_regular(folder / "out" / "output.log") as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(OUTPUT_KEEP)
                if size > 2 * OUTPUT_KEEP:
                    f.seek(size - OUTPUT_KEEP)
                    head += f"\n... ({size - 2 * OUTPUT_KEEP:,} bytes of output left out) ...\n".encode()
                output = (head + f.read(OUTPUT_KEEP)).decode("utf-8", "replace")
        except (OSError, hostile.Unreadable) as exc:
            output, size = f"({exc})", 0
        disk_full = shutil.disk_usage(WORK).free < (1 << 20)
        try:
            left = leftovers.clear()
        except Exception as exc:  # noqa: BLE001 - a sandbox that can't be checked is replaced all the same
            left = [f"{type(exc).__name__}: {exc}"]
        if request is not None:
            answer = {"id": request["id"], "end": end, "status": status, "report": report, "output": output,
                      "output_bytes": size, "seconds": round(time.monotonic() - start, 2), "disk_full": disk_full,
                      "why": why, "left": left}
            with os.fdopen(os.dup(control_out), "w") as answers:
                answers.write(json.dumps(answer) + "\n")
    finally:
        os._exit(0)


def _settle() -> None:
    """The grader's ``KATA_*`` variables read into this process, then gone from its environment and from the copy
    the kernel shows (``/proc/self/environ``). ``KATA_SIM_UNTESTED`` (a teacher's own choice) stays for kata.sim."""
    global WORK, KIND, DATA, RECORDS
    WORK, KIND = Path(os.environ.get("KATA_WORK", WORK)), os.environ.get("KATA_SANDBOX", KIND)
    DATA = Path(os.environ.get("KATA_DATA", DATA))
    RECORDS = Path(os.environ.get("KATA_HOME", ".")) / "records"
    set_language(os.environ.get("KATA_LANG") or None)
    with contextlib.suppress(ProjectError):
        locate()   # found while KATA_HOME says where, and kept
    gone = {n.encode() for n in os.environ if n.startswith("KATA_") and n != "KATA_SIM_UNTESTED"}
    for name in gone:
        os.environ.pop(name.decode(), None)
        posix.environ.pop(name, None)
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        at, end = int(stat[47]), int(stat[48])   # env_start and env_end, the 50th and 51st fields
        for entry in ctypes.string_at(at, end - at).split(b"\0"):
            if entry.split(b"=")[0] in gone:
                ctypes.memset(at, 0, len(entry))
            at += len(entry) + 1


def main(argv: list[str]) -> None:
    role = argv[0]
    _settle()
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE 0: no ptrace, no /proc/PID/mem, by any child
    control_in, control_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    WORK.mkdir(parents=True, exist_ok=True)
    leftovers = Leftovers(KIND, WORK)   # the sandbox as it starts: after each hand-in, it is brought back to this
    with collector.preloading():   # never collected again: a child's collections skip it (and its pages)
        _preload(role, argv[1:])
    os.write(control_out, (json.dumps({"ready": os.getpid(), "role": role}) + "\n").encode())
    while not select.select([control_in], [], [], 1.0)[0] or _serve(role, control_in, control_out, leftovers):
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
