"""Where the kata's project lives: its checks, stubs and reference solutions.

The checks (``tests/test_NAME.py``) are not part of the installed package: they
live in the checkout the kata was installed from. :func:`locate` finds that
checkout, in this order:

1. ``$KATA_HOME``, when set;
2. the folder above the imported ``kata`` package (an editable install, or a
   run from inside the checkout);
3. the current folder or one of its parents (a non-editable install used from
   inside a checkout).

A folder is a checkout when it holds ``tests/conftest.py`` and ``exercises/``.
A student release (``kata release``) has no ``solutions/``; everything else is
the same.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["is_checkout", "locate", "Project", "ProjectError"]

PACKAGE_DIR = Path(__file__).resolve().parent


class ProjectError(RuntimeError):
    """The kata's checkout (its tests/ and exercises/) can't be found.

    Its text is an English template and its values (``ProjectError(template, **values)``), put in
    the kata's language when it is shown, not when it is raised: working out the language looks
    for the checkout (kata.i18n reads a copy's choice there), which may raise this again. This
    module sits below kata.i18n (which imports it), so it does not import it: it uses the
    translator that every part of the kata showing this error has loaded (English without it)."""

    def __init__(self, template: str, /, **values):
        super().__init__(template.format(**values) if values else template)
        self.template, self.values = template, values

    def __str__(self) -> str:
        i18n = sys.modules.get("kata.i18n")
        if i18n is None:
            return super().__str__()
        return i18n.say(self.template, **self.values) if self.values else i18n._(self.template)


N_ = str   # marks a sentence for translation, as kata.i18n.N_ does (returned as it is)


@dataclass(frozen=True)
class Project:
    """One checkout of the kata."""

    root: Path

    @property
    def checks(self) -> Path:
        """``tests/``: ``test_NAME.py`` holds the checks of exercise NAME."""
        return self.root / "tests"

    @property
    def exercises(self) -> Path:
        """``exercises/``: the learner's stubs."""
        return self.root / "exercises"

    @property
    def solutions(self) -> Path:
        """``solutions/``: the reference solutions (absent in a student release)."""
        return self.root / "solutions"

    @property
    def has_solutions(self) -> bool:
        return self.solutions.is_dir()

    def checks_of(self, name: str) -> Path:
        return self.checks / f"test_{name}.py"

    @property
    def records(self) -> Path:
        """``records/``: ``NAME.py`` holds what the checks of exercise NAME ask its module (kata/records)."""
        return self.root / "records"

    def records_of(self, name: str) -> Path:
        return self.records / f"{name}.py"


def is_checkout(folder: Path) -> bool:
    return (folder / "tests" / "conftest.py").is_file() and (folder / "exercises").is_dir()


def _candidates() -> list[tuple[str, Path]]:
    found = []
    if os.environ.get("KATA_HOME"):
        found.append(("$KATA_HOME", Path(os.environ["KATA_HOME"]).expanduser()))
    found.append(("next to the kata package", PACKAGE_DIR.parent))
    cwd = Path.cwd()
    found += [("the current folder" if p == cwd else "a parent of the current folder", p)
              for p in (cwd, *cwd.parents)]
    return found


@cache
def locate() -> Project:
    """The kata's checkout, or a :class:`ProjectError` that says how to get one."""
    candidates = _candidates()
    for _where, folder in candidates:
        folder = folder.resolve()
        if is_checkout(folder):
            return Project(folder)
    if os.environ.get("KATA_HOME"):
        raise ProjectError(N_("KATA_HOME is {home}, but that folder holds no kata checkout (tests/conftest.py and "
                              "exercises/). Point it at the folder you cloned device-kata into."),
                           home=os.environ["KATA_HOME"])
    raise ProjectError(N_("the kata's checks (tests/ and exercises/) are not next to the installed package "
                          "({package}) nor in {cwd} or its parents. The kata runs from a checkout: clone it and "
                          "install it with `pip install -e PATH`, run `kata` from inside the checkout, or set "
                          "KATA_HOME=PATH."), package=PACKAGE_DIR, cwd=Path.cwd())
