"""What a training loop did, told from its log: the one true reason its numbers differ.

The training checks (tests/test_training.py, tests/test_sync.py) run the
learner's loop on the tiny setup of :mod:`kata.records.doubles`, whose log holds
every forward pass (with its output and the batch's labels) and, while watched,
every backward pass (with the loss), optimizer step and zero_grad, in order.
From it these helpers say what differs from the book's loop, one cause at a
time, each with the same first line in every check it fails (so a run shows it
once): no step, another model's parameters, another optimizer or learning rate,
another loss, step before backward, gradients zeroed before the step or never,
a mean over batches instead of over samples, a count of samples taken as
len(dl) * batch_size, the last batch's loss for the epoch's, a loss summed over
the batch. Where the log can't tell causes apart, the message says so in one
line instead of guessing.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from kata.checks import lessons
from kata.i18n import _, say
from kata.records.doubles import Event, Log

__all__ = ["BOOK_LR", "Measures", "graph_kept", "loss_function_problem", "means_pair_problem", "means_problem",
           "measures", "training_problem"]

BOOK_LR = 0.001

# Losses a learner takes for the book's, each as (its lesson, what it gives for probabilities p and labels y).
_OTHER_LOSSES = {
    "logits": (lessons.LOSS_IS_FOR_LOGITS, lambda p, y: nn.functional.binary_cross_entropy_with_logits(p, y)),
    "mse": (lessons.LOSS_IS_MSE, lambda p, y: nn.functional.mse_loss(p, y)),
    "l1": (lessons.LOSS_IS_L1, lambda p, y: nn.functional.l1_loss(p, y)),
}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)


def _host(t: torch.Tensor) -> torch.Tensor:
    """A plain CPU copy of ``t``, wherever it lives (an inference-mode tensor of the simulated
    accelerator included, whose .cpu() keeps it there: cloned first, it moves)."""
    out = t.detach().clone().cpu()
    if out.device.type != "cpu":
        out = torch.tensor(out.tolist(), dtype=t.dtype)
    return out.as_subclass(torch.Tensor)


def _batches(log: Log, phase: str) -> list[Event]:
    """The forward passes that are batches of ``phase`` (in training, those with gradients)."""
    return [e for e in log.forwards(phase) if isinstance(e.output, torch.Tensor) and e.labels is not None
            and (e.grad or phase != "train")]


def _probabilities(event: Event) -> torch.Tensor | None:
    """The first column of a forward pass's (N, 1) output, on the host; None if it is not N probabilities."""
    out = _host(event.output)
    if out.dim() != 2 or out.shape[0] != len(event.labels) or out.shape[1] < 1 or not out.is_floating_point():
        return None
    pred = out[:, 0].float()
    return pred if bool(((pred >= 0) & (pred <= 1)).all()) else None


def _loss(event: Event, kind: str = "bce") -> float | None:
    """The loss of a forward pass's probabilities against its labels as floats: nn.BCELoss() or another."""
    pred = _probabilities(event)
    if pred is None:
        return None
    y = event.labels.float()
    return (nn.functional.binary_cross_entropy(pred, y) if kind == "bce" else _OTHER_LOSSES[kind][1](pred, y)).item()


def _correct(event: Event) -> int | None:
    pred = _probabilities(event)
    return None if pred is None else int(((pred >= 0.5).float() == event.labels).sum().item())


def loss_function_problem(log: Log) -> str | None:
    """LOSS_FUNCTION when the loss a training batch backpropagated is not nn.BCELoss() of the
    model's probabilities in that batch against its labels (None when each is, or can't be told)."""
    last = None
    for event in log.events:
        if event.kind == "forward" and event.phase == "train" and event.grad:
            last = event
        elif event.kind == "backward" and last is not None and isinstance(event.loss, torch.Tensor):
            loss = _host(event.loss)
            want = _loss(last)
            got = loss.item() if loss.numel() == 1 else None
            if got is None or want is None or not _close(got, want):
                n = len(last.labels)
                if got is not None and want is not None and n > 1 and _close(got, want * n):
                    shown = say(lessons.LOSS_SUMMED_BATCH, got=got, want=want, n=n)
                    return f"{_(lessons.LOSS_SUMMED_OVER_THE_BATCH)}\n{shown}"
                for kind, (line, _fn) in _OTHER_LOSSES.items():
                    other = _loss(last, kind)
                    if got is not None and want is not None and other is not None and _close(got, other):
                        shown = say(line, name=_("the loss of a training batch"), got=got, want=want)
                        return f"{_(lessons.LOSS_FUNCTION)}\n{shown}"
                shown = f"{got:.6f}" if got is not None else say("a tensor of shape {shape}", shape=tuple(loss.shape))
                book = f"{want:.6f}" if want is not None else _("no number")
                return f"{_(lessons.LOSS_FUNCTION)}\n" + say(lessons.LOSS_FUNCTION_BATCH, got=shown, want=book)
            last = None
    return None


def training_problem(log: Log) -> str | None:
    """Why the training differs from the book's, from what the loop did (None: nothing the log shows)."""
    batches = _batches(log, "train")
    steps = [e for e in log.events if e.kind == "step"]
    backwards = [e for e in log.events if e.kind == "backward"]
    zeros = [e for e in log.events if e.kind == "zero_grad"]
    if not batches:
        return _(lessons.NO_TRAINING_BATCH)
    if not steps:
        return say(lessons.NO_STEP, batches=len(batches))
    if not all(e.own for e in steps):
        return _(lessons.ANOTHER_MODEL)
    if any(e.optimizer != "Adam" for e in steps):
        return say(lessons.OPTIMIZER_CLASS, found=next(e.optimizer for e in steps if e.optimizer != "Adam"))
    if any(e.lr is not None and not math.isclose(e.lr, BOOK_LR) for e in steps):
        return say(lessons.LEARNING_RATE, lr=next(e.lr for e in steps if e.lr is not None))
    if len({e.optimizer_id for e in steps}) > 1:
        return say(lessons.NEW_OPTIMIZER, optimizers=len({e.optimizer_id for e in steps}))
    problem = loss_function_problem(log)
    if problem is not None:
        return problem
    if not zeros and len(backwards) > 1:
        return say(lessons.NEVER_ZEROED, batches=len(batches))
    order = _order_problem(log.events)
    if order is not None:
        return order
    if len(backwards) != len(batches):
        return say(lessons.BACKWARD_COUNT, backwards=len(backwards), batches=len(batches))
    if len(steps) != len(batches):
        return say(lessons.STEP_COUNT, steps=len(steps), batches=len(batches))
    return None


def _order_problem(events: list[Event]) -> str | None:
    """Follow the gradients: backward adds to them, zero_grad clears them, step applies them. The book's
    loop applies each batch's gradient once, alone, at the step after its backward."""
    pending: list[int] = []          # backward passes whose gradients .grad holds now
    applied: set[int] = set()
    backward_since_forward = False
    for i, event in enumerate(events):
        if event.kind == "forward" and event.phase == "train" and event.grad:
            backward_since_forward = False
        elif event.kind == "backward":
            pending.append(i)
            backward_since_forward = True
        elif event.kind == "zero_grad":
            pending = []
        elif event.kind == "step":
            if not [b for b in pending if b not in applied]:
                return _(lessons.ZEROED_BEFORE_STEP if backward_since_forward else lessons.STEP_BEFORE_BACKWARD)
            if len(pending) > 1:
                return _(lessons.GRADIENTS_PILE_UP)
            applied.update(pending)
    return None


class Measures:
    """What an epoch's mean loss and accuracy must be, from the batches the model saw in ``phase``
    (those of epoch ``epoch``, ``per_epoch`` batches an epoch, when given): the per-sample means,
    and the usual wrong ones (to name one when it is what was done). ``use_backward``: the losses
    are those the loop backpropagated (the learner's own, whatever its loss function)."""

    def __init__(self, log: Log, phase: str, samples: int, epoch: int = 0, per_epoch: int | None = None,
                 use_backward: bool = False):
        batches = _batches(log, phase)
        losses = [_loss(e) for e in batches]
        if use_backward:
            backprop = [_host(e.loss) for e in log.events
                        if e.kind == "backward" and isinstance(e.loss, torch.Tensor)]
            if len(backprop) == len(batches) and all(t.numel() == 1 for t in backprop):
                losses = [t.item() for t in backprop]
        counts = [_correct(e) for e in batches]
        sizes = [len(e.labels) for e in batches]
        per_epoch = per_epoch or len(batches)
        start, end = epoch * per_epoch, (epoch + 1) * per_epoch
        self.samples, self.batches = samples, per_epoch
        self.known = (per_epoch > 0 and len(batches) >= end and None not in losses[:end]
                      and None not in counts[:end])
        if not self.known:
            return
        this = slice(start, end)
        weighted = [v * n for v, n in zip(losses, sizes)]
        self.batch = max(sizes[this])            # the loader's batch size: its batches but the last hold that many
        self.padded = per_epoch * self.batch     # len(dl) * batch_size, more than the samples when the last is smaller
        self.last_size = sizes[end - 1]
        self.loss = sum(weighted[this]) / samples
        self.loss_wrong = {
            lessons.LOSS_IS_A_MEAN_OVER_BATCHES: sum(losses[this]) / per_epoch,
            lessons.LOSS_DIVIDED_BY_BATCHES: sum(weighted[this]) / per_epoch,
            lessons.LOSS_DIVIDED_BY_FULL_BATCHES: sum(weighted[this]) / self.padded,
            lessons.LOSS_NOT_WEIGHTED: sum(losses[this]) / samples,
            lessons.LOSS_OF_THE_LAST_BATCH: losses[end - 1],
            lessons.SUMS_CARRIED_OVER: sum(weighted[:end]) / samples}
        self.other_losses = {} if use_backward else {
            line: sum(_loss(e, kind) * len(e.labels) for e in batches[this]) / samples
            for kind, (line, _fn) in _OTHER_LOSSES.items()}
        self.correct = sum(counts[this])
        self.accuracy = self.correct / samples
        ones = sum(int(e.labels.sum()) for e in batches[this])
        self.accuracy_wrong = {
            lessons.ACCURACY_DIVIDED_BY_BATCHES: self.correct / per_epoch,
            lessons.ACCURACY_MEAN_OF_SHARES: sum(c / n for c, n in zip(counts[this], sizes[this])) / per_epoch,
            lessons.ACCURACY_DIVIDED_BY_FULL_BATCHES: self.correct / self.padded,
            lessons.SUMS_CARRIED_OVER: sum(counts[:end]) / samples,
            lessons.ACCURACY_ALL_ONE: ones / samples,
            lessons.ACCURACY_ALL_ZERO: (sum(sizes[this]) - ones) / samples}


def measures(log: Log, phase: str, samples: int, epoch: int = 0, per_epoch: int | None = None,
             use_backward: bool = False) -> Measures:
    return Measures(log, phase, samples, epoch, per_epoch, use_backward)


def means_problem(m: Measures, name: str, got: float, what: str) -> str | None:
    """The message when ``got`` (``name``, a 'loss' or an 'accuracy') is not the per-sample mean:
    the averaging rule and what was done instead, another loss function, or (when it is none of
    those) a line that says the check can't tell."""
    if not m.known:
        return None
    values = dict(name=name, got=got, batches=m.batches, samples=m.samples, correct=m.correct, batch=m.batch,
                  padded=m.padded, last=m.last_size)
    if what == "loss":
        if _close(got, m.loss):
            return None
        for line, value in m.loss_wrong.items():
            if _close(got, value) and not _close(value, m.loss):
                return f"{_(lessons.LOSS_NOT_A_MEAN_OVER_SAMPLES)}\n{say(line, want=m.loss, **values)}"
        for line, value in m.other_losses.items():
            if _close(got, value):
                return f"{_(lessons.LOSS_FUNCTION)}\n{say(line, want=m.loss, **values)}"
        return say(lessons.LOSS_UNEXPLAINED, want=m.loss, **values)
    if _close(got, m.accuracy):
        return None
    for line, value in m.accuracy_wrong.items():
        if _close(got, value) and not _close(value, m.accuracy):
            return f"{_(lessons.ACCURACY_NOT_A_SHARE)}\n{say(line, want=m.accuracy, **values)}"
    return say(lessons.ACCURACY_UNEXPLAINED, want=m.accuracy, **values)


def means_pair_problem(m: Measures, loss_name: str, loss: float, accuracy_name: str, accuracy: float) -> str | None:
    """means_problem of an epoch's loss, then of its accuracy (each named as the message shows it)."""
    return means_problem(m, loss_name, loss, "loss") or means_problem(m, accuracy_name, accuracy, "accuracy")


# --- autograd graphs kept alive by the learner's running sums -----------------------

def graph_kept(held: dict[str, dict[str, int]]) -> str | None:
    """GRAPH_KEPT when a local variable of the learner's functions, as they returned, still holds the
    autograd graphs of more than one batch (a running sum of losses kept with their graphs): ``held`` is
    kata.records.doubles.graphs_held's count of them."""
    for function, names in held.items():
        for name, graphs in names.items():
            if graphs > 1:
                return say(lessons.GRAPH_KEPT, function=function, name=name, graphs=graphs)
    return None
