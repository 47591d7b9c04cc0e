"""Objects that run code when they are unpickled: what a checkpoint that would run code hides.

A loader that refuses one known payload (by its bytes, its global's name) and opens any other is not safe;
so the checkpoint's records hide every kind here, each a different way of running code that
``torch.load(..., weights_only=True)`` refuses: a call of ``exec``, of ``eval``, of ``os.system``, of
``shutil.copyfile`` and of ``pathlib.Path.write_text``. Unpickled without ``weights_only``, each writes (or
copies a file to) the marker path it was made with: the marker's existence is the proof that code ran.
"""

from __future__ import annotations

import os
import pathlib
import shlex
import shutil

__all__ = ["KINDS", "RunsCode"]

KINDS = ("exec", "eval", "system", "copyfile", "write_text")


class RunsCode:
    """Pickles as a call that writes ``marker`` (``kind``: one of :data:`KINDS`; ``source``: an existing file,
    which ``copyfile`` copies)."""

    def __init__(self, marker: str | os.PathLike, kind: str = "exec", source: str | os.PathLike = __file__):
        if kind not in KINDS:
            raise ValueError(f"a payload is one of {KINDS}, not {kind!r}")
        self.marker, self.kind, self.source = str(marker), kind, str(source)

    def __reduce__(self):
        write = f"open({self.marker!r}, 'w').write('this checkpoint ran code')"
        return {"exec": (exec, (write,)), "eval": (eval, (write,)),
                "system": (os.system, (f"echo ran > {shlex.quote(self.marker)}",)),
                "copyfile": (shutil.copyfile, (self.source, self.marker)),
                "write_text": (pathlib.Path.write_text, (pathlib.Path(self.marker), "ran"))}[self.kind]
