"""Checks for exercise 6, sync: one training epoch, one device-to-host sync.

A GPU runs behind Python: each call only queues work. `.item()`, `.cpu()`,
`.tolist()`, `float(t)` or printing a device tensor make the host wait until
the GPU has finished everything queued: a synchronisation. The book's loop does
that twice per batch, so the GPU idles while Python prepares the next batch.
`train_epoch` must keep its running sums on the device and convert once.

On the CPU the checks compare `train_epoch` with the book's per-batch loop (the
same numbers, the same weights afterwards). The checks marked `cuda` count the
synchronisations on the accelerator: with the simulated one (kata.sim)
by counting each `.item()`, `.cpu()`, ... of its tensors; on real CUDA with
`torch.cuda.set_sync_debug_mode`, which warns at every synchronising call.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import warnings

import pytest
import torch
from torch import nn

from kata.checks import lessons
from kata.checks.book import book_epoch
from kata.checks.loop import (
    graph_kept,
    locals_at_return,
    loss_function_problem,
    means_problem,
    measures,
    training_problem,
)
from kata.checks.messages import describe, explained_learner_errors, fail_if
from kata.harness.target import target_of
from kata.i18n import N_, _, say
from kata.records.doubles import HalfModel, HostBatch, tiny_setup

SYNC_LESSON = N_(
    "each .item(), .cpu(), .tolist(), float(t) or print of a device tensor makes the host wait until the GPU has "
    "finished all the work queued so far, so the GPU sits idle while Python prepares the next batch; so does a "
    "copy to the device that blocks (x.to(device) without non_blocking=True: move batches with "
    "x.to(device, non_blocking=True)). Keep the running sums as tensors on the device (loss_sum += "
    "loss.detach() * n) and turn them into Python numbers once, after the last batch")


MOVE_ADVICE = N_(
    "Move every batch (x = x.to(device, non_blocking=True), and y too), and make the running sums on the device "
    "(torch.zeros((), device=device)): an in-place += into a CPU tensor can't take a device tensor; the check can't "
    "tell which of these it was.")
BATCH_NOT_MOVED = N_("a batch reached the model without being moved: `x.to(device)` RETURNS the moved tensor and "
                     "leaves x where it was, so write `x = x.to(device)`")
SUMS_ON_THE_CPU = N_(
    "the running sums are on the CPU while each batch's numbers are on the device: make the sums on the device "
    "(torch.zeros((), device=device)); an in-place += into a CPU tensor can't take a device tensor (CUDA refuses it: "
    "'Expected all tensors to be on the same device')")


def mixed_cause(names: dict) -> str | None:
    """For PyTorch's error for two devices in one op: the cause, from train_epoch's frame, or None."""
    if any(type(v) is HostBatch for v in names.values()):
        return _(BATCH_NOT_MOVED)
    tensors = [v for v in names.values() if isinstance(v, torch.Tensor)]
    if any(t.device.type == "cpu" for t in tensors) and any(t.device.type != "cpu" for t in tensors):
        return _(SUMS_ON_THE_CPU)
    return None


# A batch that reached the model unmoved: the cause's lesson, then which call's batch.
BATCH_IN_EPOCH = N_("{cause}\n  a batch of train_epoch(model, dl, loss_fn, optimizer, {device})")

NOT_FLOATS = N_("train_epoch returns Python floats: convert the device sums once, at the end (e.g. "
                "torch.stack([loss_sum, correct_sum]).tolist())\n  its {name} is {value}")


def run_epoch(sync, model, dl, optimizer, device, log=None, kept=None):
    """sync.train_epoch(...), with the learner's device and NumPy errors explained (given the setup's
    log, every backward pass, step and zero_grad recorded; given a dict, its functions' locals kept)."""
    __tracebackhide__ = True
    with explained_learner_errors(sync, f"train_epoch(model, dl, loss_fn, optimizer, {device})", _(MOVE_ADVICE),
                                  mixed=mixed_cause):
        if log is None:
            return sync.train_epoch(model, dl, nn.BCELoss(), optimizer, device)
        with log.watching(model), locals_at_return(target_of(sync).path) as captured:
            result = sync.train_epoch(model, dl, nn.BCELoss(), optimizer, device)
        if kept is not None:
            kept.update(captured)
        return result


def epoch_with(sync, model, dl, device="cpu", lr=0.001, log=None, kept=None):
    __tracebackhide__ = True
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    device = torch.device(device) if isinstance(device, str) else device
    result = run_epoch(sync, model, dl, optimizer, device, log, kept)
    assert isinstance(result, tuple) and len(result) == 2, say(
        "train_epoch returns a tuple (mean_loss, accuracy)\n  it returned {result}", result=describe(result))
    for name, v in zip(("mean_loss", "accuracy"), result):
        assert type(v) is float, say(NOT_FLOATS, name=name, value=describe(v))
    return result


def book_result(epochs=1):
    """The tiny setup trained one epoch by the book's per-batch loop: (model, (loss, accuracy))."""
    model, train_dl, _valid_dl, _log = tiny_setup()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    model.train()
    return model, book_epoch(model, train_dl, optimizer)


def same_weights(a, b, atol=1e-6) -> bool:
    return all(torch.allclose(p.detach().cpu(), q.detach().cpu(), atol=atol) for p, q in zip(a.parameters(),
                                                                                             b.parameters()))


def measured_wrong(log, dl, loss, accuracy) -> str | None:
    """The message when the epoch's mean loss or accuracy is not the per-sample mean of what the
    model saw and the loop backpropagated (the averaging alone), or None."""
    problem = loss_function_problem(log)
    if problem is not None:
        return problem
    m = measures(log, "train", len(dl.dataset), use_backward=True)
    return means_problem(m, "mean_loss", loss, "loss") or means_problem(m, "accuracy", accuracy, "accuracy")


@pytest.mark.audit("numbers")
def test_train_epoch_gives_the_book_loops_mean_loss_and_accuracy(sync):
    # The book loop's numbers. Where they differ, the averaging is checked first, against the batches
    # the model saw and the losses the loop backpropagated; if that is right, the training differs.
    model, train_dl, _valid_dl, log = tiny_setup()
    loss, accuracy = epoch_with(sync, model, train_dl, log=log)
    _book_model, (want_loss, want_acc) = book_result()
    if (loss, accuracy) == (pytest.approx(want_loss, rel=1e-5), pytest.approx(want_acc)):
        return
    fail_if(measured_wrong(log, train_dl, loss, accuracy) or training_problem(log) or say(
        "the mean loss and the accuracy differ from the book loop's, and the check can't tell why from the batches "
        "the model saw\n  train_epoch gave ({loss:.6f}, {accuracy}), the book's loop gives ({want_loss:.6f}, "
        "{want_acc})", loss=loss, accuracy=accuracy, want_loss=want_loss, want_acc=want_acc))


@pytest.mark.audit("weights", observed=N_("the mode and gradients of each forward pass, and the batches' moves"))
def test_train_epoch_trains_the_model_as_the_book_does(sync):
    model, train_dl, _valid_dl, log = tiny_setup()
    epoch_with(sync, model, train_dl, log=log)
    want_model, _result = book_result()
    if not same_weights(model, want_model):
        fail_if(training_problem(log) or _(
            "after one epoch the weights differ from the book's loop: per batch forward, BCELoss, backward, "
            "optimizer.step(), optimizer.zero_grad()"))
    assert log.calls, _("train_epoch must run the model on every batch of dl")
    for _phase, training, grad, moved in log.calls:
        if not moved:
            fail_if(say(BATCH_IN_EPOCH, cause=_(BATCH_NOT_MOVED), device="cpu"))
        assert training and grad, _("train_epoch must run the model in train() mode, with gradients")


@pytest.mark.audit("types", observed=N_("which mode the forward passes ran in"))
def test_train_epoch_runs_in_train_mode_even_after_validation(sync):
    model, train_dl, _valid_dl, log = tiny_setup()
    model.eval()  # as validation leaves it
    epoch_with(sync, model, train_dl)
    assert all(training for _phase, training, _grad, _moved in log.calls), _(
        "train_epoch ran the model in eval() mode: call model.train() first (a validation pass leaves the model "
        "in eval mode)")


@pytest.mark.audit("types", observed=N_("whether a local of train_epoch still held several batches' autograd "
                                        "graphs"))
def test_train_epoch_keeps_no_autograd_graph_in_its_sums(sync):
    model, train_dl, _valid_dl, log = tiny_setup(n_train=24, batch=4)  # six batches
    kept = {}
    epoch_with(sync, model, train_dl, log=log, kept=kept)
    fail_if(graph_kept(kept))


@pytest.mark.audit("half")
def test_train_epoch_counts_a_probability_of_one_half_as_a_smile(sync):
    # A model that says exactly 0.5 for every image: the book's `pred >= 0.5` predicts 1 for each.
    model, train_dl, _valid_dl, _log = tiny_setup(model=HalfModel())
    _loss, accuracy = epoch_with(sync, model, train_dl)
    share = train_dl.y.float().mean().item()
    assert accuracy == pytest.approx(share), say(lessons.ACCURACY_AT_ONE_HALF, who="train_epoch",
                                                 got=format(accuracy, ".4f"), share=format(share, ".4f"))


# --- on an accelerator: count the synchronisations -------------------------------


class SyncCounter:
    """Counts device-to-host synchronisations on the accelerator under test."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        if self.device.type == "cuda":
            self._warnings = warnings.catch_warnings(record=True)
            self._caught = self._warnings.__enter__()
            warnings.simplefilter("always")
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("warn")
        elif self.device.type == "mps":
            pytest.skip(_("counting synchronisations needs CUDA's sync debug mode or the simulated accelerator"))
        else:
            from kata import sim

            self._count = sim.count_syncs()
            self._syncs = self._count.__enter__()
        return self

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.set_sync_debug_mode("default")
            self._warnings.__exit__(*exc)
        else:
            self._count.__exit__(*exc)
        return False

    @property
    def total(self) -> int:
        if self.device.type == "cuda":
            return sum("synchroniz" in str(w.message) for w in self._caught)
        return self._syncs.total

    def describe(self) -> str:
        if self.device.type == "cuda":
            return "; ".join(sorted({str(w.message).splitlines()[0] for w in self._caught}))[:300]
        where = ", ".join(say("{kind} at {place}", kind=kind, place=place) for kind, place in self._syncs.events[:4])
        return f"{dict(self._syncs.by_kind)}: {where}"


@pytest.mark.cuda
@pytest.mark.audit("device.types", observed=N_("how many times the host waited for the device"))
def test_train_epoch_syncs_at_most_once_per_epoch(sync, accelerator):
    model, train_dl, _valid_dl, _log = tiny_setup(n_train=24, batch=4)  # six batches
    model.to(accelerator)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    with SyncCounter(accelerator) as counter:
        result = run_epoch(sync, model, train_dl, optimizer, accelerator)
    assert counter.total <= 1, say(
        "train_epoch must synchronise the device with the host at most once per epoch: {lesson}\n"
        "  it synchronised {count} times in an epoch of 6 batches ({found})", lesson=_(SYNC_LESSON),
        count=counter.total, found=counter.describe())
    for name, v in zip(("mean_loss", "accuracy"), result if isinstance(result, tuple) else (result,)):
        assert type(v) is float, say(NOT_FLOATS, name=name, value=describe(v))   # converted in that one sync


@pytest.mark.cuda
@pytest.mark.audit("device.numbers", "device.weights")
def test_train_epoch_on_the_accelerator_gives_the_book_loops_numbers(sync, accelerator):
    model, train_dl, _valid_dl, log = tiny_setup()
    model.to(accelerator)
    loss, accuracy = epoch_with(sync, model, train_dl, accelerator, log=log)
    want_model, (want_loss, want_acc) = book_result()
    if (loss, accuracy) == (pytest.approx(want_loss, rel=1e-4), pytest.approx(want_acc)) and same_weights(
            model, want_model, atol=1e-5):
        return
    # What is wrong on the CPU too is said as the CPU's checks say it: the device is not the cause.
    fail_if(training_problem(log) or measured_wrong(log, train_dl, loss, accuracy))
    cpu_model, cpu_dl, _cpu_valid_dl, cpu_log = tiny_setup()
    cpu_loss, cpu_accuracy = epoch_with(sync, cpu_model, cpu_dl, log=cpu_log)
    if not same_weights(cpu_model, want_model):
        fail_if(training_problem(cpu_log) or _(
            "after one epoch the weights differ from the book's loop: per batch forward, BCELoss, backward, "
            "optimizer.step(), optimizer.zero_grad()"))
    pytest.fail(say("the same train_epoch gives other numbers on the accelerator than on the CPU: the device "
                    "changes where the numbers are computed, not what they are, so something in the epoch depends on "
                    "the device\n  on {accelerator}, train_epoch gave ({loss:.6f}, {accuracy}); on the CPU "
                    "({cpu_loss:.6f}, {cpu_accuracy}), as the book's loop does", accelerator=accelerator, loss=loss,
                    accuracy=accuracy, cpu_loss=cpu_loss, cpu_accuracy=cpu_accuracy), pytrace=False)


@pytest.mark.cuda
@pytest.mark.audit("device.placement", observed=N_("whether each batch was moved to the accelerator"))
def test_train_epoch_keeps_the_model_and_batches_on_the_accelerator(sync, accelerator):
    model, train_dl, _valid_dl, log = tiny_setup()
    model.to(accelerator)
    epoch_with(sync, model, train_dl, accelerator)
    devices = {p.device.type for p in model.parameters()}
    assert devices == {accelerator.type}, say(
        "train_epoch must leave the model where it is\n  a model on {accelerator} ended up on {devices}",
        accelerator=accelerator, devices=devices)
    if not all(moved for *_others, moved in log.calls):
        fail_if(say(BATCH_IN_EPOCH, cause=_(BATCH_NOT_MOVED), device=accelerator))
