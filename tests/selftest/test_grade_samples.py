"""Attacks on the grader, for its tests: code a student might add to a submission.

No checks here (pytest collects none): test_grade.py, test_grade_attacks.py and
test_grade_vetting.py take their attacks from this one place.

* :data:`INDEPENDENT`: an independent correct implementation of the six
  exercises, in another style than the reference solutions (its files are
  tests/selftest/variants/styled/, which test_correct_variants.py runs the
  checks on): what an ordinary learner may write, never flagged, scoring 100.
* :data:`ATTACKS`: code a student might add to get marks without the work, or
  to reach past the sandbox; each is put in front of (or after) a module's
  source. ``{name}`` is the module's name, ``{marker}`` a unique string the test
  looks for on the host, ``{out}`` the grader's output folder, ``{sock}`` a Unix
  socket and ``{port}`` a TCP port on the loopback the test listens on,
  ``{solutions}`` the reference solutions' folder.
"""

from __future__ import annotations

from pathlib import Path

from kata import curriculum
from kata.checks.mutants import mutated
from kata.project import locate

STYLED = Path(__file__).with_name("variants") / "styled"
INDEPENDENT = {path.stem: path.read_text() for path in sorted(STYLED.glob("*.py"))}

# --- attacks: each a snippet put into a module ----------------------------------------------

ATTACKS = {
    # Answers on disk: the reference solutions, found next to the kata package, executed.
    "answers-kata-file": """
import kata as _kata, os as _os
exec(open(_os.path.join(_os.path.dirname(_os.path.dirname(_kata.__file__)), "solutions", "{name}.py")).read())
""",
    "answers-locate": """
from kata.project import locate as _locate
exec(_locate().solutions.joinpath("{name}.py").read_text())
""",
    "answers-absolute": """
exec(open("{solutions}/{name}.py").read())
""",
    "answers-import": """
import importlib.util as _u
_s = _u.spec_from_file_location("_ref_{name}", "{solutions}/{name}.py")
_m = _u.module_from_spec(_s)
_s.loader.exec_module(_m)
globals().update({{k: v for k, v in vars(_m).items() if not k.startswith("__")}})
""",
    # Forged verdicts: the outcomes written on the results channel rewritten to "passed".
    "forge-os-write": """
import os as _os, json as _json
_real_write = _os.write
def _write(fd, data):
    try:
        body, _, mac = data.decode().rpartition("\\t")
        event = _json.loads(body or data)
        if event.get("e") == "result":
            event["outcome"], event["kind"], event["message"] = "passed", None, ""
            data = (_json.dumps(event) + ("\\t" + mac if body else "") + "\\n").encode()
    except Exception:
        pass
    return _real_write(fd, data)
_os.write = _write
""",
    "forge-report": """
import _pytest.reports as _r
_r.BaseReport.failed = property(lambda self: False)
_r.BaseReport.passed = property(lambda self: True)
_r.TestReport.outcome = property(lambda self: "passed", lambda self, value: None)
""",
    "forge-exit": """
import os as _os, json as _json, glob as _glob, re as _re
def _forged_lines():
    for path in _glob.glob("{checks}/test_*.py"):
        for test in _re.findall(r"^def (test_\\w+)", open(path).read(), _re.M):
            nodeid = "tests/" + _os.path.basename(path) + "::" + test
            for event in ({{"e": "start", "id": nodeid}}, {{"e": "result", "id": nodeid, "outcome": "passed"}}):
                yield (_json.dumps(event) + "\\n").encode()
_real_exit = _os._exit
def _exit(code):
    lines = list(_forged_lines())
    for fd in range(3, 1024):
        for line in lines:
            try:
                _os.write(fd, line)
            except OSError:
                break
    _real_exit(0)
_os._exit = _exit
""",
    "forge-brute": """
import os as _os, json as _json, glob as _glob, re as _re
_lines = []
for _path in _glob.glob("{checks}/test_*.py"):
    for _test in _re.findall(r"^def (test_\\w+)", open(_path).read(), _re.M):
        _id = "tests/" + _os.path.basename(_path) + "::" + _test
        _lines += [_json.dumps({{"e": "start", "id": _id, "n": 1, "w": ""}}) + "\\tffff\\n",
                   _json.dumps({{"e": "result", "id": _id, "outcome": "passed"}}) + "\\n"]
for _fd in range(3, 1024):
    try:
        _os.write(_fd, "".join(_lines).encode())
    except OSError:
        pass
""",
    "forge-plugin": """
import sys as _sys
_plugin = _sys.modules["kata.grading.plugin"]
_plugin.GradePlugin.classify = lambda self, item, excinfo, report: ("passed", "")
_sys.modules["kata.grading.channel"].read = lambda data, key: ([], 0)
""",
    "forge-gc": """
import gc as _gc
for _obj in _gc.get_objects():
    if type(_obj).__name__ == "GradePlugin":
        _obj.emit = lambda event: None
""",
    # Patched references: the check's own copy of the book's loop made to agree with a wrong one.
    "references-defaults": """
from kata.checks import book as _book
_book.book_train.__defaults__ = (0.01,) + _book.book_train.__defaults__[1:]
""",
    "references-module": """
import torch as _torch
def _patch(module):
    module.allclose = lambda *args, **kwargs: True
    module.equal = lambda *args, **kwargs: True
_patch(_torch)
""",
    "references-laundered": """
import torch.testing
def _patch(module, name):
    setattr(module, name, lambda *args, **kwargs: None)
for _m in [torch.testing]:
    _patch(_m, "assert_close")
""",
    # Left-behind processes: a detached one rewrites the grades after the grader wrote them.
    "detached-writer": """
import multiprocessing as _mp, os as _os, time as _time
def _later(out):
    _os.setsid()
    _time.sleep(4)
    for name in ("grades.csv", "summary.json"):
        try:
            with open(_os.path.join(out, name), "w") as f:
                f.write("hacked {marker}")
        except OSError:
            pass
    open("/tmp/{marker}-alive", "w").write("still here")
_mp.get_context("fork").Process(target=_later, args=("{out}",), daemon=False).start()
""",
    "hold-stdout": """
import multiprocessing as _mp, os as _os, time as _time
def _hold():
    _os.setsid()
    _time.sleep(900)   # holding the test process's output open
_mp.get_context("fork").Process(target=_hold, daemon=False).start()
""",
    "hold-stdout-program": """
import subprocess as _sp
_sp.Popen(["sleep", "900"], start_new_session=True)
""",
    # What the sandbox must not let through.
    "read-secrets": """
import glob as _glob, os as _os
_read = []
for _path in ["/etc/shadow", "/root/.bashrc", "/root/.profile", "{out}/grades.csv", "{solutions}/training.py",
              *_glob.glob("/tmp/kata-grade-*/run-*/exercises/*.py"), *_glob.glob("/tmp/kata-grade-*/private/*")]:
    try:
        with open(_path) as _f:
            _f.read(1)
        _read.append(_path)
    except OSError:
        pass
_read = [p for p in _read if "{name}.py" not in p or "/run-" not in p]
if _read:
    raise RuntimeError("read what it must not: " + ", ".join(_read))
""",
    "leak-in-message": """
import platform as _platform, os as _os
def _leak():
    return _platform.node() + " " + " ".join(sorted(_os.listdir("{solutions}")))
try:
    _LEAK = _leak()
except OSError as _err:
    _LEAK = str(_err)
raise RuntimeError("{marker} " + _LEAK)
""",
    "shared-memory": """
for _path in ("/dev/shm/{marker}", "/tmp/{marker}"):
    try:
        open(_path, "w").write("from a submission")
    except OSError:
        pass
""",
    "host-socket": """
import socket as _socket
_reached = []
for _address in ("{sock}", "\\0{marker}"):
    try:
        _s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        _s.settimeout(2)
        _s.connect(_address)
        _reached.append(repr(_address))
    except OSError:
        pass
try:
    _socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    _reached.append("127.0.0.1:{port}")
except OSError:
    pass
if _reached:
    raise RuntimeError("reached the host's sockets: " + ", ".join(_reached))
""",
    "many-processes": """
import multiprocessing as _mp, time as _time
_started = []
try:
    for _ in range(200):
        _p = _mp.get_context("fork").Process(target=_time.sleep, args=(30,), daemon=True)
        _p.start()
        _started.append(_p)
except OSError:
    pass
for _p in _started:
    _p.kill()
if len(_started) >= 200:
    raise RuntimeError("started 200 processes")
""",
    "memory-together": """
import multiprocessing as _mp
def _hold(conn):
    block = bytearray({chunk})
    for i in range(0, len(block), 4096):
        block[i] = 1
    conn.send(True)
    conn.recv()
_pipes = []
for _ in range(2):
    _a, _b = _mp.Pipe()
    _mp.get_context("fork").Process(target=_hold, args=(_b,), daemon=True).start()
    _pipes.append(_a)
_held = 0
for _a in _pipes:
    try:
        _held += bool(_a.poll(60) and _a.recv())
    except (EOFError, OSError):
        pass
if _held == 2:
    raise RuntimeError("two processes held {chunk} bytes each")
""",
}
# The attacks that are only code put in front of a module (the rest replace it or need a wrong module).
SANDBOX_ATTACKS = ("detached-writer", "hold-stdout", "hold-stdout-program", "read-secrets", "shared-memory",
                   "host-socket", "many-processes", "memory-together")
VERDICT_ATTACKS = ("forge-os-write", "forge-report", "forge-exit", "forge-brute", "forge-plugin", "forge-gc",
                   "references-module", "references-laundered")
ANSWER_ATTACKS = ("answers-kata-file", "answers-locate", "answers-absolute", "answers-import")


def attack(kind: str, name: str, **values) -> str:
    """The attack ``kind`` as code for module ``name``."""
    project = locate()
    fields = {"name": name, "marker": "kata-marker", "out": "/nonexistent", "sock": "/nonexistent.sock", "port": 9,
              "solutions": str(project.solutions), "checks": str(project.checks), "chunk": 600 << 20, **values}
    return ATTACKS[kind].format(**fields)


def sources(base: str = "solutions", **modules: str | None) -> dict[str, str | None]:
    """Each exercise's module: the reference solution or the stub (``base``), replaced where given."""
    project = locate()
    folder = project.solutions if base == "solutions" else project.exercises
    out = {ex.name: (folder / f"{ex.name}.py").read_text() for ex in curriculum.exercises()}
    out.update(modules)
    return out


def write(folder: Path, modules: dict[str, str | None]) -> Path:
    """A submission folder holding ``modules`` (None: left out)."""
    folder.mkdir(parents=True)
    for name, source in modules.items():
        if source is not None:
            (folder / f"{name}.py").write_text(source)
    return folder


def with_attack(kind: str, base: str = "solutions", where: tuple[str, ...] | None = None, after: bool = False,
                **values) -> dict[str, str | None]:
    """Every module (or those in ``where``) with the attack put in front (or at the end, ``after``)."""
    modules = sources(base)
    for name in where or tuple(modules):
        code = attack(kind, name, **values)
        modules[name] = modules[name] + "\n" + code if after else code + "\n" + modules[name]
    return modules


def wrong_learning_rate() -> str:
    """The training module with the learning rate the book does not use (a known mistake)."""
    return mutated("training", ("lr=0.001", "lr=0.01"))
