"""The reference run: the reference solutions checked like a submission, and kept for reuse.

``DIR/reference.json`` (or ``--reference FILE``) keeps it; it is reused while
what it depends on is unchanged (:func:`fingerprint`): the checks, the
solutions, the kata's own files, the Python packages, the options and the
sandbox. A student release has no solutions: it grades nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from importlib import metadata
from pathlib import Path

from kata.grading.intake import GradeError, Submission
from kata.grading.results import Graded
from kata.project import Project

__all__ = ["REFERENCE_TIMEOUT", "assets_digest", "fingerprint", "load_reference", "record", "reference_submission"]

REFERENCE_TIMEOUT = 900.0  # seconds: the reference solutions are trusted, and must not be cut short


def reference_submission(project: Project) -> Submission:
    if not project.has_solutions:
        raise GradeError(f"no reference solutions in {project.root} (a student release?): grading needs the "
                         f"teacher's copy of the kata, with solutions/")
    return Submission("reference", project.solutions)


def _asset_files(project: Project) -> list[Path]:
    import kata

    package = Path(kata.__file__).resolve().parent
    files = [project.root / "pyproject.toml", project.root / "conftest.py", project.checks / "conftest.py"]
    files += sorted(project.checks.glob("test_*.py")) + sorted(project.solutions.glob("*.py"))
    files += sorted(package.rglob("*.py")) + sorted(package.rglob("*.toml"))
    return [f for f in files if f.is_file()]


def assets_digest(project: Project) -> str:
    """A digest of everything grading trusts: the checks, the solutions, the kata."""
    h = hashlib.sha256()
    for f in _asset_files(project):
        try:
            name = str(f.resolve().relative_to(project.root))
        except ValueError:
            name = str(f)
        h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def fingerprint(limits, digest: str, sandbox: str) -> dict:
    """What a reference run depends on; a saved one is reused only if all of it matches."""
    gpus = len(list(Path("/dev").glob("nvidia[0-9]*"))) if Path("/dev").is_dir() else 0
    return {"assets": digest, "python": platform.python_version(), "machine": platform.machine(),
            "torch": _version("torch"), "torchvision": _version("torchvision"), "pytest": _version("pytest"),
            "hypothesis": _version("hypothesis"), "slow": limits.slow, "test_timeout": limits.test_timeout,
            "memory_mb": limits.memory_mb, "processes": limits.processes, "sandbox": sandbox,
            "gpus": gpus, "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES")}


def load_reference(path: Path | None, expected: dict) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("fingerprint") != expected:
        return None
    if not isinstance(saved.get("results"), dict) or not isinstance(saved.get("checks"), list):
        return None
    return saved


def record(graded: Graded, fp: dict) -> dict:
    return {"fingerprint": fp, "checks": graded.collected, "results": graded.results,
            "sandbox": graded.sandbox, "seconds": round(graded.seconds, 1), "flags": graded.flags,
            "created": time.strftime("%Y-%m-%d %H:%M:%S")}
