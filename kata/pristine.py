"""An exercise's pristine stub: is this file still one, and what was it?

Nothing is listed by hand: a new exercise's stub is known as soon as the curriculum
names it (docs/developing.md, "Add an exercise"). A stub is recognised by its
shape, read with :mod:`ast`:

* every function the exercise's curriculum ``names`` lists has a body of only
  (a docstring and) ``raise NotImplementedError(...)``;
* every class it lists has only such methods (``LivePlot.__init__``, ``.update``);
* every other name it lists (``SMILING = None``) is still bound to ``None`` (or ``...``).

Anything else in the file (comments, imports, a helper the learner added) does
not matter: what makes a file a stub is that each of its exercise's names is
unwritten, so every check of the exercise fails on it. Nor does the language of
its texts: a Korean stub (``kata lang ko``, ``kata release --lang ko``) is a stub.

The pristine text of a stub (for ``kata reset NAME``) comes from, in order:

1. the snapshot a student release ships: ``<checkout>/.kata/pristine/NAME.py``
   (:data:`SNAPSHOT_DIR`; ``kata release`` writes it with :func:`write_snapshot`);
2. git: the newest commit whose ``exercises/NAME.py`` is a stub (``git`` run as a
   subprocess in the checkout);
3. neither (no snapshot, no git, or no such commit): ``None``.

The project's own tests take the stubs from here (:func:`stub_source`,
:func:`write_stubs`), never from ``exercises/`` as it is: in a learner's copy it
holds their work, and plain ``pytest`` there must pass whatever it holds.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from kata import curriculum
from kata.files import atomic_write
from kata.i18n import _, say
from kata.project import locate

__all__ = ["SNAPSHOT_DIR", "differences", "is_stub", "pristine_source", "stub_source", "unwritten_names",
           "write_snapshot", "write_stubs"]

SNAPSHOT_DIR = Path(".kata") / "pristine"   # relative to the checkout's root
_GIT_COMMITS = 200                          # how far back git is searched for a stub


def _raises_not_implemented(body: list[ast.stmt]) -> bool:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    if isinstance(exc, ast.Call):
        exc = exc.func
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _unwritten(node: ast.stmt) -> str | None:
    """Why a definition is not a stub's, or None when it is."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None if _raises_not_implemented(node.body) else say("`{name}` is written", name=node.name)
    if isinstance(node, ast.ClassDef):
        methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        written = [m.name for m in methods if not _raises_not_implemented(m.body)]
        if written:
            return say("`{name}` is written", name=node.name + "." + written[0])
        return None if methods else say("`{name}` has no methods", name=node.name)
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Constant) and value.value in (None, ...):
        return None
    name = ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target) \
        if isinstance(node, (ast.Assign, ast.AnnAssign)) else _("a name")
    if value is None:
        return say("`{name}` is defined, not the stub's None", name=name)
    return say("`{name}` is {value}, not the stub's None", name=name, value=ast.unparse(value)[:40])


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    """The last top-level statement binding each name (as Python would see it)."""
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        found[leaf.id] = node
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
    return found


def differences(path: str | Path, source: str | None = None, name: str | None = None) -> list[str]:
    """Why the module at ``path`` (or ``source``, as exercise ``name``, by default the
    file's stem) is not a pristine-shaped stub: ``[]`` when it is one.

    A missing or unreadable file, a syntax error, or a name missing from the file
    are differences too. An unknown exercise raises :class:`kata.curriculum.UnknownExercise`."""
    path = Path(path)
    exercise = curriculum.get(name or path.stem)
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            return [say("{file} can't be read ({error})", file=path.name, error=err.__class__.__name__)]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [say("{file} does not parse", file=path.name)]
    defined = _definitions(tree)
    found = []
    for wanted in exercise.names:
        node = defined.get(wanted)
        why = say("`{name}` is not defined", name=wanted) if node is None else _unwritten(node)
        if why:
            found.append(why)
    return found


def unwritten_names(path: str | Path, name: str | None = None) -> list[str]:
    """The names exercise ``name`` (default: the file's stem) defines that the module at ``path`` leaves as its
    stub has them, or does not define; ``[]`` for a file that can't be read or parsed (importing it says why)."""
    path = Path(path)
    exercise = curriculum.get(name or path.stem)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return []
    defined = _definitions(tree)
    return [n for n in exercise.names if n not in defined or _unwritten(defined[n]) is None]


def is_stub(path: str | Path, source: str | None = None, name: str | None = None) -> bool:
    """Whether the exercise module at ``path`` (or its ``source``) is still an untouched
    stub: every name its exercise defines is unwritten (see the module's docstring)."""
    return not differences(path, source, name)


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def pristine_source(name: str, root: str | Path | None = None) -> str | None:
    """The pristine stub of exercise ``name``: the release's snapshot, else the newest
    git commit whose ``exercises/NAME.py`` is a stub, else None.

    ``root`` is the checkout (default: :func:`kata.project.locate`'s)."""
    curriculum.get(name)  # UnknownExercise, listing the names
    root = Path(root) if root is not None else locate().root
    snapshot = root / SNAPSHOT_DIR / f"{name}.py"
    if snapshot.is_file():
        return snapshot.read_text(encoding="utf-8")
    relative = f"exercises/{name}.py"
    log = _git(root, "log", f"--max-count={_GIT_COMMITS}", "--format=%H", "--", relative)
    for commit in (log or "").split():
        source = _git(root, "show", f"{commit}:{relative}")
        if source is not None and is_stub(relative, source, name):
            return source
    return None


def stub_source(name: str, root: str | Path | None = None) -> str | None:
    """Exercise ``name``'s stub: the checkout's ``exercises/NAME.py`` while it is one (a learner's
    copy holds their work there), else :func:`pristine_source`'s."""
    root = Path(root) if root is not None else locate().root
    path = root / "exercises" / f"{name}.py"
    if is_stub(path):
        return path.read_text(encoding="utf-8")
    return pristine_source(name, root)


def write_stubs(folder: str | Path, root: str | Path | None = None) -> list[str]:
    """Write every exercise's stub (:func:`stub_source`) into ``folder``; return the names of
    those none was found for (a learner's copy without a snapshot or git history)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    missing = []
    for ex in curriculum.exercises():
        source = stub_source(ex.name, root)
        if source is None:
            missing.append(ex.name)
        else:
            (folder / f"{ex.name}.py").write_text(source, encoding="utf-8")
    return missing


def write_snapshot(stubs: str | Path, root: str | Path) -> list[Path]:
    """Write the pristine snapshot of a release whose checkout is ``root``: each
    exercise's module from the folder ``stubs`` (normally the checkout's exercises/)
    into ``root/.kata/pristine/NAME.py``. Refuses a module that is not a stub."""
    stubs, target = Path(stubs), Path(root) / SNAPSHOT_DIR
    problems = {ex.name: differences(stubs / f"{ex.name}.py") for ex in curriculum.exercises()}
    problems = {name: why for name, why in problems.items() if why}
    if problems:
        raise ValueError(say("not stubs, so not a pristine snapshot: {problems}", problems="; ".join(
            f"{name}.py: {', '.join(why)}" for name, why in problems.items())))
    target.mkdir(parents=True, exist_ok=True)
    return [atomic_write(target / f"{ex.name}.py", (stubs / f"{ex.name}.py").read_text(encoding="utf-8"))
            for ex in curriculum.exercises()]
