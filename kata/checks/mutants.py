"""Known-wrong implementations: a reference solution with one mistake put in by text.

The harness's self-tests use them to prove that the checks catch each mistake a
learner makes (tests/selftest/test_known_wrong.py) and that the grader takes
points for it (tests/selftest/test_grade.py).
"""

from __future__ import annotations

from pathlib import Path

from kata.project import locate

__all__ = ["mutated", "write_mutant"]


def mutated(name: str, *edits: tuple[str, str], before: str = "") -> str:
    """The source of ``solutions/NAME.py`` with each ``(old, new)`` replaced (each ``old``
    must be found: a stale mutant fails loudly) and ``before`` put in front."""
    path = locate().solutions / f"{name}.py"
    source = path.read_text()
    for old, new in edits:
        if old not in source:
            raise AssertionError(f"a known-wrong edit no longer applies: {old!r} is not in {path}; "
                                 "update the mutant to the solution as it is now")
        source = source.replace(old, new)
    return before + source


def write_mutant(folder: Path, name: str, *edits: tuple[str, str], before: str = "") -> Path:
    """A folder holding only ``NAME.py``, mutated: a target for ``pytest --target FOLDER``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(mutated(name, *edits, before=before))
    return folder
