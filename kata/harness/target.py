"""Which folder is being checked, and how its modules are imported.

A *target* is a folder that holds some or all of the exercises' modules
(``devices.py``, ``data.py``, ... as kata/curriculum.toml lists them), directly
or in an ``exercises/`` subfolder: the learner's ``exercises/``, the reference
``solutions/``, or a student's submission.

Its modules are imported from that folder only, by file path, as submodules of
a package made up for this one target (``_kata_target_1.data`` and so on). A
stray ``data.py`` elsewhere on ``sys.path`` can't shadow them, two targets can be
loaded side by side, and each process imports them afresh. Inside a target,
one module may import another relatively: ``from .devices import to_python``.

A module that is missing, fails to import, or lacks a name raises
:class:`TargetError` when a check first touches it, so only the checks that
need it fail, each with a message naming the file and the error.

A name still bound to its stub's value (``SMILING = None``: :func:`unset`, the
rule kata/pristine.py reads stubs by) raises :class:`NotSetYet` when a check
reads it: the check stops at the stub, as it does at an unwritten function's
``NotImplementedError``, and counts as one (kata/harness/failures.py). The
learner's own code reading its global still gets the value.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import types
from collections.abc import Callable
from pathlib import Path

from kata import curriculum
from kata.harness.tracebacks import Place, display, place_in
from kata.i18n import _, say
from kata.project import ProjectError, locate

__all__ = ["NotSetYet", "Target", "TargetError", "TargetModule", "find_target", "module_of", "target_of",
           "target_path", "unset"]

_counter = itertools.count(1)


class TargetError(Exception):
    """A module of the target is missing, does not import, or lacks a name."""


class NotSetYet(NotImplementedError):
    """A check read a name the exercise asks for that is still its stub's value (``SMILING = None``):
    a stub not written yet, like an unwritten function's ``NotImplementedError``."""


def unset(value) -> bool:
    """Whether ``value`` is a stub's for a name it leaves to the learner: ``None`` or ``...``
    (as kata/pristine.py reads a stub's source)."""
    return value is None or value is Ellipsis


def _project_root() -> Path | None:
    try:
        return locate().root
    except ProjectError:
        return None


def find_target(path: str | Path) -> Path | None:
    """The folder of exercise modules that ``path`` names, or None.

    ``path`` may be such a folder, a folder whose ``exercises/`` subfolder is one,
    or one exercise's module file (``exercises/data.py``). The project's own root is
    never a target: plain ``pytest .`` there is the project's self-check.
    """
    names = curriculum.names()
    p = Path(path).expanduser().resolve()
    if p.is_file():
        return p.parent if p.suffix == ".py" and p.stem in names else None
    if not p.is_dir() or p == _project_root():
        return None
    for folder in (p, p / "exercises"):
        if any((folder / f"{name}.py").is_file() for name in names):
            return folder
    return None


def target_path(name: str | Path) -> Path:
    """What ``--target NAME`` means: ``solutions`` and ``exercises`` are the project's own
    folders (wherever the command runs from); anything else is a path."""
    if str(name) in ("solutions", "exercises"):
        project = locate()
        return project.solutions if str(name) == "solutions" else project.exercises
    return Path(name)


class Target:
    """One folder of exercise modules, loaded lazily and at most once each.

    ``on_import`` callbacks are told ``(name, "start")`` before a module's code runs
    and ``(name, "end")`` after (the grader uses them to know whose import ended a
    process).

    In a grading child, :meth:`only` restricts every target to the files handed in: a module not handed
    in is missing, whatever the disk holds."""

    handed_in: frozenset[str] | None = None   # the file names a grading child was given (None: any file)

    def __init__(self, path: str | Path, name: str | None = None):
        path = Path(path).expanduser().resolve()
        self.path = find_target(path) or path
        self.name = name or self.path.name
        self.package = f"_kata_target_{next(_counter)}"
        self.on_import: list[Callable[[str, str], None]] = []
        self._loaded: dict[str, types.ModuleType | TargetError] = {}

    def __repr__(self) -> str:
        return f"Target({str(self.path)!r})"

    @classmethod
    def only(cls, files) -> None:
        """From now on, in this process, load only modules whose file names (``data.py``) are in ``files``."""
        cls.handed_in = frozenset(files)

    def file(self, module: str) -> Path:
        return self.path / f"{module}.py"

    def display(self, module: str | None = None) -> str:
        """A short path for messages: ``exercises/data.py``."""
        return display(self.file(module) if module else self.path)

    def place_of(self, exc: BaseException) -> Place | None:
        """The last line of this target's code in ``exc``'s traceback, or None."""
        return place_in(exc, self.path)

    def module(self, name: str) -> TargetModule:
        """A lazy handle: the module is imported when a check first uses it."""
        return TargetModule(self, name)

    def imported(self, name: str) -> TargetModule:
        """:meth:`module`, its module imported now (or TargetError): the handle the grader's sandbox asks the
        records of, as a learner's run does (a name still at its stub's value raises :class:`NotSetYet` there too)."""
        self.load(name)
        return self.module(name)

    def load(self, name: str) -> types.ModuleType:
        """Import ``name`` from this target (once), or raise TargetError."""
        if name not in self._loaded:
            try:
                self._loaded[name] = self._import(name)
            except TargetError as err:
                self._loaded[name] = err
        result = self._loaded[name]
        if isinstance(result, TargetError):
            # a fresh exception each time: re-raising the stored one would grow its traceback by
            # every check that touched it, and pytest formats each frame of it
            raise TargetError(*result.args) from None
        return result

    def failure(self, name: str) -> TargetError | None:
        """Why ``name`` could not be loaded, if it was tried and failed."""
        result = self._loaded.get(name)
        return result if isinstance(result, TargetError) else None

    def mark_broken(self, name: str, message: str) -> None:
        """From now on, ``name`` fails to load with ``message`` (its import ran too long,
        or ended a test process)."""
        sys.modules.pop(f"{self.package}.{name}", None)
        self._loaded[name] = TargetError(message)

    def forget_tracebacks(self) -> None:
        """Let go of the frames the remembered import failures hold (and what they hold)."""
        for value in self._loaded.values():
            if isinstance(value, TargetError):
                value.__context__ = value.__cause__ = value.__traceback__ = None

    def _import(self, name: str) -> types.ModuleType:
        file = self.file(name)
        if not file.is_file() or (self.handed_in is not None and file.name not in self.handed_in):
            raise TargetError(say("{file} does not exist. The checks of exercise '{name}' import it from {folder}; "
                                  "create it (`kata reset {name}` restores the stub).",
                                  file=self.display(name), name=name, folder=self.display()))
        if self.package not in sys.modules:
            pkg = types.ModuleType(self.package)
            pkg.__path__ = [str(self.path)]  # lets `from .devices import x` work
            sys.modules[self.package] = pkg
        qualname = f"{self.package}.{name}"
        spec = importlib.util.spec_from_file_location(qualname, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualname] = module
        for callback in self.on_import:
            callback(name, "start")
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:
            del sys.modules[qualname]
            raise TargetError(self._import_failure(name, exc)) from None
        finally:
            for callback in self.on_import:
                callback(name, "end")
        return module

    def _import_failure(self, name: str, exc: BaseException) -> str:
        place = place_in(exc, self.file(name))
        values = dict(file=self.display(name), error=f"{type(exc).__name__}: {exc}")
        if place is None:
            message = say("{file} failed to import:\n  {error}", **values)
        elif place.source and not isinstance(exc, SyntaxError):  # the error repeats a syntax error's line
            message = say("{file} failed to import (line {line}: {source}):\n  {error}", line=place.line,
                          source=place.source, **values)
        else:
            message = say("{file} failed to import (line {line}):\n  {error}", line=place.line, **values)
        if isinstance(exc, SystemExit):
            message += "\n  " + _("The module exits while it is imported: keep top-level code to definitions.")
        elif isinstance(exc, ModuleNotFoundError) and exc.name in curriculum.names():
            message += "\n  " + say("To use another exercise's code, import it relatively: "
                                    "`from .{name} import ...`.", name=exc.name)
        return message


class TargetModule:
    """A lazy stand-in for a target's module: ``data.train_transform`` imports
    ``data.py`` on first use and fails with a teaching message if it can't.

    Only the names the exercise must define (its ``names`` in the curriculum)
    are looked up, and one still at its stub's value raises :class:`NotSetYet`;
    :func:`module_of` gives the real module (to monkeypatch its globals)."""

    def __init__(self, target: Target, name: str):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str):
        try:
            defines = curriculum.get(self._name).names
        except curriculum.UnknownExercise:
            defines = ()
        if attr not in defines:  # e.g. a tool's probe: no import for it
            raise AttributeError(attr)
        module = module_of(self)
        try:
            value = getattr(module, attr)
        except AttributeError:
            raise TargetError(say("{file} defines no `{attr}`. Exercise '{name}' asks for it (see the docstring of "
                                  "exercises/{name}.py); check the spelling, or `kata reset {name}` for the stub.",
                                  file=self._target.display(self._name), attr=attr, name=self._name)) from None
        if unset(value):
            raise NotSetYet(say("{file}: `{attr}` is not set yet: see the comment above it, and "
                                "`kata hint {name} {attr}`", file=self._target.display(self._name), attr=attr,
                                name=self._name))
        return value

    def __setattr__(self, attr, value):
        raise AttributeError("patch the real module instead: monkeypatch.setattr(module_of(handle), ...)")

    def __repr__(self) -> str:
        return f"<module {self._name!r} of {self._target.display()}>"


def module_of(handle: TargetModule) -> types.ModuleType:
    """The real module behind a handle (imported now if it was not yet)."""
    return handle._target.load(handle._name)


def target_of(handle: TargetModule) -> Target:
    """The target a handle belongs to."""
    return handle._target
