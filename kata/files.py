"""Files written whole or not at all: a reader never sees half a file.

Every file the kata writes for someone to read while it works (history.json,
the synthetic set's text files and marker, the grader's outputs, the progress
record) goes through :func:`atomic_write`: the data goes to a temporary file
in the same folder, which then replaces the target in one rename.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "write_json"]


def atomic_write(path: str | os.PathLike, data: str | bytes, mode: int | None = None) -> Path:
    """Write ``data`` (text as UTF-8 with ``\\n`` line ends, or bytes) to ``path`` atomically."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | os.PathLike, data, indent: int | None = 2) -> Path:
    """``data`` as JSON (NaN allowed, as Python's json writes it), atomically."""
    return atomic_write(path, json.dumps(data, indent=indent, allow_nan=True) + "\n")


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once, at import: os.umask is process-wide, not thread-safe
