"""A module run on N ranks by torchrun (PyTorch's own launcher, ``torch.distributed.run``), quietly.

The parent (:func:`launch`) runs ``python -m kata.commands._torchrun TORCHRUN-ARGS`` in a subprocess: this
module's ``__main__`` is ``torch.distributed.run``'s own ``run``, its elastic agent's log lines silenced, and its
``ChildFailedError`` (the wall of text of every rank) turned into an exit status. Each rank is then a real
torchrun worker (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT`` in its environment):

- rank 0 keeps the terminal (its stdout and stderr are the parent's: its progress bar draws there);
- the other ranks' streams go to log files in a temporary folder, read only when they explain a failure;
- a rank that fails on purpose (a learner's error, explained) writes its message with :func:`report` and exits
  non-zero; the parent raises :class:`RanksFailed` with the first message written (the error that stopped the
  others comes before the errors it caused), so one clean message reaches the person, whatever rank it came
  from;
- Ctrl-C stops every rank: the terminal's SIGINT reaches them all (one process group), and the parent makes
  sure, with SIGTERM to torchrun (whose agent stops its workers), then SIGKILL.

It names no exercise: ``kata train --nproc`` (kata/commands/train.py) says which module runs on the ranks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kata.i18n import say

__all__ = ["ERRORS", "RanksFailed", "launch", "report"]

ERRORS = "KATA_RANK_ERRORS"   # the environment variable naming the folder where ranks report their errors


class RanksFailed(Exception):
    """The ranks stopped with an error; the message is the one to show (a rank's own, or a log's last lines)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def report(message: str) -> None:
    """In a rank: note ``message`` as this rank's error for the parent to show (then exit non-zero)."""
    folder = os.environ.get(ERRORS)
    if not folder:
        print(message, file=sys.stderr)
        return
    rank = os.environ.get("RANK", "0")
    path = Path(folder) / f"rank{rank}.json"
    path.with_suffix(".tmp").write_text(json.dumps({"time": time.time(), "rank": int(rank), "message": message}))
    path.with_suffix(".tmp").replace(path)


def _first_error(folder: Path) -> str | None:
    found = []
    for path in folder.glob("rank*.json"):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    found.sort(key=lambda r: (r.get("time", 0.0), r.get("rank", 0)))
    return found[0]["message"] if found else None


def _log_tail(logs: Path, lines: int = 15) -> str | None:
    """The last lines of the first of the other ranks' stderr logs that says anything (torchrun writes them as
    ``.../attempt_0/RANK/stderr.log``)."""
    for path in sorted(logs.rglob("stderr.log")):
        text = path.read_text(errors="replace").strip()
        if text:
            return "\n".join(text.splitlines()[-lines:])
    return None


def launch(module: str, args: list[str], nproc: int, env: dict[str, str] | None = None) -> None:
    """Run ``python -m module *args`` on ``nproc`` ranks under torchrun; raise :class:`RanksFailed` if they fail,
    KeyboardInterrupt (once every rank is stopped) on Ctrl-C."""
    with tempfile.TemporaryDirectory(prefix="kata-ranks-") as tmp:
        errors, logs = Path(tmp) / "errors", Path(tmp) / "logs"
        errors.mkdir()
        others = ",".join(f"{r}:3" for r in range(1, nproc))   # ranks 1.. to log files; rank 0 keeps the terminal
        command = [sys.executable, "-m", __name__, "--standalone", f"--nproc-per-node={nproc}",
                   f"--log-dir={logs}", *([f"--redirects={others}"] if others else []), "-m", module, *args]
        threads = max(1, (os.cpu_count() or 1) // nproc)
        here = str(Path(__file__).resolve().parents[2])   # the ranks import this kata, wherever it is installed
        paths = [here, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        full_env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
                    "PYTHONPATH": os.pathsep.join(paths), ERRORS: str(errors), **(env or {})}
        proc = subprocess.Popen(command, env=full_env)
        try:
            status = proc.wait()
        except KeyboardInterrupt:
            _stop(proc)
            raise
        if status == 0:
            return
        message = _first_error(errors)
        if message is None and status not in (130, -signal.SIGINT):
            message = _log_tail(logs) or say("the ranks stopped with exit status {status}", status=status)
        raise RanksFailed(message or "", status)


def _stop(proc: subprocess.Popen) -> None:
    """Ctrl-C: torchrun got the terminal's SIGINT too and stops its workers; make sure of it."""
    for send, wait in ((None, 2), (proc.terminate, 10), (proc.kill, 5)):
        if send is not None:
            send()
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:   # a second Ctrl-C: on to the next, firmer signal
            continue


def _main(argv: list[str]) -> int:
    """torchrun itself (``torch.distributed.run``), without its log lines and its failure's wall of text."""
    import logging

    given = os.environ.get("LOGLEVEL")
    os.environ["LOGLEVEL"] = "CRITICAL"   # the level of the elastic agent's loggers, read as they are made
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    if given is None:   # the workers get the environment as it was
        os.environ.pop("LOGLEVEL")
    else:
        os.environ["LOGLEVEL"] = given
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("torch.distributed"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        run(parse_args(argv))
    except ChildFailedError as err:
        codes = [f.exitcode for f in err.failures.values()]
        return 130 if any(c in (130, -signal.SIGINT) for c in codes) else 1
    except (SignalException, KeyboardInterrupt):
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
