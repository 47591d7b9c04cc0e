"""`kata gradescope DIR_OR_ZIP`: a Gradescope autograder that grades with `kata grade`.

Gradescope (Autograder Specifications) builds an image from a zip holding
``setup.sh`` and ``run_autograder`` at its root, extracted into
``/autograder/source``; it runs ``setup.sh`` once, as root, when it builds the
image, and ``run_autograder`` once per submission, from ``/autograder``, with
the student's files in ``/autograder/submission``; it reads the grade from
``/autograder/results/results.json``.

The bundle written here holds:

* ``device-kata/``: the kata's own source (the package, the checks, the
  reference solutions, the stubs, pyproject.toml with torch and torchvision
  pinned), installed by setup.sh with ``pip install -e`` (the kata finds its
  checks next to its package, so it must be an editable install);
* ``setup.sh``: a Python 3.11+ virtual environment in /autograder/venv with the
  kata in it (CPU wheels of torch by default), then one run of the reference
  solutions, saved as /autograder/source/reference.json;
* ``run_autograder``: ``kata grade /autograder/submission --jobs 1
  --gradescope-results /autograder/results/results.json`` with the limits
  chosen when the bundle was written, reusing the saved reference run (so a
  submission costs one run of the checks). If the grader itself fails, it
  still writes a results.json that says so.

``KATA_AUTOGRADER_ROOT`` moves /autograder and ``KATA_PYTHON`` picks the
interpreter, to try the scripts on another machine (the self-tests do).
"""

from __future__ import annotations

import io
import shlex
import zipfile
from pathlib import Path

from kata.target import PROJECT_ROOT

SOURCE_DIR = "device-kata"
SKIP_NAMES = {"__pycache__", ".pytest_cache", ".hypothesis", ".benchmarks", "selftest", "data", "runs"}

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image:
# a Python 3.11+ virtual environment with the kata (and its pinned torch and
# torchvision) in it, and one run of the reference solutions, kept for every
# submission. Written by `kata gradescope`.
set -euo pipefail
ROOT="${KATA_AUTOGRADER_ROOT:-/autograder}"
SRC="$ROOT/source/device-kata"

PY=""
for candidate in python3.13 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
done
if [ -z "$PY" ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv
  PY=python3.11
fi
if ! "$PY" -m venv "$ROOT/venv"; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$PY-venv"
  "$PY" -m venv "$ROOT/venv"
fi
"$ROOT/venv/bin/pip" install --upgrade pip
# Gradescope's machines have no GPU: take torch's CPU wheels (much smaller).
# KATA_TORCH_INDEX="" installs PyPI's default wheels instead.
TORCH_INDEX="${KATA_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
extra=()
if [ -n "$TORCH_INDEX" ]; then extra=(--extra-index-url "$TORCH_INDEX"); fi
"$ROOT/venv/bin/pip" install "${extra[@]}" -e "$SRC"

# The reference solutions' run, once; run_autograder reuses it while nothing it
# depends on differs (and redoes it per submission otherwise).
"$ROOT/venv/bin/python" -m kata.cli grade --out "$ROOT/reference-run" --quiet \
    --reference "$ROOT/source/reference.json" __OPTIONS__ \
  || echo "setup.sh: the reference run failed; run_autograder will redo it for each submission" >&2
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this once per submission, as root, from /autograder: grade
# /autograder/submission with `kata grade` and write /autograder/results/results.json.
# Written by `kata gradescope`. To try it elsewhere: KATA_AUTOGRADER_ROOT=DIR
# (holding source/, submission/ and results/ instead of /autograder) and
# KATA_PYTHON=a python that has the kata installed.
set -u
ROOT="${KATA_AUTOGRADER_ROOT:-/autograder}"
PY="${KATA_PYTHON:-$ROOT/venv/bin/python}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"
"$PY" -m kata.cli grade "$ROOT/submission" --out "$ROOT/grading" --jobs 1 --quiet \
    --reference "$ROOT/source/reference.json" --gradescope-results "$RESULTS" __OPTIONS__
status=$?
if [ ! -s "$RESULTS" ]; then
  printf '{"score": 0, "output": "The autograder failed before it could grade this submission (exit status %s). Tell your teacher: resubmitting will not help until it is fixed.", "tests": []}\n' "$status" > "$RESULTS"
fi
exit 0
"""

README = """A Gradescope autograder for device-kata, written by `kata gradescope`.

Upload this zip as the assignment's autograder ("Zip file upload"); choose an
Ubuntu 22.04 or newer base image and at least 2 GB of memory (4 GB is
comfortable). setup.sh installs the kata into /autograder/venv and checks the
reference solutions once; run_autograder grades each submission with
`kata grade` and writes /autograder/results/results.json. Students submit their
exercises/ folder (or its six .py files, or a zip of either).

Grading options baked in: __OPTIONS__
"""


def grading_options(args) -> str:
    options = ["--timeout", str(args.timeout), "--test-timeout", str(args.test_timeout), "--memory", str(args.memory)]
    if args.slow:
        options.append("--slow")
    return " ".join(shlex.quote(o) for o in options)


def source_files() -> list[tuple[str, Path]]:
    """(path inside device-kata/, file) for each file the autograder needs."""
    picked = []
    for name in ("pyproject.toml", "README.md", "conftest.py", "LICENSE", "LICENSE.md", "LICENSE.txt"):
        if (PROJECT_ROOT / name).is_file():
            picked.append((name, PROJECT_ROOT / name))
    for folder in ("kata", "tests", "solutions", "exercises"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*")):
            rel = path.relative_to(PROJECT_ROOT)
            if not path.is_file() or path.suffix == ".pyc" or SKIP_NAMES & set(rel.parts[1:]):
                continue
            picked.append((rel.as_posix(), path))
    return picked


def bundle(options: str) -> list[tuple[str, bytes, int]]:
    """(archive path, content, mode) for every file of the autograder."""
    files = [
        ("setup.sh", SETUP_SH.replace("__OPTIONS__", options).encode(), 0o755),
        ("run_autograder", RUN_AUTOGRADER.replace("__OPTIONS__", options).encode(), 0o755),
        ("README.txt", README.replace("__OPTIONS__", options).encode(), 0o644),
    ]
    for rel, path in source_files():
        files.append((f"{SOURCE_DIR}/{rel}", path.read_bytes(), 0o644))
    return files


def write(dest: str | Path, options: str) -> Path:
    """Write the autograder into the folder ``dest``, or into the zip ``dest``
    (files at the archive's root, as Gradescope requires)."""
    dest = Path(dest).expanduser()
    files = bundle(options)
    if dest.suffix.lower() == ".zip":
        dest.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data, mode in files:
                info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
        dest.write_bytes(buffer.getvalue())
        return dest
    for name, data, mode in files:
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    return dest


def run_from_args(args) -> int:
    options = grading_options(args)
    where = write(args.dest, options)
    kind = "zip" if where.suffix.lower() == ".zip" else "folder"
    print(f"wrote a Gradescope autograder ({kind}): {where}")
    print("  setup.sh installs the kata in /autograder/venv and checks the reference solutions once;")
    print(f"  run_autograder grades /autograder/submission with `kata grade {options}`.")
    if kind == "folder":
        print(f"  Upload a zip of the folder's contents (not of the folder): "
              f"cd {shlex.quote(str(where))} && zip -r ../autograder.zip .")
    return 0

