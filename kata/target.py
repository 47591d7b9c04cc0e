"""Which folder is being checked, and how its modules are imported.

A *target* is a folder that holds some or all of the contract's modules
(``devices.py``, ``data.py``, ... see ../shared/CONTRACT.md), directly or in an
``exercises/`` subfolder: the learner's ``exercises/``, the reference
``solutions/``, or a student's submission.

Its modules are imported from that folder only, by file path, as submodules of
a package made up for this one target (``_kata_target_1.data`` and so on). A
stray ``data.py`` elsewhere on ``sys.path`` can't shadow them, two targets can be
loaded side by side, and each process imports them afresh. Inside a target,
one module may import another relatively: ``from .devices import to_python``.

A module that is missing, fails to import, or lacks a name raises
:class:`TargetError` when a check first touches it, so only the checks that
need it fail, each with a message naming the file and the error.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tomllib
import traceback
import types
from functools import cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CHECKS_DIR = PROJECT_ROOT / "tests"


@cache
def curriculum() -> list[dict]:
    """The exercises in order, with titles, hints and points (kata/curriculum.toml)."""
    with open(Path(__file__).with_name("curriculum.toml"), "rb") as f:
        return tomllib.load(f)["exercise"]


CONTRACT: tuple[str, ...] = tuple(ex["name"] for ex in curriculum())
NAMES: dict[str, tuple[str, ...]] = {ex["name"]: tuple(ex["names"]) for ex in curriculum()}

_counter = itertools.count(1)


class TargetError(Exception):
    """A contract module is missing, does not import, or lacks a name."""


def find_target(path: str | Path) -> Path | None:
    """The folder of contract modules that ``path`` names, or None.

    ``path`` may be such a folder, a folder whose ``exercises/`` subfolder is one,
    or one contract module file (``exercises/data.py``). The project's own root is
    never a target: plain ``pytest .`` there is the project's self-check.
    """
    p = Path(path).expanduser().resolve()
    if p.is_file():
        return p.parent if p.suffix == ".py" and p.stem in CONTRACT else None
    if not p.is_dir() or p == PROJECT_ROOT:
        return None
    for folder in (p, p / "exercises"):
        if any((folder / f"{name}.py").is_file() for name in CONTRACT):
            return folder
    return None


def target_path(name: str | Path) -> Path:
    """What `--target NAME` means: `solutions` and `exercises` are the project's own
    folders (wherever the command runs from); anything else is a path."""
    return PROJECT_ROOT / name if str(name) in ("solutions", "exercises") else Path(name)


def display(path: Path) -> str:
    """A path as short as it can be said from here."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class Target:
    """One folder of contract modules, loaded lazily and at most once each."""

    def __init__(self, path: str | Path, name: str | None = None):
        path = Path(path).expanduser().resolve()
        self.path = find_target(path) or path
        self.name = name or self.path.name
        self.package = f"_kata_target_{next(_counter)}"
        self._loaded: dict[str, types.ModuleType | TargetError] = {}

    def __repr__(self) -> str:
        return f"Target({str(self.path)!r})"

    def file(self, module: str) -> Path:
        return self.path / f"{module}.py"

    def display(self, module: str | None = None) -> str:
        """A short path for messages: ``exercises/data.py``."""
        return display(self.file(module) if module else self.path)

    def module(self, name: str) -> "TargetModule":
        """A lazy handle: the module is imported when a check first uses it."""
        return TargetModule(self, name)

    def load(self, name: str) -> types.ModuleType:
        """Import ``name`` from this target (once), or raise TargetError."""
        if name not in self._loaded:
            try:
                self._loaded[name] = self._import(name)
            except TargetError as err:
                self._loaded[name] = err
        result = self._loaded[name]
        if isinstance(result, TargetError):
            raise result
        return result

    def _import(self, name: str) -> types.ModuleType:
        file = self.file(name)
        if not file.is_file():
            raise TargetError(
                f"{self.display(name)} does not exist. The checks of exercise "
                f"'{name}' import it from {self.display()}; create it (copy the stub "
                f"from exercises/{name}.py if you lost it)."
            )
        if self.package not in sys.modules:
            pkg = types.ModuleType(self.package)
            pkg.__path__ = [str(self.path)]  # lets `from .devices import x` work
            sys.modules[self.package] = pkg
        qualname = f"{self.package}.{name}"
        spec = importlib.util.spec_from_file_location(qualname, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualname] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:
            del sys.modules[qualname]
            raise TargetError(self._import_failure(name, exc)) from None
        return module

    def _import_failure(self, name: str, exc: BaseException) -> str:
        where = ""
        if isinstance(exc, SyntaxError) and exc.lineno:
            where = f" (line {exc.lineno})"
        else:
            frames = [f for f in traceback.extract_tb(exc.__traceback__)
                      if Path(f.filename).resolve() == self.file(name)]
            if frames:
                where = f" (line {frames[-1].lineno}: {frames[-1].line})"
        message = f"{self.display(name)} failed to import{where}:\n  {type(exc).__name__}: {exc}"
        if isinstance(exc, SystemExit):
            message += "\n  The module exits while it is imported: keep top-level code to definitions."
        elif isinstance(exc, ModuleNotFoundError) and exc.name in CONTRACT:
            message += (f"\n  To use another exercise's code, import it relatively: "
                        f"`from .{exc.name} import ...`.")
        return message


def learner_error(exc: BaseException, target: Target) -> str | None:
    """Say in one line what went wrong in the target's code, or None if the
    error was not raised there (then it is nobody's fault but the kata's).

    A NotImplementedError from the target is an exercise not written yet.
    """
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if Path(f.filename).resolve().is_relative_to(target.path)]
    if not frames:
        return None
    last = frames[-1]
    where = display(Path(last.filename).resolve())
    if isinstance(exc, NotImplementedError):
        return f"{where}: `{last.name}` is not written yet:\n  {exc}"
    return (f"{where}, line {last.lineno}, in {last.name}: {type(exc).__name__}: {exc}\n"
            f"  `pytest {where}` runs the checks that say what is expected there")


class TargetModule:
    """A lazy stand-in for a target's module: ``data.train_transform`` imports
    ``data.py`` on first use and fails with a teaching message if it can't."""

    def __init__(self, target: Target, name: str):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_name", name)

    def _load(self) -> types.ModuleType:
        """The real module object (e.g. for monkeypatching its globals)."""
        return self._target.load(self._name)

    def __getattr__(self, attr: str):
        if attr not in NAMES.get(self._name, ()):  # e.g. a tool's probe: no import for it
            raise AttributeError(attr)
        module = self._load()
        try:
            return getattr(module, attr)
        except AttributeError:
            raise TargetError(
                f"{self._target.display(self._name)} defines no `{attr}`. The contract "
                f"(CONTRACT.md, module {self._name}) asks for it; check the spelling, "
                f"or copy its stub from exercises/{self._name}.py."
            ) from None

    def __setattr__(self, attr, value):
        raise AttributeError("patch the real module instead: monkeypatch.setattr(mod._load(), ...)")

    def __repr__(self) -> str:
        return f"<contract module {self._name!r} of {self._target.display()}>"
