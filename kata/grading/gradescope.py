"""``kata gradescope DIR_OR_ZIP``: a Gradescope autograder that grades with ``kata grade`` (docs/teaching.md, "On
Gradescope"): Gradescope's two scripts, each saying what it does, a README.txt, and the kata's own source.
"""

from __future__ import annotations

import io
import shlex
import zipfile
from pathlib import Path

from kata.files import atomic_write
from kata.grading import texts
from kata.i18n import _, language
from kata.project import locate

__all__ = ["CONTAINER_MB", "MEMORY_MB", "options_of", "write"]

SOURCE_DIR = "device-kata"
CONTAINER_MB = 2048   # the container size the README names
MEMORY_MB = 1536      # the default ceiling of a submission's processes in such a container
TOP_FILES = ("pyproject.toml", "README.md", "conftest.py", "CONTRACT.md", "LICENSE", "LICENSE.md", "LICENSE.txt")
SKIP_NAMES = {"__pycache__", ".pytest_cache", ".hypothesis", ".benchmarks", ".kata-progress.json",
              ".kata-lang"}   # the language goes in as --lang (kata.i18n)

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
# Written by `kata gradescope`.
set -euo pipefail
ROOT="${KATA_AUTOGRADER_ROOT:-/autograder}"
SRC="$ROOT/source/device-kata"

# bubblewrap: the sandbox kata grade prefers (it says so, and falls back, where it is refused).
if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap) || true
fi
# Python 3.11 or later, with venv: the image's python3, else python3.11 (Ubuntu 22.04's python3 is 3.10).
PY=python3
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || PY=python3.11
if ! "$PY" -m venv "$ROOT/venv"; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$PY" "$PY-venv"
  "$PY" -m venv "$ROOT/venv"
fi
"$ROOT/venv/bin/pip" install --upgrade pip
# Gradescope's machines have no GPU: torch's CPU wheels (much smaller). KATA_TORCH_INDEX="" takes PyPI's.
TORCH_INDEX="${KATA_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
extra=()
if [ -n "$TORCH_INDEX" ]; then extra=(--extra-index-url "$TORCH_INDEX"); fi
"$ROOT/venv/bin/pip" install "${extra[@]}" -e "$SRC"

# Graded code runs as another user: it may read Python and the checks, never the answers or the grades.
chmod -R go+rX "$ROOT/venv" "$SRC"
chmod -R go-rwx "$SRC/solutions"
mkdir -p "$ROOT/grading" && chmod 700 "$ROOT/grading"

# The reference solutions graded once, to prove the image grades (each submission's run grades them again).
cd "$SRC"
KATA_HOME="$SRC" "$ROOT/venv/bin/python" -m kata grade --out "$ROOT/reference-run" --quiet __OPTIONS__ \
  || echo "setup.sh: the reference solutions could not be graded here: see the output above" >&2
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this once per submission, as root, from /autograder: grade
# /autograder/submission with the bundle's own `kata grade` and write
# /autograder/results/results.json. Written by `kata gradescope`.
# To try it elsewhere: KATA_AUTOGRADER_ROOT=DIR (holding source/ and submission/
# instead of /autograder) and KATA_PYTHON=a Python with the kata's requirements.
set -u
ROOT="${KATA_AUTOGRADER_ROOT:-/autograder}"
PY="${KATA_PYTHON:-$ROOT/venv/bin/python}"
SRC="$ROOT/source/device-kata"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results" "$ROOT/grading"
chmod 700 "$ROOT/grading" 2>/dev/null || true
rm -f "$RESULTS"
# The bundle's own kata: `python -m` from its folder puts it first on sys.path, and KATA_HOME finds its checks.
(cd "$SRC" && KATA_HOME="$SRC" "$PY" -m kata grade "$ROOT/submission" --out "$ROOT/grading" --jobs 1 --quiet \
    --gradescope-results "$RESULTS" __OPTIONS__)
status=$?
if [ ! -s "$RESULTS" ]; then
  why="The autograder failed before it could grade this submission (exit status $status)."
  why="$why Tell your teacher: resubmitting will not help until it is fixed."
  printf '{"score": 0, "output": "%s", "tests": []}\n' "$why" > "$RESULTS"
fi
exit 0
"""


def options_of(args) -> list[str]:
    """The grading options of ``kata gradescope`` as ``kata grade`` arguments."""
    options = ["--timeout", f"{args.timeout:g}", "--test-timeout", f"{args.test_timeout:g}",
               "--memory", str(args.memory), "--processes", str(args.processes), "--disk", str(args.disk)]
    return options + (["--slow"] if args.slow else []) + (["--lang", language()] if language() != "en" else [])


def write(dest: str | Path, options: list[str], memory_mb: int) -> Path:
    """Write the autograder into the folder ``dest``, or into the zip ``dest`` (files at its root)."""
    dest = Path(dest).expanduser()
    text = " ".join(shlex.quote(o) for o in options)
    readme = _(texts.README).replace("__OPTIONS__", text).replace("__MEMORY__", f"{memory_mb:,}")
    readme = readme.replace("__CONTAINER__", f"{max(CONTAINER_MB, memory_mb + 512):,}")
    files = [("setup.sh", SETUP_SH.replace("__OPTIONS__", text).encode(), 0o755),
             ("run_autograder", RUN_AUTOGRADER.replace("__OPTIONS__", text).replace(texts.FAILED, _(texts.FAILED))
              .replace(texts.TELL, _(texts.TELL)).encode(), 0o755),
             ("README.txt", readme.encode(), 0o644)]
    root = locate().root   # the kata's own source: not its own tests (tests/selftest), which grading never needs
    files += [(f"{SOURCE_DIR}/{n}", (root / n).read_bytes(), 0o644) for n in TOP_FILES if (root / n).is_file()]
    for folder in ("kata", "tests", "records", "solutions", "exercises"):
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and path.suffix != ".pyc" and not SKIP_NAMES & set(rel.parts[1:]) \
                    and rel.parts[:2] != ("tests", "selftest"):
                files.append((f"{SOURCE_DIR}/{rel.as_posix()}", path.read_bytes(), 0o644))
    if dest.suffix.lower() == ".zip":
        dest.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data, mode in files:
                info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | mode) << 16
                archive.writestr(info, data, zipfile.ZIP_DEFLATED)
        atomic_write(dest, buffer.getvalue())
        return dest
    for name, data, mode in files:
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    return dest
