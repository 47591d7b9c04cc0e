"""The tripwire: what the test process itself refuses to let a submission's code do.

Installed by the grading child before the first module of the submission is
imported (kata/grading/child.py). It is the second layer, for what the static
vetting (kata/grading/vetting.py) can't see in the source: each thing it
refuses raises an error in the submission's code (so the attempt fails) and is
reported to the grader as a *flag* (file, line, what), which flags the
submission.

* An audit hook (PEP 578; it can't be removed once added) refuses, when the
  submission's own code does it: reading a function's ``__code__`` or a
  traceback's or generator's frame, replacing a function's ``__code__`` or
  defaults, ``sys._getframe``, ``exec`` and ``compile``, ``os.fork``, signals,
  sockets and ``ctypes``; and, whenever the submission's code is anywhere on
  the stack (a library doing it for it): walking the garbage collector's
  objects, tracing or profiling hooks, new audit hooks, starting programs, and
  opening files under the folders it must not read (the reference solutions,
  the grader's own).
* Library modules refuse attribute assignment and deletion by the submission's
  code (``m.allclose = ...`` on a module it got hold of indirectly).
* After every check, the modules and classes on the verdict's path (pytest,
  pluggy, the kata, the checks, ``os``, ``json``, ``math``, torch's and numpy's
  comparison functions, the classes the checks compare) are compared with how
  they were before the submission's first import: a change is flagged.

Only the standard library is imported here.
"""

from __future__ import annotations

import builtins
import sys
import threading
import types
from collections.abc import Callable
from itertools import repeat
from operator import getitem, is_

__all__ = ["Blocked", "Tripwire"]

# Refused when the submission's own code (the innermost Python frame) does it.
DIRECT = {
    "object.__getattr__": "reads {1} of a {0}",
    "sys._getframe": "looks at the call stack (sys._getframe)",
    "sys._getframemodulename": "looks at the call stack",
    "exec": "runs code built at run time (exec)",
    "compile": "compiles code at run time",
    "function.__new__": "makes a function from a code object",
    "code.__new__": "makes a code object",
    "os.fork": "starts a process (os.fork)",
    "os.forkpty": "starts a process",
    "os.kill": "sends a signal (os.kill)",
    "os.killpg": "sends a signal (os.killpg)",
    "signal.pthread_kill": "sends a signal",
    "socket.__new__": "opens a socket",
    "socket.connect": "connects a socket",
    "socket.bind": "binds a socket",
    "socket.gethostname": "reads the host name",
    "ctypes.dlopen": "loads a C library (ctypes)",
    "ctypes.dlsym": "looks up a C symbol (ctypes)",
    "ctypes.addressof": "takes an address (ctypes)",
    "ctypes.cdata": "reads memory (ctypes)",
    "ctypes.string_at": "reads memory (ctypes)",
    "marshal.loads": "loads code (marshal)",
}
# Refused while the submission's code is anywhere on the stack.
ANYWHERE = {
    "gc.get_objects": "walks every object (gc.get_objects)",
    "gc.get_referrers": "walks the objects that refer to one (gc.get_referrers)",
    "gc.get_referents": "walks the garbage collector's graph",
    "sys.settrace": "installs a tracing hook",
    "sys.setprofile": "installs a profiling hook",
    "sys.addaudithook": "installs an audit hook",
    "os.system": "runs a program (os.system)",
    "os.exec": "runs a program (os.exec*)",
    "os.posix_spawn": "runs a program (posix_spawn)",
    "os.spawn": "runs a program (os.spawn*)",
    "subprocess.Popen": "runs a program (subprocess)",
    "pty.spawn": "runs a program (pty)",
}
SET_EVENTS = ("object.__setattr__", "object.__delattr__")
GUARDED_FUNCTION_ATTRIBUTES = ("__code__", "__defaults__", "__kwdefaults__")
FILE_EVENTS = ("open", "os.listdir", "os.scandir", "os.chdir", "shutil.copyfile", "shutil.rmtree", "os.remove",
               "os.rename", "os.mkdir", "os.symlink", "os.link")
WATCHED = frozenset(DIRECT) | frozenset(ANYWHERE) | frozenset(SET_EVENTS) | frozenset(FILE_EVENTS)
# The reads of "object.__getattr__" that hand out code or frames (f_code needs a frame first).
GUARDED_READS = frozenset({"__code__", "tb_frame", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame",
                           "ag_code"})


_MISSING = object()
CACHES = frozenset({"__slotnames__", "__annotations__", "__annotate__"})   # what Python adds to a class on use
_BUILTIN_NAMES = frozenset(vars(builtins))


class _Held:
    """A small mutable container and a one-level copy of it, to see it changed in place (compared in C)."""

    __slots__ = ("container", "keys", "values")

    def __init__(self, container):
        self.container = container
        if type(container) is dict:
            self.keys, self.values = tuple(container), tuple(container.values())
        else:
            self.keys, self.values = None, type(container)(container)

    def same(self, now) -> bool:
        if now is not self.container:
            return False
        if self.keys is not None:
            return len(now) == len(self.keys) and all(map(is_, map(now.get, self.keys, repeat(_MISSING)),
                                                          self.values))
        if type(now) is list:
            return len(now) == len(self.values) and all(map(is_, now, self.values))
        return now == self.values


def _same(now, before) -> bool:
    if now is before or before is None:   # None: a cache the library fills on first use
        return True
    return type(now) in (int, float, str, bytes, bool) and type(now) is type(before) and now == before


class _Record:
    """A namespace as it was: its keys and values (compared by identity, in C), and its small
    containers copied one level deep (to see them changed in place)."""

    __slots__ = ("label", "obj", "keys", "values", "held")

    def __init__(self, label: str, obj):
        self.label, self.obj = label, obj
        namespace = vars(obj)
        self.keys = tuple(namespace)
        self.values = tuple(namespace.values())
        self.held = [(k, _Held(v)) for k, v in namespace.items() if type(v) in (list, dict, set) and len(v) <= 256]

    def changed(self, ignore: frozenset[tuple[str, str]]) -> list[str]:
        namespace = vars(self.obj)
        now = tuple(map(namespace.get, self.keys, repeat(_MISSING)))
        names = []
        if len(namespace) != len(self.keys) or not all(map(is_, now, self.values)):
            names = [k for k, a, b in zip(self.keys, now, self.values, strict=True)
                     if a is not b and not _same(a, b) and (self.label, k) not in ignore]
            grown = [k for k in namespace if k not in self.keys and k not in CACHES]
            # A class that gained an entry (a property over an attribute), or a module a builtin's name.
            names += grown if isinstance(self.obj, type) else [k for k in grown if k in _BUILTIN_NAMES]
        names += [k for k, held in self.held if not held.same(namespace.get(k, _MISSING))]
        return names


class Blocked(PermissionError):
    """The grader refused what the submission's code tried (see the message)."""


class Tripwire:
    """The audit hook, the module guard and the integrity record of one test process."""

    def __init__(self, folder: str, forbidden: list[str], report: Callable[[dict], None],
                 ignore: frozenset[tuple[str, str]] = frozenset()):
        self.folder = folder.rstrip("/") + "/"
        self.forbidden = tuple(p.rstrip("/") for p in forbidden if p)
        self.report = report
        self.local = threading.local()
        self.getframe = sys._getframe
        self.reported: set[tuple] = set()
        self.record: list[_Record] = []
        self.flat: tuple | None = None
        self.ignore = ignore
        self.package = "\0"

    # --- where the submission's code is -------------------------------------------------

    def mine(self, code: types.CodeType) -> bool:
        return code.co_filename.startswith(self.folder)

    def innermost(self, depth: int) -> types.FrameType | None:
        try:
            return self.getframe(depth)
        except ValueError:
            return None

    def nearest_mine(self, depth: int) -> types.FrameType | None:
        frame = self.innermost(depth)
        while frame is not None:
            if self.mine(frame.f_code):
                return frame
            frame = frame.f_back
        return None

    def block(self, frame: types.FrameType | None, what: str) -> None:
        file = frame.f_code.co_filename[len(self.folder):] if frame is not None else "?"
        line = frame.f_lineno if frame is not None else 0
        key = (file, line, what)
        if key not in self.reported:
            self.reported.add(key)
            self.report({"e": "flag", "where": f"exercises/{file} line {line}", "what": what,
                         "by": "refused by the test process's tripwire"})
        raise Blocked(f"kata grade: refused: the submission's code {what} (exercises/{file} line {line})")

    # --- the audit hook ---------------------------------------------------------------------

    def hook(self, event: str, args: tuple) -> None:
        if event not in WATCHED or getattr(self.local, "busy", False):
            return
        if event == "object.__getattr__" and (len(args) < 2 or args[1] not in GUARDED_READS):
            return
        self.local.busy = True
        try:
            self.judge(event, args, DIRECT.get(event), ANYWHERE.get(event))
        finally:
            self.local.busy = False

    def judge(self, event: str, args: tuple, direct: str | None, anywhere: str | None) -> None:
        if event in FILE_EVENTS:
            path = args[0] if args else None
            if isinstance(path, bytes):
                path = path.decode(errors="replace")
            if isinstance(path, str) and self.forbidden and path.startswith(self.forbidden):
                frame = self.nearest_mine(3)
                if frame is not None:
                    self.block(frame, f"opens {path}, which it must not read")
            return
        if anywhere is not None:
            frame = self.nearest_mine(3)
            if frame is not None:
                self.block(frame, anywhere)
            return
        caller = self.innermost(3)
        if caller is None or not self.mine(caller.f_code):
            return
        if direct is not None:
            owner = type(args[0]).__name__ if args else "?"
            name = args[1] if len(args) > 1 and isinstance(args[1], str) else "?"
            self.block(caller, direct.format(owner, name))
        obj, name = (args[0], args[1]) if len(args) >= 2 else (None, None)
        if isinstance(obj, types.FunctionType) and name in GUARDED_FUNCTION_ATTRIBUTES and not self.mine(obj.__code__):
            self.block(caller, f"replaces {name} of {getattr(obj, '__qualname__', '?')}, which is not its own")
        if isinstance(obj, type) and not str(getattr(obj, "__module__", "")).startswith(self.package):
            self.block(caller, f"changes {name} of the class {obj.__qualname__}, which is not its own")

    # --- the module guard -----------------------------------------------------------------

    def guard_modules(self) -> int:
        """Library modules refuse attribute assignment by the submission's code. Returns how many."""
        tripwire = self

        class GuardedModule(types.ModuleType):
            def __setattr__(self, name, value):
                tripwire.refuse_module_change(self, name, "assigns")
                super().__setattr__(name, value)

            def __delattr__(self, name):
                tripwire.refuse_module_change(self, name, "deletes")
                super().__delattr__(name)

        count = 0
        for module in list(sys.modules.values()):
            if getattr(module, "__file__", "") and str(module.__file__).startswith(self.folder):
                continue
            if type(module) is types.ModuleType:
                try:
                    module.__class__ = GuardedModule
                    count += 1
                except TypeError:
                    continue
        return count

    def refuse_module_change(self, module: types.ModuleType, name: str, verb: str) -> None:
        if getattr(self.local, "busy", False):
            return
        self.local.busy = True
        try:
            frame = self.innermost(3)   # 0: here, 1: __setattr__, 2: its caller (or a C caller's)
            if frame is not None and self.mine(frame.f_code):
                self.block(frame, f"{verb} {module.__name__}.{name}, a library's attribute")
        finally:
            self.local.busy = False

    # --- the integrity record -------------------------------------------------------------

    def remember(self, modules: list[types.ModuleType], classes: list[type], own: tuple[str, ...] = ()) -> None:
        """Record the namespaces of ``modules`` and ``classes``, and of the classes defined by those of
        ``modules`` whose names start with one of ``own`` (the kata's, the checks', pytest's)."""
        seen: set[int] = set()
        for module in modules:
            if id(module) in seen:
                continue
            seen.add(id(module))
            namespace = vars(module)
            self.record.append(_Record(f"module {module.__name__}", module))
            if module.__name__.startswith(own):
                classes = classes + [v for v in list(namespace.values())
                                     if isinstance(v, type) and v.__module__ == module.__name__]
        for cls in classes:
            if id(cls) not in seen:
                seen.add(id(cls))
                self.record.append(_Record(f"class {cls.__module__}.{cls.__qualname__}", cls))

    def changed(self) -> list[str]:
        """What differs from the record, each change said once: ``module torch: allclose``."""
        if self.unchanged():
            return []
        found = []
        for record in self.record:
            names = record.changed(self.ignore)
            if names:
                key = (record.label, tuple(names))
                if key not in self.reported:
                    self.reported.add(key)
                    found.append(f"{record.label}: {', '.join(sorted(names)[:5])}")
        return found

    def unchanged(self) -> bool:
        """The quick look (all in C): every entry still there, the same object, no namespace grown,
        no small container changed in place."""
        if self.flat is None:
            spaces = [vars(r.obj) for r in self.record]
            self.flat = (spaces, tuple(map(len, spaces)),
                         [space for r, space in zip(self.record, spaces, strict=True) for _ in r.keys],
                         tuple(k for r in self.record for k in r.keys), tuple(v for r in self.record for v in r.values),
                         [held for r in self.record for _, held in r.held])
        spaces, sizes, owners, keys, values, held = self.flat
        try:
            now = tuple(map(getitem, owners, keys))
        except KeyError:
            return False
        return (tuple(map(len, spaces)) == sizes and all(map(is_, now, values))
                and all(h.same(h.container) for h in held))

    def install(self, package: str) -> None:
        """The audit hook (for good), with ``package`` the prefix of the submission's module names."""
        self.package = package
        sys.addaudithook(self.hook)
