"""``kata train``'s checkpoints: ``checkpoint.pt`` after every epoch, and ``--resume PATH`` to go on from one.

The target's own checkpoint module (``kata train`` names it; this module names no
exercise) does the saving and the loading, as its other modules do the training
(``solutions`` by default, the learner's with ``--target exercises``):

- after each epoch, ``save_checkpoint(OUT/checkpoint.pt, model, optimizer,
  epochs done, the whole history so far)``. The optimizer is the one the
  target's ``train`` made for itself: the one that steps the model's
  parameters, seen by a global optimizer step pre-hook (PyTorch's
  ``register_optimizer_step_pre_hook``), so ``train`` needs no change;
- resuming, ``load_checkpoint(PATH, model, device=device)`` before training
  (the model's state, the epochs done and the history), then
  ``load_checkpoint(PATH, model, optimizer, device=device)`` at that
  optimizer's first step, before it steps (Adam's state; the model's is the
  one just loaded, untouched since), so the run goes on where it stopped, on
  whatever device this run uses.

While that module is a stub (a learner at an earlier exercise), the run
goes on without checkpoints and says so once; ``--resume`` then can't.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from kata.checks import lessons
from kata.checks.lessons import say
from kata.harness.target import Target, TargetError
from kata.harness.tracebacks import display, place_in, unwritten

__all__ = ["CHECKPOINT", "Checkpoints", "ResumeError", "checkpoint_file", "earlier_run"]

CHECKPOINT = "checkpoint.pt"


class ResumeError(Exception):
    """``--resume`` can't go on from what it was given; the message says why and what to do."""


def checkpoint_file(path: str | Path) -> Path:
    """The checkpoint ``--resume PATH`` names: the file, or ``checkpoint.pt`` in the run folder."""
    path = Path(path)
    found = path / CHECKPOINT if path.is_dir() else path
    if not found.is_file():
        raise ResumeError(say(lessons.RESUME_NOTHING, path=display(found)))
    return found


def earlier_run(checkpoint: Path) -> dict:
    """What the run's ``history.json`` (beside the checkpoint) recorded, or {} without one."""
    try:
        return json.loads((checkpoint.parent / "history.json").read_text())
    except (OSError, ValueError):
        return {}


class Checkpoints:
    """The checkpoints of one ``kata train`` run, with the target's module ``exercise`` (its checkpoint exercise)."""

    def __init__(self, target: Target, exercise: str, out: Path, device, resume: Path | None = None, tell=print):
        self.target, self.path, self.device, self.resume, self.tell = target, out / CHECKPOINT, device, resume, tell
        self.module = target.module(exercise)
        self.optimizer = None
        self.saving = True
        self._loaded = resume is None

    def _unwritten(self, exc: BaseException) -> str | None:
        """What is missing, for a stub's NotImplementedError or a module the target lacks (None for the
        learner's other errors)."""
        if isinstance(exc, TargetError):
            return str(exc).split(". ")[0]
        place = place_in(exc, self.target.path) if isinstance(exc, NotImplementedError) else None
        return unwritten(exc, place).split(": see ")[0] if place is not None else None

    def start(self, model) -> tuple[int, list[list]]:
        """(epochs done, the history so far): (0, four empty lists), or what ``--resume``'s file holds, loaded
        into ``model`` on this run's device."""
        if self.resume is None:
            return 0, [[], [], [], []]
        try:
            epoch, history = self.module.load_checkpoint(self.resume, model, device=self.device)
        except (NotImplementedError, TargetError) as exc:
            reason = self._unwritten(exc)
            if reason is None:
                raise
            raise ResumeError(say(lessons.RESUME_NEEDS_LOAD, reason=reason)) from None
        return int(epoch), [list(h) for h in history]

    @contextlib.contextmanager
    def attached(self, model):
        """While ``train`` runs: the optimizer that steps ``model`` is noted, and resuming, its state is loaded
        before its first step."""
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        def before_step(optimizer, args, kwargs):
            mine = {id(p) for p in model.parameters()}
            if not any(id(p) in mine for group in optimizer.param_groups for p in group["params"]):
                return
            self.optimizer = optimizer
            if not self._loaded:
                self._loaded = True
                self.module.load_checkpoint(self.resume, model, optimizer, device=self.device)

        handle = register_optimizer_step_pre_hook(before_step)
        try:
            yield self
        finally:
            handle.remove()

    def save(self, model, epochs_done: int, history) -> None:
        """checkpoint.pt, after an epoch (with a note, once, where checkpoint.py can't save yet)."""
        if not self.saving or self.optimizer is None:
            return
        try:
            self.module.save_checkpoint(self.path, model, self.optimizer, epochs_done, history)
        except (NotImplementedError, TargetError) as exc:
            reason = self._unwritten(exc)
            if reason is None:
                raise
            self.saving = False
            self.tell(say(lessons.TRAIN_NO_CHECKPOINT, reason=reason))
