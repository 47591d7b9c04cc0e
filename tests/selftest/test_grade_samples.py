"""Submissions for the grader's tests: honest ones in unusual styles, and attacks a student might add.

No checks here (pytest collects none): test_grade.py and test_grade_attacks.py take their
submissions from this one place.

* :data:`INDEPENDENT`: an independent correct implementation (tests/selftest/variants/styled/; the reference for
  an exercise that has no styled variant yet).
* :data:`HONEST`: correct code as learners really write it, each module with one habit the old
  grader zeroed: a helper module imported relatively, ``os``/``pathlib`` for the data root,
  ``sys``/``logging`` for progress lines, ``argparse``, type hints, dataclasses, prints.
* :data:`ATTACKS`: code put into a module to get marks without the work, or to reach past the
  sandbox. ``{name}`` is the module's name, ``{marker}`` a unique string, ``{out}`` the grader's
  output folder, ``{sock}`` / ``{port}`` a Unix socket and a TCP port the test listens on,
  ``{solutions}`` the reference solutions' folder, ``{checks}`` the checks' folder, ``{source}`` a module's
  text, ``{size}`` megabytes. :data:`HOSTILE` are what one hand-in may do to the next, or to the run.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kata import curriculum, pristine
from kata.checks.mutants import mutated
from kata.project import locate

STYLED = Path(__file__).with_name("variants") / "styled"
INDEPENDENT = {**{ex: (locate().solutions / f"{ex}.py").read_text() for ex in curriculum.names()},
               **{path.stem: path.read_text() for path in sorted(STYLED.glob("*.py"))}}

# --- honest, unusual ---------------------------------------------------------------------------


def _honest() -> dict[str, str]:
    devices = mutated("devices", ("import numpy as np\n", "import numpy as np\n\nfrom ._helpers import leaves\n"))
    helpers = '''"""My own helpers (imported relatively: `from ._helpers import leaves`)."""
import logging
import sys

log = logging.getLogger("smiles")


def leaves(obj):
    """Count the leaves of a nest (used nowhere that matters; a learner's habit)."""
    print("counting leaves", file=sys.stderr)
    if isinstance(obj, dict):
        obj = list(obj.values())
    return sum(leaves(v) for v in obj) if isinstance(obj, (list, tuple)) else 1
'''
    data = mutated("data", ("import torch\n", "import argparse\nimport os\nimport pathlib\n\nimport torch\n"),
                   ("def load_splits(root, n_train=16000, n_valid=1000):\n",
                    "def load_splits(root: 'str | os.PathLike', n_train: int = 16000, n_valid: int = 1000):\n"
                    "    root = pathlib.Path(os.fspath(root)).expanduser()\n"
                    "    parser = argparse.ArgumentParser(add_help=False)  # a habit from scripts\n"))
    training = mutated("training", ("import torch\n", "import logging\nimport sys\n"
                                                     "from dataclasses import dataclass\n\nimport numpy as np\n"
                                                     "import torch\n"),
                       ("lr=0.001", "lr=np.float64(0.001)"),   # a rate from a NumPy sweep: a number all the same
                       ("    return history\n", "    print(f'trained {num_epochs} epochs', file=sys.stderr)\n"
                                              "    logging.getLogger('smiles').info('done')\n    return history\n"))
    return {**{ex: (locate().solutions / f"{ex}.py").read_text() for ex in curriculum.names()},
            "devices": devices, "_helpers": helpers, "data": data, "training": training}


HONEST = _honest()

# --- attacks -----------------------------------------------------------------------------------

ATTACKS = {
    # Answers: the reference solutions, read from where they are on the teacher's disk.
    "answers-absolute": 'exec(open("{solutions}/{name}.py").read())\n',
    "answers-locate": 'from kata.project import locate as _l\nexec(_l().solutions.joinpath("{name}.py").read_text())\n',
    # The checks' own helpers: the book's CNN and loop, taken instead of written.
    "helpers": "from kata.checks.book import book_cnn as build_model  # noqa\n",
    # Forged verdicts: pytest's reports rewritten to "passed".
    "forge-report": """
import _pytest.reports as _r
_r.BaseReport.failed = property(lambda self: False)
_r.BaseReport.passed = property(lambda self: True)
_r.TestReport.outcome = property(lambda self: "passed", lambda self, value: None)
""",
    # ... the report log itself written by the submission: every check "passed", then the process ends.
    "forge-log": """
import gc as _gc, json as _json, os as _os, re as _re
_path = next((str(o._log_path) for o in _gc.get_objects() if type(o).__name__ == "ReportLogPlugin"), None)
if _path:
    _lines = []
    for _file in sorted(_os.listdir("{checks}")):
        if _file.startswith("test_") and _file.endswith(".py"):
            _ex = _file[5:-3]
            for _test in _re.findall(r"^def (test_\\w+)", open(_os.path.join("{checks}", _file)).read(), _re.M):
                for _when in ("setup", "call", "teardown"):
                    _lines.append(_json.dumps({{"$report_type": "TestReport", "nodeid": f"tests/{{_file}}::{{_test}}",
                                               "when": _when, "outcome": "passed", "longrepr": None,
                                               "user_properties": [["kata_exercise", _ex],
                                                                   ["kata_outcome", "passed"]]}}))
    with open(_path, "a") as _f:
        _f.write("\\n".join(_lines) + "\\n" + _json.dumps({{"$report_type": "SessionFinish"}}) + "\\n")
    _os._exit(0)
""",
    # ... from a thread that walks the garbage collector for the reporter and wraps it.
    "forge-gc-thread": """
import gc as _gc, threading as _threading, time as _time
def _wrap():
    for _ in range(200):
        for obj in _gc.get_objects():
            if type(obj).__name__ == "TestReport" and getattr(obj, "outcome", None) == "failed":
                try:
                    obj.outcome, obj.longrepr = "passed", None
                except Exception:
                    pass
        _time.sleep(0.02)
_threading.Thread(target=_wrap, daemon=True).start()
""",
    # ... with attributes read through `match` class patterns (what static rules never see).
    "forge-match": """
import _pytest.reports as _r
match _r.TestReport:
    case type(__init__=_init):
        def _passed(self, *args, **kwargs):
            _init(self, *args, **kwargs)
            self.outcome, self.longrepr = "passed", None
        _r.TestReport.__init__ = _passed
""",
    # ... a builtin patched during the checks and put back at the end.
    "forge-builtin": """
import atexit as _atexit, builtins as _b
_real = _b.isinstance
_b.isinstance = lambda obj, cls: True if cls is not type else _real(obj, cls)
_atexit.register(lambda: setattr(_b, "isinstance", _real))
""",
    # What the sandbox must not let through (each raises when it gets through).
    "read-secrets": """
import glob as _glob
_read = []
for _path in ["/etc/shadow", "/root/.bashrc", "{out}/grades.csv", "{solutions}/training.py",
              *_glob.glob("/tmp/kata-grade-*/*/*/exercises/*.py")]:
    try:
        with open(_path) as _f:
            _f.read(1)
        _read.append(_path)
    except OSError:
        pass
if _read:
    raise RuntimeError("read what it must not: " + ", ".join(_read))
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
for _p in _started:   # ended and reaped: a zombie still counts against the submission's own process limit
    _p.kill()
    _p.join()
if len(_started) >= 200:
    raise RuntimeError("started 200 processes")
""",
    "detached-writer": """
import os as _os, time as _time
if _os.fork() == 0:
    _os.setsid()
    _time.sleep(4)
    for _name in ("grades.csv", "summary.json"):
        try:
            open(_os.path.join("{out}", _name), "w").write("hacked {marker}")
        except OSError:
            pass
    try:
        open("/tmp/{marker}-alive", "w").write("still here")
    except OSError:
        pass
    _os._exit(0)
""",
    "disk-hog": """
import os as _os
try:
    with open(_os.path.join(_os.environ.get("TMPDIR", "."), "hog"), "wb") as _f:
        for _ in range(1000):
            _f.write(b"x" * (1 << 20))
except OSError:
    pass
""",
    # What one hand-in leaves for the next (the grader removes it all, or replaces the sandbox): folders made
    # read-only, the hand-in's own and those above it, and in /tmp and /dev/shm ...
    "read-only-left": """
import os as _os
_here = _os.path.dirname(_os.path.abspath(__file__))
for _top in ("/tmp/kata-left-ro", "/dev/shm/kata-left-ro", _os.path.join(_os.environ.get("TMPDIR", "/tmp"),
                                                                        "kata-left-ro")):
    try:
        _os.makedirs(_os.path.join(_top, "inner"), exist_ok=True)
        open(_os.path.join(_top, "inner", "kept"), "w").write("kept")
        _os.chmod(_os.path.join(_top, "inner"), 0o500)
        _os.chmod(_top, 0o500)
    except OSError:
        pass
for _folder in (_here, _os.path.dirname(_here), _os.path.dirname(_os.path.dirname(_here)), "/tmp", "/dev/shm"):
    try:
        _os.chmod(_folder, 0o500)
    except OSError:
        pass
""",
    # ... modules: another exercise's, written beside its own (not handed in: missing, whatever the disk holds),
    # and helpers in the job's folder and /tmp, behind a read-only folder ...
    "module-left": """
import os as _os
_here = _os.path.dirname(_os.path.abspath(__file__))
_work = _os.path.dirname(_os.path.dirname(_here))
for _path, _text in ((_os.path.join(_here, "sync.py"), {source!r}),
                     (_os.path.join(_here, "kata_left.py"), "raise SystemExit('a module left behind ran')\\n"),
                     (_os.path.join(_work, "kata_left.py"), "raise SystemExit('a module left behind ran')\\n"),
                     ("/tmp/kata_left.py", "raise SystemExit('a module left behind ran')\\n")):
    try:
        open(_path, "w").write(_text)
    except OSError:
        pass
try:
    _os.chmod(_here, 0o500)
except OSError:
    pass
""",
    # ... System V shared memory ({size} MB, touched, never removed: no tmpfs size holds it) ...
    "shared-memory-left": """
import ctypes as _ctypes
_libc = _ctypes.CDLL(None)
_libc.shmat.restype = _ctypes.c_void_p
_size = {size} << 20
_id = _libc.shmget(0, _ctypes.c_size_t(_size), 0o1600)   # IPC_PRIVATE, IPC_CREAT | 0600
_at = _libc.shmat(_id, None, 0) if _id >= 0 else None
if _at and _at != _ctypes.c_void_p(-1).value:
    _ctypes.memset(_at, 1, _size)
    _libc.shmdt(_ctypes.c_void_p(_at))
""",
    # Hostile reports: a FIFO in place of the report and the output (a reader that opens it waits forever) ...
    "fifo-report": """
import os as _os
for _name in ("report.jsonl", "output.log"):
    for _path in (_os.path.join("out", _name), _os.path.join("..", "out", _name)):
        try:
            _os.unlink(_path)
            _os.mkfifo(_path)
        except OSError:
            pass
""",
    # ... a line nested 100,000 deep (json.loads raises RecursionError) ...
    "nested-report": """
import os as _os
for _path in (_os.path.join("out", "report.jsonl"), _os.path.join("..", "out", "report.jsonl")):
    if _os.path.isfile(_path):
        with open(_path, "a") as _f:
            _f.write("\\n" + "[" * 100000 + "\\n" + "{{" * 100000 + "\\n")
""",
    # ... every record and every report written twice (which one would the grader take?) ...
    "twice": """
import gc as _gc
for _o in _gc.get_objects():
    try:
        if type(_o).__name__ == "ReportLogPlugin":
            _o._write_json_data = lambda data, _w=_o._write_json_data: (_w(data), _w(data))
        elif type(_o).__name__ == "TextIOWrapper" and str(getattr(_o, "name", "")).endswith("report.jsonl"):
            _o.write = lambda text, _w=_o.write: (_w(text), _w(text))[0]
    except Exception:
        pass
""",
    # ... and a process that outlives the test process: at its end, "passed" for every check of the module, then
    # the next hand-in's modules overwritten.
    "write-after-end": """
import glob as _glob, json as _json, os as _os, re as _re, select as _select, time as _time
_child, _mine = _os.getpid(), _os.getcwd()
_pid = _os.fork()
if _pid == 0:
    _os.setsid()
    if _os.fork() == 0:
        try:
            _select.select([_os.pidfd_open(_child)], [], [], 300)   # the test process's end, the moment it comes
            _tests = _re.findall(r"^def (test_\\w+)", open("{checks}/test_{name}.py").read(), _re.M)
            with open(_os.path.join(_mine, "out", "report.jsonl"), "a") as _f:
                for _test in _tests:
                    for _when in ("setup", "call", "teardown"):
                        _f.write(_json.dumps({{"$report_type": "TestReport", "when": _when, "outcome": "passed",
                                              "nodeid": f"tests/test_{name}.py::{{_test}}", "longrepr": None,
                                              "user_properties": [["kata_exercise", "{name}"],
                                                                  ["kata_outcome", "passed"]]}}) + "\\n")
                _f.write(_json.dumps({{"$report_type": "SessionFinish"}}) + "\\n")
        except BaseException:
            pass
        _end = _time.monotonic() + 60
        while _time.monotonic() < _end:
            for _py in _glob.glob(_os.path.join(_os.path.dirname(_mine), "*", "exercises", "*.py")):
                if not _py.startswith(_mine + _os.sep):
                    try:
                        open(_py, "w").write("raise SystemExit('written by an earlier hand-in')\\n")
                    except OSError:
                        pass
            _time.sleep(0.005)
    _os._exit(0)
_os.waitpid(_pid, 0)
""",
    # Code that computes only where it can tell it is graded: the grader's variables, host name or user (then
    # the solution; elsewhere, the stub: see probed()).
    "probe-env": """
import getpass as _getpass, os as _os, socket as _socket
try:
    _environ = open("/proc/self/environ", "rb").read()
except OSError:
    _environ = b""
_GRADED = (any(_k.startswith("KATA_") for _k in _os.environ) or b"KATA_" in _environ
           or _socket.gethostname() == "kata-sandbox" or _getpass.getuser() == "student")
""",
    # Not an attack: a victim's look for what an earlier hand-in left (it raises, and loses its module's points,
    # when it finds any).
    "clean-start": """
import glob as _glob, os as _os
_mine = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
_left = [_p for _folder in (_os.path.dirname(_mine), "/tmp", "/dev/shm", "/var/tmp") for _p in
         _glob.glob(_os.path.join(_folder, "*")) + _glob.glob(_os.path.join(_folder, "*", "*"))
         if "kata-left" in _p or "kata_left" in _p]
for _kind in ("shm", "sem", "msg"):
    try:
        _header, *_rows = open("/proc/sysvipc/" + _kind).read().splitlines()
    except (OSError, ValueError):
        continue
    _left += [_kind for _row in _rows if dict(zip(_header.split(), _row.split())).get("uid") == str(_os.getuid())]
for _pid in filter(str.isdigit, _os.listdir("/proc")):   # its own children (the laptops' server) were left by none
    try:
        _status = open(f"/proc/{{_pid}}/status").read()
        _uid, _ppid = (_status.split(_field)[1].split()[0] for _field in ("\\nUid:", "\\nPPid:"))
    except (OSError, IndexError):
        continue
    if int(_pid) not in (1, _os.getpid(), _os.getppid()) and int(_ppid) != _os.getpid() and _uid == str(_os.getuid()):
        _left.append("process " + _pid)
if _left:
    raise RuntimeError("found what an earlier hand-in left: " + ", ".join(_left[:10]))
""",
}
FORGING = ("forge-report", "forge-log", "forge-gc-thread", "forge-match", "forge-builtin")
ANSWERS = ("answers-absolute", "answers-locate")
LEFTOVERS = ("read-only-left", "module-left", "shared-memory-left", "fifo-report", "nested-report")
HOSTILE = LEFTOVERS + ("twice", "write-after-end", "probe-env")


def attack(kind: str, name: str, **values) -> str:
    """The attack ``kind`` as code for module ``name``."""
    project = locate()
    fields = {"name": name, "marker": "kata-marker", "out": "/nonexistent", "sock": "/nonexistent.sock", "port": 9,
              "solutions": str(project.solutions), "checks": str(project.checks), "source": "", "size": 512, **values}
    return ATTACKS[kind].format(**fields)


@cache
def _stubs() -> tuple[tuple[str, str | None], ...]:
    return tuple((ex.name, pristine.stub_source(ex.name)) for ex in curriculum.exercises())


def sources(base: str = "solutions", **modules: str | None) -> dict[str, str | None]:
    """Each exercise's module: the reference solution or the pristine stub (``base``: "solutions" or "stubs"),
    replaced where given. The stubs come from kata.pristine, never from exercises/ as it is (in a learner's copy it
    holds their work); without them (no .kata/pristine/ snapshot, no git history) the test is skipped, saying so."""
    if base == "stubs":
        out = dict(_stubs())
        missing = [name for name, source in out.items() if source is None]
        if missing:
            pytest.skip(f"no pristine stub of {', '.join(missing)} (no .kata/pristine/ snapshot, no git history)")
    else:
        assert base == "solutions", base
        out = {ex.name: (locate().solutions / f"{ex.name}.py").read_text() for ex in curriculum.exercises()}
    out.update(modules)
    return out


def write(folder: Path, modules: dict[str, str | None]) -> Path:
    """A submission folder holding ``modules`` (None: left out)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        if source is not None:
            (folder / f"{name}.py").write_text(source)
    return folder


def with_attack(kind: str, base: str = "solutions", where: tuple[str, ...] | None = None,
                **values) -> dict[str, str | None]:
    """Every module (or those in ``where``) with the attack put in front."""
    modules = sources(base)
    for name in where or tuple(modules):
        modules[name] = attack(kind, name, **values) + "\n" + modules[name]
    return modules


def probed(name: str) -> str:
    """Module ``name``: the solution where the probe finds the grader's traces, the stub everywhere else (an attack
    that must earn nothing)."""
    stub = sources("stubs")[name]
    return attack("probe-env", name) + "\n" + sources()[name] + f"\nif not _GRADED:\n    exec({stub!r}, globals())\n"


def hostile(kind: str, name: str = "devices") -> str:
    """Module ``name`` with the hostile ``kind`` of :data:`HOSTILE` (over the stub where the attack forges
    verdicts, over the solution elsewhere: what it computes, it may keep)."""
    if kind == "probe-env":
        return probed(name)
    base = sources("stubs" if kind == "write-after-end" else "solutions")[name]
    return attack(kind, name, source=sources()["sync"]) + "\n" + base


def victim(modules: dict[str, str | None]) -> dict[str, str | None]:
    """A hand-in of ``modules`` whose first module raises on import when it finds what an earlier one left."""
    first = next(name for name, source in modules.items() if source is not None)
    return {**modules, first: attack("clean-start", first) + "\n" + modules[first]}


def wrong_learning_rate() -> str:
    """The training module with the learning rate the book does not use (a known mistake)."""
    return mutated("training", ("lr=0.001", "lr=0.01"))


# --- a declaration patched over: the right numbers computed under the wrong settings -----------------------------

BOOK_ADAM = "torch.optim.Adam(model.parameters(), lr=0.001)"

# Honest: the book's optimizer and loss, spelled otherwise (each keeps every point).
EQUIVALENT_TRAINING = {
    "lr=1e-3": [("lr=0.001", "lr=1e-3")],
    "positional": [(BOOK_ADAM, "torch.optim.Adam(model.parameters(), 0.001)")],
    "groups": [(BOOK_ADAM, 'torch.optim.Adam([{"params": model.parameters()}], lr=0.001)')],
    "default-lr": [(BOOK_ADAM, "torch.optim.Adam(model.parameters())")],
    "explicit-defaults": [(BOOK_ADAM, "torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-8, "
                                      "weight_decay=0, amsgrad=False)")],
    "factory": [(BOOK_ADAM, "make_optimizer(model.parameters())"),
                ("def evaluate(", "def make_optimizer(params, lr=1e-3):\n    return Adam(params, lr)\n\n\n"
                                  "def evaluate("),
                ("from torch import nn\n", "from torch import nn\nfrom torch.optim import Adam\n")],
    "loss-spelled": [("nn.BCELoss()", 'torch.nn.BCELoss(reduction="mean")')],
    "numpy-float64": [("lr=0.001", "lr=np.float64(0.001)"), ("import torch\n", "import numpy as np\nimport torch\n")],
    "numpy-float32": [("lr=0.001", "lr=np.float32(1e-3)"), ("import torch\n", "import numpy as np\nimport torch\n")],
    "float-of-literal": [("lr=0.001", "lr=float(0.001)")],
    "constant": [("lr=0.001", "lr=LEARNING_RATE"),
                 ("History = namedtuple", "LEARNING_RATE = 1e-2 / 10\n\nHistory = namedtuple")],
    "local": [(f"    optimizer = {BOOK_ADAM}", f"    lr = 0.001\n    optimizer = {BOOK_ADAM.replace('0.001', 'lr')}")],
    "swept": [(f"    optimizer = {BOOK_ADAM}", "    for rate in (0.001,):   # a sweep of one rate\n"
                                              f"        optimizer = {BOOK_ADAM.replace('0.001', 'rate')}")],
    "tensor": [("lr=0.001", "lr=torch.tensor(0.001)")],
}

# A patch of torch's optimizer that steps with the book's learning rate, whatever the code declared.
ADAM_STEP_PATCH = ("import torch as _torch\n_step = _torch.optim.Adam.step\n"
                   "def _book_lr(self, *a, **k):\n    for group in self.param_groups:\n        group['lr'] = 0.001\n"
                   "    return _step(self, *a, **k)\n_torch.optim.Adam.step = _book_lr\n")
FORGED_TRAINING = {
    # Adam.step rewritten to set the book's rate in each group before it steps.
    "step": ADAM_STEP_PATCH,
    # torch.optim.adam's functional implementation called with the book's rate.
    "functional": """import torch.optim.adam as _adam
_functional = _adam.adam
def _book_lr(*args, **kwargs):
    kwargs["lr"] = 0.001
    return _functional(*args, **kwargs)
_adam.adam = _book_lr
""",
    # Optimizer.__init__ wrapped: torch builds the declared groups, then the wrapper sets the book's rate.
    "init": """import torch as _torch
_init = _torch.optim.Optimizer.__init__
def _book_lr(self, params, defaults):
    _init(self, params, defaults)
    for group in self.param_groups:
        group["lr"] = 0.001
_torch.optim.Optimizer.__init__ = _book_lr
""",
    # param_groups made a property: what torch reads has the book's rate, what the code declared is kept apart.
    "param_groups": """import torch as _torch
def _groups(self):
    for group in self.__dict__.setdefault("_declared_groups", []):
        group["lr"] = 0.001
    return self.__dict__["_declared_groups"]
def _set_groups(self, value):
    self.__dict__["_declared_groups"] = value
_torch.optim.Optimizer.param_groups = property(_groups, _set_groups)
""",
}

# The audit's old in-process observer of declarations (a profile function) removed, or chained to one of the hand-in's
# own, over the step patch: the source is read outside the process, so neither matters.
FORGED_TRAINING["observer-removed"] = "import sys as _sys\n_sys.setprofile = lambda *a: None\n" + ADAM_STEP_PATCH
FORGED_TRAINING["observer-chained"] = ("import sys as _sys\n_set = _sys.setprofile\n"
                                       "_sys.setprofile = lambda f: _set(None if f is None else (lambda *a: None))\n"
                                       + ADAM_STEP_PATCH)
# A decoy: the book's optimizer built (and never stepped) beside the one that trains, at the wrong rate.
FORGED_TRAINING["decoy"] = (ADAM_STEP_PATCH
                            + "_decoy = _torch.optim.Adam(_torch.nn.Linear(1, 1).parameters(), lr=0.001)\n")

# A stub whose evaluate is the book's own, taken from the kata's helpers where the checks run (`from kata import
# checks`): the records' sandbox holds no such helper, so it computes nothing there.
BOOK_EVALUATE = """
from kata import checks as _checks
import kata.checks.book


def evaluate(model, dl, device=None):
    import torch
    model.eval()
    with torch.no_grad():
        return _checks.book.book_epoch(model, dl)
"""

# The model's dropout declared at p=0.2, shown (and applied) as the book's 0.5 by a class-level property.
DROPOUT_PATCH = """import torch.nn as _nn
def _book_p(self):
    return 0.5
def _declared_p(self, value):
    self.__dict__["_declared_p"] = value
_nn.modules.dropout._DropoutNd.p = property(_book_p, _declared_p)
"""


def equivalent_training(kind: str) -> str:
    """The training module with the book's optimizer or loss spelled another way (honest)."""
    return mutated("training", *EQUIVALENT_TRAINING[kind])


def forged_training(kind: str) -> str:
    """The wrong learning rate declared, and torch's optimizer patched to step with the book's (an attack)."""
    return FORGED_TRAINING[kind] + "\n" + wrong_learning_rate()


def patched_training() -> str:
    """Torch's optimizer patched to step with the book's learning rate, which the code declares too (honest)."""
    return ADAM_STEP_PATCH + "\n" + sources()["training"]


def forged_model() -> str:
    """Dropout declared at p=0.2 and a library patch that shows and applies p=0.5 (an attack)."""
    return DROPOUT_PATCH + "\n" + mutated("model", ("nn.Dropout(p=0.5)", "nn.Dropout(p=0.2)"))


def no_map_location() -> str:
    """The checkpoint module without map_location: it opens the file only where a GPU is (a known mistake that
    only the fresh process without an accelerator sees)."""
    return mutated("checkpoint", ("torch.load(path, map_location=device, weights_only=True)",
                                  "torch.load(path, weights_only=True)"))
