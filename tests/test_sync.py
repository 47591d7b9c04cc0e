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

from kata.checks.book import book_epoch
from kata.checks.doubles import BATCH, N_TRAIN, tiny_setup
from kata.checks.messages import describe, explained_learner_errors

SYNC_LESSON = (
    "each .item(), .cpu(), .tolist(), float(t) or print of a device tensor makes the host wait until the GPU has "
    "finished all the work queued so far, so the GPU sits idle while Python prepares the next batch. Keep the "
    "running sums as tensors on the device (loss_sum += loss.detach() * n) and turn them into Python numbers "
    "once, after the last batch")


MOVE_ADVICE = ("move every batch: x = x.to(device), y = y.to(device); create the running sums on the device: "
               "torch.zeros((), device=device)")


def run_epoch(sync, model, dl, optimizer, device):
    """sync.train_epoch(...), with the learner's device and NumPy errors explained."""
    __tracebackhide__ = True
    with explained_learner_errors(sync, f"train_epoch(model, dl, loss_fn, optimizer, {device})", MOVE_ADVICE):
        return sync.train_epoch(model, dl, nn.BCELoss(), optimizer, device)


def epoch_with(sync, model, dl, device="cpu", lr=0.001):
    __tracebackhide__ = True
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    result = run_epoch(sync, model, dl, optimizer, torch.device(device) if isinstance(device, str) else device)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"train_epoch returns a tuple (mean_loss, accuracy)\n  it returned {describe(result)}")
    for name, v in zip(("mean_loss", "accuracy"), result):
        assert type(v) is float, (
            "train_epoch returns Python floats: convert the device sums once, at the end (e.g. "
            f"torch.stack([loss_sum, correct_sum]).tolist())\n  its {name} is {describe(v)}")
    return result


def book_result(epochs=1):
    """The tiny setup trained one epoch by the book's per-batch loop: (model, (loss, accuracy))."""
    model, train_dl, _, _ = tiny_setup()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    model.train()
    return model, book_epoch(model, train_dl, optimizer)


@pytest.mark.audit("numbers")
def test_train_epoch_gives_the_book_loops_mean_loss_and_accuracy(sync):
    model, train_dl, _, _ = tiny_setup()
    loss, accuracy = epoch_with(sync, model, train_dl)
    _, (want_loss, want_acc) = book_result()
    assert loss == pytest.approx(want_loss, rel=1e-5), (
        "the mean loss sums loss * batch size over the epoch and divides by len(dl.dataset) "
        f"({N_TRAIN} samples in batches of {BATCH}: the last is smaller)\n  train_epoch's mean loss is "
        f"{loss:.6f}, the book's loop gives {want_loss:.6f}")
    assert accuracy == pytest.approx(want_acc), (
        "the accuracy is the share of (pred >= 0.5) == y over len(dl.dataset) samples\n  train_epoch's accuracy "
        f"is {accuracy}, the book's loop gives {want_acc}")


@pytest.mark.audit("weights", observed="the mode and gradients of each forward pass, and the batches' moves")
def test_train_epoch_trains_the_model_as_the_book_does(sync):
    model, train_dl, _, log = tiny_setup()
    epoch_with(sync, model, train_dl)
    want_model, _ = book_result()
    for got, want in zip(model.parameters(), want_model.parameters()):
        assert torch.allclose(got, want, atol=1e-6), (
            "after one epoch the weights differ from the book's loop: per batch forward, BCELoss, backward, "
            "optimizer.step(), optimizer.zero_grad()")
    assert log.calls and all(phase == "train" and training and grad and moved
                             for phase, training, grad, moved in log.calls), (
        "train_epoch must run the model in train() mode with gradients, on batches moved to the device "
        "(x = x.to(device))")


@pytest.mark.audit("types", observed="which mode the forward passes ran in")
def test_train_epoch_runs_in_train_mode_even_after_validation(sync):
    model, train_dl, _, log = tiny_setup()
    model.eval()  # as validation leaves it
    epoch_with(sync, model, train_dl)
    assert all(training for _, training, _, _ in log.calls), (
        "train_epoch ran the model in eval() mode: call model.train() first (a validation pass leaves the model "
        "in eval mode)")


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
            pytest.skip("counting synchronisations needs CUDA's sync debug mode or the simulated accelerator")
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
        where = ", ".join(f"{kind} at {place}" for kind, place in self._syncs.events[:4])
        return f"{dict(self._syncs.by_kind)}: {where}"


@pytest.mark.cuda
@pytest.mark.audit("device.types", observed="how many times the host waited for the device")
def test_train_epoch_syncs_at_most_once_per_epoch(sync, accelerator):
    model, train_dl, _, _ = tiny_setup(n_train=24, batch=4)  # six batches
    model.to(accelerator)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    with SyncCounter(accelerator) as counter:
        run_epoch(sync, model, train_dl, optimizer, accelerator)
    assert counter.total <= 1, (
        f"train_epoch must synchronise the device with the host at most once per epoch: {SYNC_LESSON}\n"
        f"  it synchronised {counter.total} times in an epoch of 6 batches ({counter.describe()})")


@pytest.mark.cuda
@pytest.mark.audit("device.numbers", "device.weights")
def test_train_epoch_on_the_accelerator_gives_the_book_loops_numbers(sync, accelerator):
    model, train_dl, _, _ = tiny_setup()
    model.to(accelerator)
    loss, accuracy = epoch_with(sync, model, train_dl, accelerator)
    want_model, (want_loss, want_acc) = book_result()
    assert (loss, accuracy) == (pytest.approx(want_loss, rel=1e-4), pytest.approx(want_acc)), (
        "keeping the sums on the device must not change them\n  on "
        f"{accelerator}, train_epoch gave ({loss:.6f}, {accuracy}), the book's loop on the CPU "
        f"({want_loss:.6f}, {want_acc})")
    for got, want in zip(model.parameters(), want_model.parameters()):
        assert torch.allclose(got.detach().cpu(), want, atol=1e-5), (
            "after one epoch on the accelerator the weights differ from the book's loop on the CPU: per batch "
            "forward, BCELoss, backward, optimizer.step(), optimizer.zero_grad()")


@pytest.mark.cuda
@pytest.mark.audit("device.placement", observed="whether each batch was moved to the accelerator")
def test_train_epoch_keeps_the_model_and_batches_on_the_accelerator(sync, accelerator):
    model, train_dl, _, log = tiny_setup()
    model.to(accelerator)
    epoch_with(sync, model, train_dl, accelerator)
    devices = {p.device.type for p in model.parameters()}
    assert devices == {accelerator.type}, (
        f"train_epoch must leave the model where it is\n  a model on {accelerator} ended up on {devices}")
    assert all(moved for *_, moved in log.calls), (
        "a batch reached the model without being moved: write `x = x.to(device)`")
