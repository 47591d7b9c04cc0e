"""Checks for exercise 4, training: the book's loop, with histories of floats.

Each check reads the answers of a record (records/training.py). Most train a tiny deterministic model
(Flatten, Linear, Sigmoid: no dropout, so every run is the same) on tiny tensors of a drawn seed, and
compare the learner's `train` with an exact replay of the book's algorithm: BCELoss, Adam(lr=0.001),
per-sample means, accuracy as a share of `pred >= 0.5` that match, validation in eval mode without
gradients. The record's log (kata/records/doubles.py) holds how each forward pass ran and what it gave,
and every backward pass, optimizer step and zero_grad; where the numbers differ from the book's, the
message says the one step that differs (kata.checks.loop), or says in one line that the check can't tell.

Each kind of wrong history entry has its own reason (kata.checks.messages): device tensors are the
seed's crash, CPU tensors plot but are not floats, a tensor that requires grad is refused by NumPy,
NumPy scalars are not floats. When the learner's own plotting inside `train` hands a device tensor to
matplotlib (the seed's code does), the check says so, with the line.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import inspect
import math
import re

import pytest
import torch

import kata.checks.book
from kata.checks import lessons
from kata.checks.book import book_epoch
from kata.checks.declared import losses_problem, optimizers_problem
from kata.checks.loop import loss_function_problem, means_problem, measures, training_problem
from kata.checks.messages import (
    describe,
    device_type,
    entry_kind,
    explained_learner_errors,
    fail_if,
    history_entry_problem,
    numpy_refusal,
    value_problem,
)
from kata.i18n import N_, _, say
from kata.records.declared import read
from kata.records.doubles import BATCH, N_TRAIN, N_VALID, HostBatch, Log, replay, tiny_data
from kata.records.doubles import tiny_setup as setup
from kata.records.history import HISTORY_NAMES

BOOK_DECLARES = read({"book.py": inspect.getsource(kata.checks.book)}, "book")   # Adam(lr=0.001), BCELoss

MOVE_ADVICE = N_("Move every batch with `x_batch = x_batch.to(device)` (Tensor.to returns the moved tensor) and the "
                 "model with model.to(device).")
PLOT_ADVICE = N_("Code in train that plots or converts to NumPy gets the raw sums: make each history entry a Python "
                 "float while training (.item()), and leave the drawing to plotting.py "
                 "(train(..., on_epoch=live.update)).")
MODEL_NOT_MOVED_FIRST = N_("given a device, train and evaluate move the model there first, in place: Module.to moves "
                           "the caller's model object (its parameters), so model.to(device) is all it takes")
MODEL_NOT_MOVED = N_("  after {call}, the model, which was on {before}, is on {after}")

# Validation, in train and in evaluate: one rule each, then where it was broken.
VALIDATION_IN_EVAL_MODE = N_("validation runs the model in eval() mode: call model.eval() before validating, or "
                             "Dropout keeps dropping units and the score is noisy")
VALIDATION_WITHOUT_GRADIENTS = N_("validation runs the model without gradients: wrap it in `with torch.no_grad():` (or "
                                  "torch.inference_mode()), so no autograd graph is built for nothing")
TRAIN_VALIDATED_IN_TRAIN_MODE = N_("  a validation batch of train() ran in train() mode")
TRAIN_VALIDATED_WITH_GRADIENTS = N_("  a validation batch of train() ran with gradients enabled")
EVALUATED_IN_TRAIN_MODE = N_("  a batch of evaluate(model, dl) ran in train() mode")
EVALUATED_WITH_GRADIENTS = N_("  a batch of evaluate(model, dl) ran with gradients enabled")
DEVICE_NONE = N_("device=None means the model's own device (that of its first parameter, "
                 "next(model.parameters()).device): the batches go where the model is, and the model stays there")


def mixed_cause(function: str, device):
    """For PyTorch's error for two devices in one op: the cause, from where the learner's frame's tensors and
    models were (kata.checks.messages.placed_of: a batch still as the loader gave it, a model left on the CPU,
    device=None taken for the CPU), or None."""

    def cause(places: dict) -> str | None:
        if any(p["class"] == HostBatch.__name__ for p in places.values()):
            return _(lessons.BATCH_NOT_MOVED)
        models = {device_type(p) for p in places.values() if p["kind"] == "module"} - {None}
        on_device = any(p["kind"] == "tensor" and device_type(p) != "cpu" for p in places.values())
        if device is not None and "cpu" in models and on_device:
            return _(MODEL_NOT_MOVED_FIRST)
        if device is None and models - {"cpu"}:
            return _(DEVICE_NONE)
        return None

    return cause


EVALUATE_MEASURES = N_("evaluate must give the loss times batch size summed and divided by len(dl.dataset), and the "
                       "share of (pred >= 0.5) == label, of the model as it was given (evaluate only measures)\n"
                       "  evaluate gave {got}, the book's measures give {want}")

# The names of evaluate's two results, in the lines that say which was wrong.
EVALUATE_LOSS = N_("evaluate's loss")
EVALUATE_ACCURACY = N_("evaluate's accuracy")
# A batch that reached the model unmoved: the cause's lesson, then which batch.
PHASE_BATCH_NOT_MOVED = N_("{cause}\n  a {phase} batch, with device={device}")
PHASES = {"train": N_("train"), "valid": N_("valid")}


def answered(training, which, epochs=None, device=None):
    """The seed and the answer of a case (``which``: one, or a record's name and the case's kind), with the learner's
    errors explained: those of train(model, ``epochs``, ...), or of evaluate without ``epochs``."""
    __tracebackhide__ = True
    case = next(c for c in training.cases(which[0]) if c.args[-1] == which[1]) if isinstance(which, tuple) else which
    given = f", device={device}" if device is not None else ""
    who = f"train(model, {epochs}, train_dl, valid_dl{given})" if epochs else f"evaluate(model, dl{given})"
    with explained_learner_errors(training, who, _(MOVE_ADVICE), _(PLOT_ADVICE),
                                  mixed_cause("train" if epochs else "evaluate", device)):
        return case.args[:1] and case.args[0], case.answer


# Where a check meets tensors that come from the code that meets the seed's crash on the accelerator.
ON_THE_ACCELERATOR = N_("  on the accelerator (the checks marked cuda), train meets it:")
AND_HERE = N_("  and here the same code gives:")
_DEVICE = re.compile(r"can't convert (\S+) device type tensor")


def seeds_crash(training) -> str | None:
    """The seed's crash as train on the accelerator meets it: its check's message (NumPy refusing a device tensor in
    the learner's own plotting, or device tensors in the histories), or None (it meets neither, or there is none)."""
    __tracebackhide__ = True
    case = next(c for c in training.cases("on_accelerator") if c.args[-1] == "two epochs")
    exc = case.raised
    if exc is not None:
        if numpy_refusal(exc) != "device":
            return None
        device = _DEVICE.search(str(exc))
        try:
            answered(training, case, 2, device.group(1) if device else "...")
        except pytest.fail.Exception as failed:
            return failed.msg
        return None
    history = case.answer.get("history")
    for name, entries in zip(HISTORY_NAMES, history if isinstance(history, (tuple, list)) else ()):
        for i, v in enumerate(entries if isinstance(entries, list) else ()):
            if entry_kind(v) == "device tensor":
                return _(lessons.ENTRY_LESSONS["device tensor"]) + "\n" + say(lessons.ENTRY_AT, name=name, index=i,
                                                                              value=describe(v))
    return None


def traced(training, problem: str | None) -> str | None:
    """``problem``, a history entry or a result that is a tensor, led by the seed's crash where the same code meets
    it on the accelerator: a CPU tensor here, and a device tensor anywhere, are its consequences there."""
    first, _sep, details = (problem or "").partition("\n")
    if first not in (_(lessons.ENTRY_LESSONS["cpu tensor"]), _(lessons.ENTRY_LESSONS["device tensor"])):
        return problem
    crash = seeds_crash(training)
    if crash is None or crash.partition("\n")[0] == first:
        return problem
    lesson, _sep, there = crash.partition("\n")
    return f"{lesson}\n{_(ON_THE_ACCELERATOR)}\n{there}\n{_(AND_HERE)}\n{details}"


def histories(training, name, kind, epochs, device=None):
    """(seed, answer, its histories as floats): an entry not a Python float fails first, with its kind's lesson."""
    __tracebackhide__ = True
    seed, found = answered(training, (name, kind), epochs, device)
    check_history_shape(found["history"], epochs, training)
    return seed, found, as_floats(found["history"])


def as_floats(history) -> list[list[float]]:
    __tracebackhide__ = True
    out = []
    for name, entries in zip(HISTORY_NAMES, history):
        converted = []
        for i, v in enumerate(entries):
            try:
                converted.append(float(v.detach()) if isinstance(v, torch.Tensor) else float(v))
            except (TypeError, ValueError, RuntimeError):
                where = say(lessons.ENTRY_AT, name=name, index=i, value=describe(v))
                pytest.fail(_(lessons.ENTRY_LESSONS["other"]) + "\n" + where, pytrace=False)
        out.append(converted)
    return out


# --- what a history must be ----------------------------------------------------


def check_history_shape(result, epochs, training):
    __tracebackhide__ = True
    check_history_lists(result, epochs)
    fail_if(traced(training, history_entry_problem(result, HISTORY_NAMES)))


def check_history_lists(result, epochs):
    __tracebackhide__ = True
    assert isinstance(result, (tuple, list)) and len(result) == 4, say(
        "train() must return the four histories (loss_hist_train, loss_hist_valid, accuracy_hist_train, "
        "accuracy_hist_valid)\n  it returned {result}", result=describe(result))
    for name, h in zip(HISTORY_NAMES, result):
        assert isinstance(h, list), say("each history is a list, one entry per epoch\n  {name} is {value}",
                                        name=name, value=describe(h))
        assert len(h) == epochs, say(
            "each history has one entry per epoch\n  {name} has {count} entries after {epochs} epochs", name=name,
            count=len(h), epochs=epochs)


def declared_problem(training) -> str | None:
    """Where the optimizer or a loss train's source builds is not the book's (read from the source, never run: a
    patched Adam.step can step with the book's rate while the code asks for another)."""
    mine = training.answer("declared")
    return optimizers_problem(mine, BOOK_DECLARES) or losses_problem(mine, BOOK_DECLARES)


def close(got, want) -> bool:
    return all(g == pytest.approx(w, rel=1e-5, abs=1e-7) for gh, wh in zip(got, want) for g, w in zip(gh, wh))


def same_weights(after, b, atol=1e-6) -> bool:
    return all(torch.allclose(p.detach().cpu(), q.detach().cpu(), atol=atol) for p, q in zip(after, b.parameters()))


def book_measures(seed, after=()):
    """The book's (loss, accuracy) on its validation set of the tiny model of ``seed``, with the weights ``after``."""
    model, _train_dl, valid_dl, _log = setup(seed=seed)
    with torch.no_grad():
        for p, w in zip(model.parameters(), after):
            p.copy_(w)
        return book_epoch(model.eval(), valid_dl)


def measured_wrong(log, history, epochs) -> str | None:
    """The message when an entry of ``history`` is not the per-sample mean of the batches the model
    saw in its epoch (the training loss: of the losses the loop backpropagated), or None."""
    if history[1] and not log.forwards("valid"):
        return _(lessons.NO_VALIDATION)
    problem = loss_function_problem(log)   # then no measure can be told from the model's probabilities
    for epoch in range(epochs if problem is None else 0):
        for index, phase, n in ((0, "train", N_TRAIN), (2, "train", N_TRAIN), (1, "valid", N_VALID),
                                (3, "valid", N_VALID)):
            m = measures(log, phase, n, epoch, math.ceil(n / BATCH), use_backward=index == 0)
            what = "loss" if index < 2 else "accuracy"
            problem = problem or means_problem(m, f"{HISTORY_NAMES[index]}[{epoch}]", history[index][epoch], what)
    return problem


# --- the checks ----------------------------------------------------------------


def test_histories_are_four_lists_of_python_floats(training):
    check_history_shape(answered(training, ("behaviour", "two epochs"), 2)[1]["history"], 2, training)


def test_histories_hold_a_mean_loss_and_a_share_for_any_sizes(training):
    histories(training, "behaviour", "two epochs", 2)   # histories of the contract's kind, as in every check
    for case in training.cases("any_sizes"):   # drawn sizes, and a last batch of one image
        n_train, batch, epochs, _seed = case.args
        history = answered(training, case, epochs)[1]
        check_history_shape(history, epochs, training)
        for name, h in zip(HISTORY_NAMES, as_floats(history)):
            samples = n_train if name.endswith("train") else max(1, n_train // 2)
            for i, v in enumerate(h):
                assert math.isfinite(v), say("a history entry is not a finite number\n  {name}[{index}] is {value}",
                                             name=name, index=i, value=v)
                if name.startswith("accuracy") and not 0.0 <= v <= 1.0:
                    fail_if(averaging_problem(training))   # the averaging, as the measured epochs show it
                    fail_if(_(lessons.ACCURACY_NOT_A_SHARE) + "\n" + say(
                        lessons.ACCURACY_OUT_OF_RANGE, name=f"{name}[{i}]", got=v, samples=samples, batch=batch))
                assert name.startswith("accuracy") or v >= 0.0, say(
                    "a binary cross-entropy is never negative\n  {name}[{index}] = {value}", name=name, index=i,
                    value=v)


def averaging_problem(training) -> str | None:
    """Where the three measured epochs' entries are not the per-sample means of the batches the model saw (what
    test_training_follows_the_books_algorithm_exactly says of them), or None."""
    _seed, found, got = histories(training, "measured", "three epochs", 3)
    return measured_wrong(Log.of(found["log"]), got, 3)


def test_loss_and_accuracy_are_means_over_samples(training):
    # The first epoch's four entries are the book's. Where they are not, the averaging is checked
    # first, against the batches the model saw and the losses the loop backpropagated; if that is
    # right, the training itself differs, and the message is the training check's.
    seed, found, got = histories(training, "measured", "one epoch", 1)
    _want_model, want = replay(epochs=1, seed=seed)
    if close(got, want):
        return fail_if(declared_problem(training))
    log = Log.of(found["log"])
    fail_if(measured_wrong(log, got, 1) or training_problem(log)
            or say(lessons.TRAINING_DIFFERS, got=got, want=[list(h) for h in want]))


def test_training_follows_the_books_algorithm_exactly(training):
    seed, found, got = histories(training, "measured", "three epochs", 3)
    want_model, want = replay(epochs=3, seed=seed)
    weights_match = same_weights(found["after"], want_model)
    if weights_match and close(got, want):
        return fail_if(declared_problem(training))
    log = Log.of(found["log"])
    if not weights_match:
        fail_if(training_problem(log) or say(lessons.TRAINING_DIFFERS, got=got, want=[list(h) for h in want]))
    fail_if(measured_wrong(log, got, 3) or say(lessons.HISTORIES_DIFFER, got=got, want=[list(h) for h in want]))


def test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad(training):
    calls = histories(training, "behaviour", "two epochs", 2)[1]["log"]["calls"]
    phases = {phase for phase, *_rest in calls}
    if "valid" not in phases:
        fail_if(_(lessons.NO_VALIDATION))
    assert phases == {"train", "valid"}, say(
        "train must run the model on every training batch and every validation batch\n"
        "  the model ran on the {phases} batches only", phases=sorted(map(str, phases)))
    for phase, is_training, grad, _moved in calls:
        if phase == "train":
            assert is_training, _(
                "a training batch ran with the model in eval() mode: call model.train() at the start of every "
                "epoch (validation put the model in eval mode, and it stays there until told otherwise)")
            assert grad, _("a training batch ran without gradients; backward() needs them")
        else:
            assert not is_training, _(VALIDATION_IN_EVAL_MODE) + "\n" + _(TRAIN_VALIDATED_IN_TRAIN_MODE)
            assert not grad, _(VALIDATION_WITHOUT_GRADIENTS) + "\n" + _(TRAIN_VALIDATED_WITH_GRADIENTS)


@pytest.mark.parametrize("device", [None, "cpu"], ids=["device=None", "device=cpu"])
def test_every_batch_is_moved_to_the_device(training, device):
    found = histories(training, "behaviour", f"device={device}", 1, device and torch.device(device))[1]
    for phase, _training, _grad, moved in found["log"]["calls"]:
        if not moved:
            fail_if(say(PHASE_BATCH_NOT_MOVED, cause=_(lessons.BATCH_NOT_MOVED), phase=_(PHASES[phase]), device=device))


def test_the_model_is_moved_to_the_given_device_in_place(training):
    # The model lives elsewhere than the device given: on PyTorch's meta device (shapes, no data), so
    # that a loop which moves it only where needed moves it too. A spy stops the run at the move
    # (a meta tensor has no values to copy): that it was asked for is all this check needs.
    histories(training, "behaviour", "device=None", 1)   # histories of the contract's kind, as in every check
    if not answered(training, ("behaviour", "from meta"), 1, torch.device("cpu"))[1]["moved"]:
        fail_if(_(MODEL_NOT_MOVED_FIRST) + "\n" + _(
            "  train(..., device=torch.device('cpu')) never moved a model that was on the meta device (PyTorch's "
            "device of shapes without data, standing for a device that is not the CPU)"))


def test_the_callers_model_is_the_one_trained(training):
    seed, found, _got = histories(training, "behaviour", "device=cpu", 1, torch.device("cpu"))
    if all(torch.equal(p, q) for p, q in zip(setup(seed=seed)[0].parameters(), found["after"])):
        fail_if(training_problem(Log.of(found["log"])) or _(
            "after train() the caller's model is unchanged: train the model object you were given (no "
            "copy.deepcopy, and `model.to(device)` moves it in place) and call optimizer.step()"))


def test_last_validation_entry_equals_evaluate_of_the_final_model(training):
    seed, found, history = histories(training, "measured", "last validation", 2)
    log = Log.of(found["log"])
    problem = training_problem(log)
    if problem in (lessons.ANOTHER_MODEL, _(lessons.ANOTHER_MODEL)):    # the validation scores of a copy
        fail_if(problem)
    if not log.forwards("valid"):
        fail_if(_(lessons.NO_VALIDATION))
    want = book_measures(seed, found["after"])
    evaluated = answered(training, ("measured", "last validation, then evaluate"))[1]   # evaluate of the final model
    result = evaluated["result"]
    fail_if(traced(training, value_problem(dict(zip((_(EVALUATE_LOSS), _(EVALUATE_ACCURACY)), result)))))
    got_loss, got_acc = result
    m = measures(Log.of(evaluated["log"]), "valid", N_VALID)
    fail_if(means_problem(m, _(EVALUATE_LOSS), got_loss, "loss") or means_problem(m, _(EVALUATE_ACCURACY), got_acc,
                                                                                   "accuracy"))
    if (got_loss, got_acc) != (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=(got_loss, got_acc), want=want))
    assert (history[1][-1], history[3][-1]) == (pytest.approx(got_loss, rel=1e-5), pytest.approx(got_acc)), say(
        "validate after the epoch's training, on valid_dl, with the model as it is then\n"
        "  the last epoch reports validation loss {loss:.6f} and accuracy {accuracy:.4f}, but "
        "evaluate(model, valid_dl) of the final model gives {got_loss:.6f} and {got_acc:.4f}", loss=history[1][-1],
        accuracy=history[3][-1], got_loss=got_loss, got_acc=got_acc)


def test_on_epoch_is_called_once_per_epoch_with_the_history_so_far(training):
    _seed, found, history = histories(training, "behaviour", "on_epoch", 3)
    calls = found["calls"]
    assert [epoch for epoch, _seen in calls] == [0, 1, 2], say(
        "on_epoch is called once after each epoch, with the 0-based epoch number: 0, 1, 2 for three epochs\n"
        "  it was called with epochs {epochs}", epochs=[e for e, _seen in calls])
    for epoch, seen in calls:
        assert [len(h) for h in seen] == [epoch + 1] * 4, say(
            "on_epoch gets the four lists so far, after the epoch's validation (epoch + 1 entries each)\n"
            "  at epoch {epoch}, on_epoch saw histories of lengths {lengths}", epoch=epoch,
            lengths=[len(h) for h in seen])
        assert as_floats(seen) == [h[:epoch + 1] for h in history], say(
            "on_epoch must see the same values train returns\n  at epoch {epoch}, it saw {seen}", epoch=epoch,
            seen=seen)


def test_evaluate_returns_the_books_measures_as_floats_without_training(training):
    seed, found = answered(training, ("measured", "evaluate"))
    result, log = found["result"], Log.of(found["log"])
    assert isinstance(result, tuple) and len(result) == 2, say(
        "evaluate returns a tuple (loss, accuracy)\n  it returned {result}", result=describe(result))
    fail_if(traced(training, value_problem(dict(zip((_(EVALUATE_LOSS), _(EVALUATE_ACCURACY)), result)))))
    m = measures(log, "valid", N_VALID)
    fail_if(means_problem(m, _(EVALUATE_LOSS), result[0], "loss")
            or means_problem(m, _(EVALUATE_ACCURACY), result[1], "accuracy"))
    want = book_measures(seed, found["after"])
    if result != (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=result, want=want))
    assert all(torch.equal(p, q) for p, q in zip(setup(seed=seed)[0].parameters(), found["after"])), _(
        "evaluate changed the weights: it only measures (no optimizer, no backward)")
    assert log.calls, _("evaluate must run the model on the batches of dl")
    for _phase, training_, grad, moved in log.calls:
        if not moved:
            fail_if(_(lessons.BATCH_NOT_MOVED) + "\n" + _("  a batch of evaluate(model, dl)"))
        assert not training_, _(VALIDATION_IN_EVAL_MODE) + "\n" + _(EVALUATED_IN_TRAIN_MODE)
        assert not grad, _(VALIDATION_WITHOUT_GRADIENTS) + "\n" + _(EVALUATED_WITH_GRADIENTS)


def test_a_probability_of_one_half_counts_as_a_smile(training):
    # A model that says exactly 0.5 for every image (and never learns): the book's `pred >= 0.5`
    # predicts 1 for each, so the accuracy is the share of labels that are 1.
    seed, found, history = histories(training, "measured", "one half", 1)
    evaluated = answered(training, ("measured", "one half, then evaluate"))[1]
    result = [float(v) for v in evaluated["result"]]
    ones = {"train": tiny_data(N_TRAIN, seed + 1)[1].float().mean().item(),
            "valid": tiny_data(N_VALID, seed + 2)[1].float().mean().item()}
    for who, got, phase in ((N_("train's accuracy_hist_train[0]"), history[2][0], "train"),
                            (N_("train's accuracy_hist_valid[0]"), history[3][0], "valid"),
                            ("evaluate(model, valid_dl)", result[1], "valid")):
        if got == pytest.approx(ones[phase]):
            continue
        if got == pytest.approx(1 - ones[phase]):    # every 0.5 taken for a 0
            fail_if(say(lessons.ACCURACY_AT_ONE_HALF, who=_(who), got=f"{got:.4f}", share=f"{ones[phase]:.4f}"))
        if who.startswith("train"):   # another cause: said as the other checks say it
            fail_if(measured_wrong(Log.of(found["log"]), history, 1))
        else:
            fail_if(means_problem(measures(Log.of(evaluated["log"]), "valid", N_VALID), _(EVALUATE_ACCURACY), got,
                                  "accuracy"))
        fail_if(say(lessons.ACCURACY_AT_ONE_HALF, who=_(who), got=f"{got:.4f}", share=f"{ones[phase]:.4f}"))


def test_trains_the_books_cnn_on_a_real_dataloader(training):
    history = answered(training, training.cases("on_celeba")[0], 1)[1]   # on the records' CelebA
    check_history_shape(history, 1, training)
    as_floats(history)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
def test_training_on_the_accelerator_keeps_float_histories(training, accelerator):
    check_history_shape(answered(training, ("on_accelerator", "two epochs"), 2, accelerator)[1]["history"], 2,
                        training)


@pytest.mark.cuda
def test_training_on_the_accelerator_moves_the_model_and_every_batch(training, accelerator):
    found = answered(training, ("on_accelerator", "one epoch"), 1, accelerator)[1]
    devices = set(found["devices"])
    if devices != {accelerator.type}:
        call = f"train(model, ..., device={accelerator})"
        fail_if(_(MODEL_NOT_MOVED_FIRST) + "\n" + say(MODEL_NOT_MOVED, before="cpu", after=", ".join(sorted(devices)),
                                                      call=call))
    for phase, _training, _grad, moved in found["log"]["calls"]:
        if not moved:
            fail_if(say(PHASE_BATCH_NOT_MOVED, cause=_(lessons.BATCH_NOT_MOVED), phase=_(PHASES[phase]),
                        device=accelerator))


@pytest.mark.cuda
def test_training_on_the_accelerator_gives_the_cpus_numbers(training, accelerator):
    seed, found = answered(training, ("measured_on_accelerator", "two epochs"), 2, accelerator)
    check_history_lists(found["device"]["history"], 2)
    got = as_floats(found["device"]["history"])
    want_model, want = replay(epochs=2, seed=seed)
    if close(got, [list(h) for h in want]) and same_weights(found["device"]["after"], want_model, atol=1e-5):
        return fail_if(declared_problem(training))
    # What is wrong on the CPU too is said as the CPU's checks say it: the device is not the cause.
    fail_if(training_problem(Log.of(found["device"]["log"])))
    check_history_shape(found["cpu"]["history"], 2, training)
    on_cpu, cpu_log = as_floats(found["cpu"]["history"]), Log.of(found["cpu"]["log"])
    if not (close(on_cpu, want) and same_weights(found["cpu"]["after"], want_model)):
        fail_if(training_problem(cpu_log) or measured_wrong(cpu_log, on_cpu, 2)
                or say(lessons.TRAINING_DIFFERS, got=on_cpu, want=[list(h) for h in want]))
    for name, got_h, want_h in zip(HISTORY_NAMES, got, want):
        assert got_h == pytest.approx(want_h, rel=1e-4, abs=1e-6), say(
            "the same code gives other numbers on the accelerator than on the CPU: the device changes where the "
            "numbers are computed, not what they are, so something in the loop depends on the device\n"
            "  {name} on {accelerator} is {got}; on the CPU your train gives {on_cpu}", name=name,
            accelerator=accelerator, got=got_h, on_cpu=on_cpu[HISTORY_NAMES.index(name)])
    pytest.fail(_("the same code trains other weights on the accelerator than on the CPU: the device changes where "
                  "the numbers are computed, not what they are, so something in the loop depends on the device"),
                pytrace=False)


@pytest.mark.cuda
def test_device_none_trains_where_the_model_already_is(training, accelerator):
    devices = set(histories(training, "on_accelerator", "device=None", 1)[1]["devices"])
    if devices != {accelerator.type}:
        fail_if(_(DEVICE_NONE) + "\n" + say("  a model on {accelerator} ended up on {devices}",
                                             accelerator=accelerator, devices=", ".join(sorted(devices))))


@pytest.mark.cuda
def test_evaluate_on_the_accelerator_returns_floats(training, accelerator):
    seed, found = answered(training, ("measured_on_accelerator", "evaluate"), device=accelerator)
    result = found["device"]["result"]
    fail_if(traced(training, value_problem({_(EVALUATE_LOSS): result[0], _(EVALUATE_ACCURACY): result[1]})))
    m = measures(Log.of(found["device"]["log"]), "valid", N_VALID)
    fail_if(means_problem(m, _(EVALUATE_LOSS), result[0], "loss")
            or means_problem(m, _(EVALUATE_ACCURACY), result[1], "accuracy"))
    want = book_measures(seed)
    if result == (pytest.approx(want[0], rel=1e-4), pytest.approx(want[1])):
        return
    # What is wrong on the CPU too is said as the CPU's check says it: the device is not the cause.
    on_cpu = found["cpu"]["result"]
    if tuple(on_cpu) != (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=tuple(on_cpu), want=want))
    pytest.fail(say("the same evaluate gives other numbers on the accelerator than on the CPU: the device changes "
                    "where the numbers are computed, not what they are, so something in evaluate depends on the "
                    "device\n  evaluate on {accelerator} gave {result}, on the CPU {on_cpu}", accelerator=accelerator,
                    result=result, on_cpu=tuple(on_cpu)), pytrace=False)


@pytest.mark.cuda
def test_evaluate_moves_the_model_to_the_given_device(training, accelerator):
    # A model that lives elsewhere than the device given (here the CPU, the device the accelerator):
    # evaluate moves it there first, in place, and measures it there as on the CPU.
    seed, found = answered(training, ("measured_on_accelerator", "evaluate moves"), device=accelerator)
    want = book_measures(seed)
    call = f"evaluate(model, dl, device={accelerator})"
    after, result = set(found["devices"]), found["result"]   # (its error, where it left the model, untold)
    if after != {accelerator.type}:
        fail_if(_(MODEL_NOT_MOVED_FIRST) + "\n" + say(MODEL_NOT_MOVED, call=call, before="cpu",
                                                      after=", ".join(sorted(after))))
    fail_if(traced(training, value_problem({_(EVALUATE_LOSS): result[0], _(EVALUATE_ACCURACY): result[1]})))
    if tuple(result) != (pytest.approx(want[0], rel=1e-4), pytest.approx(want[1])):
        m = measures(Log.of(found["log"]), "valid", N_VALID)
        fail_if(means_problem(m, _(EVALUATE_LOSS), result[0], "loss")
                or means_problem(m, _(EVALUATE_ACCURACY), result[1], "accuracy"))
        fail_if(say(EVALUATE_MEASURES, got=tuple(result), want=want))
