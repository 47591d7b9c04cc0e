"""Checks for exercise 6, sync: one training epoch, one device-to-host sync.

A GPU runs behind Python: each call only queues work. `.item()`, `.cpu()`,
`.tolist()`, `float(t)` or printing a device tensor make the host wait until
the GPU has finished everything queued: a synchronisation. The book's loop does
that twice per batch, so the GPU idles while Python prepares the next batch.
`train_epoch` must keep its running sums on the device and convert once.

Each check reads the answers of a record (records/sync.py: an epoch of the tiny
setup, watched). On the CPU the checks compare `train_epoch` with the book's
per-batch loop (the same numbers, the same weights afterwards). The checks
marked `cuda` count the synchronisations on the accelerator: with the simulated
one (kata.sim) by counting each `.item()`, `.cpu()`, ... of its tensors; on real
CUDA with `torch.cuda.set_sync_debug_mode`, which warns at every synchronising call.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import math

import pytest
import torch

from kata.checks import lessons
from kata.checks.book import book_epoch
from kata.checks.loop import graph_kept, loss_function_problem, means_problem, measures, training_problem
from kata.checks.messages import describe, device_type, explained_learner_errors, fail_if, premise_first
from kata.i18n import N_, _, say
from kata.records.doubles import N_TRAIN, HostBatch, Log, tiny_data, tiny_setup

SYNC_LESSON = N_(
    "each .item(), .cpu(), .tolist(), float(t) or print of a device tensor makes the host wait until the GPU has "
    "finished all the work queued so far, so the GPU sits idle while Python prepares the next batch; so do a "
    "copy to the device that blocks (x.to(device) without non_blocking=True: move batches with "
    "x.to(device, non_blocking=True)) and an explicit torch.cuda.synchronize() (which only timing needs). Keep "
    "the running sums as tensors on the device (loss_sum += "
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


def mixed_cause(places: dict) -> str | None:
    """For PyTorch's error for two devices in one op: the cause, from where train_epoch's frame's tensors were
    (kata.checks.messages.placed_of), or None."""
    if any(p["class"] == HostBatch.__name__ for p in places.values()):
        return _(BATCH_NOT_MOVED)
    tensors = [device_type(p) for p in places.values() if p["kind"] == "tensor"]
    if "cpu" in tensors and any(t != "cpu" for t in tensors):
        return _(SUMS_ON_THE_CPU)
    return None


# A batch that reached the model unmoved: the cause's lesson, then which call's batch.
BATCH_IN_EPOCH = N_("{cause}\n  a batch of train_epoch(model, dl, loss_fn, optimizer, {device})")

NOT_FLOATS = N_("train_epoch returns Python floats: convert the device sums once, at the end (e.g. "
                "torch.stack([loss_sum, correct_sum]).tolist())\n  its {name} is {value}")
NOT_LANDED = N_(
    "a copy to the host with non_blocking=True is there only after the next synchronisation: it is queued behind "
    "the device's work and returns at once, so reading its destination before a sync (torch.cuda.synchronize(), or "
    "a blocking read of a device tensor such as .tolist()) finds whatever that memory held, here NaN (the simulated "
    "accelerator's mark of a copy still on its way). Bring the sums over with one blocking .tolist() of the device "
    "tensor (that is the epoch's one sync), or synchronise before reading the copy\n"
    "  on {accelerator}, train_epoch returned ({loss}, {accuracy}), read from the copy to the host at {place} before "
    "it landed; on the CPU it returns ({cpu_loss:.6f}, {cpu_accuracy})")
WEIGHTS_DIFFER = N_("after one epoch the weights differ from the book's loop: per batch forward, BCELoss, backward, "
                    "optimizer.step(), optimizer.zero_grad()")


def epoch_of(sync, name, kind=None, device="cpu"):
    """The seed and the answer of record ``name``'s epoch (of ``kind``), with the learner's device and NumPy errors
    explained (the module's folder, for the line and the frame, where it was asked here)."""
    __tracebackhide__ = True
    case = next(c for c in sync.cases(name) if kind in (None, c.args[-1]))
    with explained_learner_errors(sync, f"train_epoch(model, dl, loss_fn, optimizer, {device})", _(MOVE_ADVICE),
                                  mixed=mixed_cause):
        return case.args[0], case.answer


def floats(result):
    __tracebackhide__ = True
    assert isinstance(result, tuple) and len(result) == 2, say(
        "train_epoch returns a tuple (mean_loss, accuracy)\n  it returned {result}", result=describe(result))
    for name, v in zip(("mean_loss", "accuracy"), result):
        assert type(v) is float, say(NOT_FLOATS, name=name, value=describe(v))
    return result


def book_result(seed):
    """The record's tiny setup trained one epoch by the book's per-batch loop: (model, (loss, accuracy))."""
    model, train_dl, _valid_dl, _log = tiny_setup(seed=seed)   # in train() mode, as a module is made
    return model, book_epoch(model, train_dl, torch.optim.Adam(model.parameters(), lr=0.001))


def same_weights(after, b, atol=1e-6) -> bool:
    return all(torch.allclose(p.detach().cpu(), q.detach().cpu(), atol=atol) for p, q in zip(after, b.parameters()))


def measured_wrong(log, loss, accuracy) -> str | None:
    """The message when the epoch's mean loss or accuracy is not the per-sample mean of what the
    model saw and the loop backpropagated (the averaging alone), or None."""
    m = measures(log, "train", N_TRAIN, use_backward=True)
    return (loss_function_problem(log) or means_problem(m, "mean_loss", loss, "loss")
            or means_problem(m, "accuracy", accuracy, "accuracy"))


def book_numbers_problem(sync) -> str | None:
    """Why train_epoch's mean loss and accuracy of the tiny setup's epoch on the CPU are not the book loop's (None:
    they are). Where they differ, the averaging is checked first, against the batches the model saw and the losses
    the loop backpropagated; if that is right, the training differs. The premise of the checks that read the epoch's
    numbers in another setting (a model that says 0.5, the syncs on the accelerator): where one of those fails and
    this says why, it fails with this message."""
    __tracebackhide__ = True
    seed, found = epoch_of(sync, "on_the_cpu", "tiny")
    loss, accuracy = floats(found["result"])
    log = Log.of(found["log"])
    _book_model, (want_loss, want_acc) = book_result(seed)
    if (loss, accuracy) == (pytest.approx(want_loss, rel=1e-5), pytest.approx(want_acc)):
        return None
    return measured_wrong(log, loss, accuracy) or training_problem(log) or say(
        "the mean loss and the accuracy differ from the book loop's, and the check can't tell why from the batches "
        "the model saw\n  train_epoch gave ({loss:.6f}, {accuracy}), the book's loop gives ({want_loss:.6f}, "
        "{want_acc})", loss=loss, accuracy=accuracy, want_loss=want_loss, want_acc=want_acc)


def test_train_epoch_gives_the_book_loops_mean_loss_and_accuracy(sync):
    fail_if(book_numbers_problem(sync))


def test_train_epoch_trains_the_model_as_the_book_does(sync):
    seed, found = epoch_of(sync, "on_the_cpu", "tiny")
    floats(found["result"])
    log = Log.of(found["log"])
    if not same_weights(found["after"], book_result(seed)[0]):
        fail_if(training_problem(log) or _(WEIGHTS_DIFFER))
    assert log.calls, _("train_epoch must run the model on every batch of dl")
    for _phase, training, grad, moved in log.calls:
        if not moved:
            fail_if(say(BATCH_IN_EPOCH, cause=_(BATCH_NOT_MOVED), device="cpu"))
        assert training and grad, _("train_epoch must run the model in train() mode, with gradients")


def test_train_epoch_runs_in_train_mode_even_after_validation(sync):
    _seed, found = epoch_of(sync, "watched", "after eval")   # the model in eval() mode first, as validation leaves it
    floats(found["result"])
    assert all(training for _phase, training, _grad, _moved in found["log"]["calls"]), _(
        "train_epoch ran the model in eval() mode: call model.train() first (a validation pass leaves the model "
        "in eval mode)")


def test_train_epoch_keeps_no_autograd_graph_in_its_sums(sync):
    _seed, found = epoch_of(sync, "watched", "six batches")   # six batches
    floats(found["result"])
    fail_if(graph_kept(found["graphs"]))


def test_train_epoch_counts_a_probability_of_one_half_as_a_smile(sync):
    # A model that says exactly 0.5 for every image: the book's `pred >= 0.5` predicts 1 for each.
    # Where it fails, the epoch's numbers in the tiny setup come first: an averaging that is not the book's shows here
    # too, and is that check's cause.
    seed, found = epoch_of(sync, "on_the_cpu", "half")
    with premise_first(lambda: book_numbers_problem(sync)):
        _loss, accuracy = floats(found["result"])
        share = tiny_data(N_TRAIN, seed + 1)[1].float().mean().item()
        assert accuracy == pytest.approx(share), say(lessons.ACCURACY_AT_ONE_HALF, who="train_epoch",
                                                     got=format(accuracy, ".4f"), share=format(share, ".4f"))


# --- on an accelerator: count the synchronisations -------------------------------


def counted(found) -> str:
    """The syncs a record counted, in a line: their kinds and places (CUDA's sync debug mode calls each "sync")."""
    where = ", ".join(say("{kind} at {place}", kind=kind, place=place) for kind, place in found["events"])
    return f"{found['by_kind']}: {where}"


@pytest.mark.cuda
def test_train_epoch_syncs_at_most_once_per_epoch(sync, accelerator):
    if accelerator.type == "mps":
        pytest.skip(_("counting synchronisations needs CUDA's sync debug mode or the simulated accelerator"))
    _seed, found = epoch_of(sync, "syncs", device=accelerator)   # six batches
    # Where it fails, the epoch's numbers on the CPU come first: a number that is not the book's (the last batch's
    # loss read after the loop, say) can be its own extra read, and is that check's cause.
    with premise_first(lambda: book_numbers_problem(sync)):
        synced_once(found)


def synced_once(found):
    __tracebackhide__ = True
    reads = {"item", "float", "tolist", "cpu"}
    assert not (found["total"] == 2 and set(found["by_kind"]) <= reads), say(   # the two numbers, one by one
        "train_epoch read its two numbers from the device one at a time: each read is a synchronisation, so the "
        "epoch has two where it needs one. Two numbers leave the device in one transfer: put them in one tensor on "
        "the device, then read that once\n  ({found})", found=counted(found))
    assert found["total"] <= 1, say(
        "train_epoch must synchronise the device with the host at most once per epoch: {lesson}\n"
        "  it synchronised {count} times in an epoch of 6 batches ({found})", lesson=_(SYNC_LESSON),
        count=found["total"], found=counted(found))
    result = found["result"]
    for name, v in zip(("mean_loss", "accuracy"), result if isinstance(result, tuple) else (result,)):
        assert type(v) is float, say(NOT_FLOATS, name=name, value=describe(v))   # converted in that one sync


def finite(values) -> bool:
    return isinstance(values, tuple) and all(type(v) is float and math.isfinite(v) for v in values)


def not_landed(found, accelerator) -> str | None:
    """NOT_LANDED when the epoch on the accelerator returned NaN after a non_blocking copy to the host (the
    simulated accelerator's copy in flight, which it tells the record of) where the CPU's gives numbers, or None."""
    result, cpu = found["device"]["result"], found["cpu"]["result"]
    copies = found["device"].get("copies_to_host") or []
    if not copies or finite(result) or not finite(cpu):
        return None
    return say(NOT_LANDED, accelerator=accelerator, loss=result[0], accuracy=result[1],
               place=", ".join(dict.fromkeys(copies)), cpu_loss=cpu[0], cpu_accuracy=cpu[1])


@pytest.mark.cuda
def test_train_epoch_on_the_accelerator_gives_the_book_loops_numbers(sync, accelerator):
    seed, found = epoch_of(sync, "on_accelerator", device=accelerator)
    loss, accuracy = floats(found["device"]["result"])
    want_model, (want_loss, want_acc) = book_result(seed)
    if (loss, accuracy) == (pytest.approx(want_loss, rel=1e-4), pytest.approx(want_acc)) and same_weights(
            found["device"]["after"], want_model, atol=1e-5):
        return
    fail_if(not_landed(found, accelerator))
    # What is wrong on the CPU too is said as the CPU's checks say it: the device is not the cause.
    log = Log.of(found["device"]["log"])
    fail_if(training_problem(log) or measured_wrong(log, loss, accuracy))
    cpu_loss, cpu_accuracy = floats(found["cpu"]["result"])
    if not same_weights(found["cpu"]["after"], want_model):
        fail_if(training_problem(Log.of(found["cpu"]["log"])) or _(WEIGHTS_DIFFER))
    pytest.fail(say("the same train_epoch gives other numbers on the accelerator than on the CPU: the device "
                    "changes where the numbers are computed, not what they are, so something in the epoch depends on "
                    "the device\n  on {accelerator}, train_epoch gave ({loss:.6f}, {accuracy}); on the CPU "
                    "({cpu_loss:.6f}, {cpu_accuracy}), as the book's loop does", accelerator=accelerator, loss=loss,
                    accuracy=accuracy, cpu_loss=cpu_loss, cpu_accuracy=cpu_accuracy), pytrace=False)


@pytest.mark.cuda
def test_train_epoch_keeps_the_model_and_batches_on_the_accelerator(sync, accelerator):
    _seed, found = epoch_of(sync, "on_accelerator", device=accelerator)
    floats(found["device"]["result"])
    devices = set(found["device"]["devices"])
    assert devices == {accelerator.type}, say(
        "train_epoch must leave the model where it is\n  a model on {accelerator} ended up on {devices}",
        accelerator=accelerator, devices=devices)
    if not all(moved for *_others, moved in found["device"]["log"]["calls"]):
        fail_if(say(BATCH_IN_EPOCH, cause=_(BATCH_NOT_MOVED), device=accelerator))
