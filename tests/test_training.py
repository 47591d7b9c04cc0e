"""Checks for exercise 4, training: the book's loop, with histories of floats.

Most checks train a tiny deterministic model (Flatten, Linear, Sigmoid: no
dropout, so every run is the same) on tiny tensors, and compare the learner's
`train` with an exact replay of the book's algorithm: BCELoss, Adam(lr=0.001),
per-sample means, accuracy as a share of `pred >= 0.5` that match, validation
in eval mode without gradients. Hooks on the model record how each forward
pass ran (train or eval mode, gradients on or off, batch moved or not) and what
it gave; while train runs, every backward pass, optimizer step and zero_grad is
recorded too. Where the numbers differ from the book's, the message says the
one step that differs (kata.checks.loop: no step, another model's parameters,
another optimizer, learning rate or loss, step before backward, gradients
zeroed before the step or never, a mean over batches), or says in one line that
the check can't tell.

Each kind of wrong history entry has its own reason (kata.checks.messages):
device tensors are the seed's crash, CPU tensors plot but are not floats, a
tensor that requires grad is refused by NumPy, NumPy scalars are not floats.
When the learner's own plotting inside `train` hands a device tensor to
matplotlib (the seed's code does), the check says so, with the line.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import copy
import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DataLoader

from kata.checks import lessons
from kata.checks.book import book_cnn, book_epoch, book_eval_transform, smile_of
from kata.checks.loop import loss_function_problem, means_problem, measures, training_problem
from kata.checks.messages import describe, explained_learner_errors, fail_if, history_entry_problem, value_problem
from kata.harness.target import TargetError
from kata.i18n import N_, _, say
from kata.records.doubles import N_VALID, HalfModel, HostBatch, replay
from kata.records.doubles import tiny_setup as setup
from kata.records.history import HISTORY_NAMES

MOVE_ADVICE = N_("Move every batch with `x_batch = x_batch.to(device)` (Tensor.to returns the moved tensor) and the "
                 "model with model.to(device).")
PLOT_ADVICE = N_("Code in train that plots or converts to NumPy gets the raw sums: make each history entry a Python "
                 "float while training (.item()), and leave the drawing to plotting.py "
                 "(train(..., on_epoch=live.update)).")
MODEL_NOT_MOVED_FIRST = N_("given a device, {function} moves the model there first, in place: Module.to moves the "
                           "caller's model object (its parameters), so model.to(device) is all it takes")
MODEL_NOT_MOVED = N_("given a device, {function} moves the model there first, in place: Module.to moves the "
                     "caller's model object (its parameters), so model.to(device) is all it takes\n"
                     "  after {call}, the model, which was on {before}, is on {after}")
BATCH_NOT_MOVED = N_("a batch reached the model without being moved: `x_batch.to(device)` RETURNS the moved tensor and "
                     "leaves x_batch where it was, so write `x_batch = x_batch.to(device)`")
DEVICE_NONE = N_("device=None means the model's own device (that of its first parameter, "
                 "next(model.parameters()).device): the batches go where the model is, and the model stays there")


def mixed_cause(function: str, device):
    """For PyTorch's error for two devices in one op: the cause, from the learner's frame (a batch
    still as the loader gave it, a model left on the CPU, device=None taken for the CPU), or None."""

    def cause(names: dict) -> str | None:
        if any(type(v) is HostBatch for v in names.values()):
            return _(BATCH_NOT_MOVED)
        models = [m for m in names.values() if isinstance(m, nn.Module) and next(m.parameters(), None) is not None]
        places = {next(m.parameters()).device.type for m in models}
        on_device = any(isinstance(v, torch.Tensor) and v.device.type != "cpu" for v in names.values())
        if device is not None and "cpu" in places and on_device:
            return say(MODEL_NOT_MOVED_FIRST, function=function)
        if device is None and places - {"cpu"}:
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


def call_train(training, model, epochs, train_dl, valid_dl, log=None, **kwargs):
    """training.train(...), with the learner's device and NumPy errors explained (and, given the
    setup's log, every backward pass, step and zero_grad recorded)."""
    __tracebackhide__ = True
    device = kwargs.get("device")
    who = f"train(model, {epochs}, train_dl, valid_dl{f', device={device}' if device is not None else ''})"
    with explained_learner_errors(training, who, _(MOVE_ADVICE), _(PLOT_ADVICE), mixed_cause("train", device)):
        if log is None:
            return training.train(model, epochs, train_dl, valid_dl, **kwargs)
        with log.watching(model):
            return training.train(model, epochs, train_dl, valid_dl, **kwargs)


def call_evaluate(training, model, dl, **kwargs):
    __tracebackhide__ = True
    device = kwargs.get("device")
    who = f"evaluate(model, dl{f', device={device}' if device is not None else ''})"
    with explained_learner_errors(training, who, _(MOVE_ADVICE), _(PLOT_ADVICE), mixed_cause("evaluate", device)):
        return training.evaluate(model, dl, **kwargs)


def run_train(training, model, epochs, train_dl, valid_dl, **kwargs):
    """The four histories, as lists of floats. An entry that is not a Python float fails the check
    with its kind's lesson first (the same first line in every check that meets it, so a run
    shows it once): every check's verdict rests on histories of the contract's kind."""
    __tracebackhide__ = True
    result = call_train(training, model, epochs, train_dl, valid_dl, **kwargs)
    check_history_shape(result, epochs)
    return as_floats(result)


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


def check_history_shape(result, epochs):
    __tracebackhide__ = True
    check_history_lists(result, epochs)
    fail_if(history_entry_problem(result, HISTORY_NAMES))


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


def close(got, want) -> bool:
    return all(g == pytest.approx(w, rel=1e-5, abs=1e-7) for gh, wh in zip(got, want) for g, w in zip(gh, wh))


def same_weights(a, b, atol=1e-6) -> bool:
    return all(torch.allclose(p.detach().cpu(), q.detach().cpu(), atol=atol) for p, q in zip(a.parameters(),
                                                                                             b.parameters()))


def measured_wrong(log, history, epochs, train_dl, valid_dl) -> str | None:
    """The message when an entry of ``history`` is not the per-sample mean of the batches the model
    saw in its epoch (the training loss: of the losses the loop backpropagated), or None."""
    if history[1] and not log.forwards("valid"):
        return _(lessons.NO_VALIDATION)
    problem = loss_function_problem(log)   # then no measure can be told from the model's probabilities
    if problem is not None:
        return problem
    for epoch in range(epochs):
        for index, phase, dl in ((0, "train", train_dl), (2, "train", train_dl), (1, "valid", valid_dl),
                                 (3, "valid", valid_dl)):
            m = measures(log, phase, len(dl.dataset), epoch, len(dl), use_backward=index == 0)
            what = "loss" if index < 2 else "accuracy"
            problem = means_problem(m, f"{HISTORY_NAMES[index]}[{epoch}]", history[index][epoch], what)
            if problem is not None:
                return problem
    return None


# --- the checks ----------------------------------------------------------------


@pytest.mark.audit("types")
def test_histories_are_four_lists_of_python_floats(training):
    model, train_dl, valid_dl, _log = setup()
    check_history_shape(call_train(training, model, 2, train_dl, valid_dl), 2)


@given(n_train=st.integers(1, 12), batch=st.integers(1, 5), epochs=st.integers(1, 3), seed=st.integers(0, 99))
@example(n_train=9, batch=4, epochs=1, seed=0)   # a last batch of one image
@pytest.mark.audit("types", "ranges")
def test_histories_hold_a_mean_loss_and_a_share_for_any_sizes(training, n_train, batch, epochs, seed):
    model, train_dl, valid_dl, _log = setup(n_train=n_train, n_valid=max(1, n_train // 2), batch=batch, seed=seed)
    history = run_train(training, model, epochs, train_dl, valid_dl)
    for name, h in zip(HISTORY_NAMES, history):
        for i, v in enumerate(h):
            assert math.isfinite(v), say("a history entry is not a finite number\n  {name}[{index}] is {value}",
                                         name=name, index=i, value=v)
            if name.startswith("accuracy"):
                samples = n_train if name.endswith("train") else max(1, n_train // 2)
                if not 0.0 <= v <= 1.0:
                    entry = f"{name}[{i}]"
                    fail_if(_(lessons.ACCURACY_NOT_A_SHARE) + "\n"
                            + say(lessons.ACCURACY_OUT_OF_RANGE, name=entry, got=v, samples=samples, batch=batch))
            else:
                assert v >= 0.0, say("a binary cross-entropy is never negative\n  {name}[{index}] = {value}",
                                     name=name, index=i, value=v)


@pytest.mark.audit("first_epoch", "optimizer", "loss")
def test_loss_and_accuracy_are_means_over_samples(training):
    # The first epoch's four entries are the book's. Where they are not, the averaging is checked
    # first, against the batches the model saw and the losses the loop backpropagated; if that is
    # right, the training itself differs, and the message is the training check's.
    model, train_dl, valid_dl, log = setup()
    got = run_train(training, model, 1, train_dl, valid_dl, log=log)
    _want_model, want = replay(epochs=1)
    if close(got, want):
        return
    fail_if(measured_wrong(log, got, 1, train_dl, valid_dl) or training_problem(log)
            or say(lessons.TRAINING_DIFFERS, got=got, want=[list(h) for h in want]))


@pytest.mark.audit("numbers", "weights", "optimizer", "loss")
def test_training_follows_the_books_algorithm_exactly(training):
    model, train_dl, valid_dl, log = setup()
    got = run_train(training, model, 3, train_dl, valid_dl, log=log)
    want_model, want = replay(epochs=3)
    weights_match = same_weights(model, want_model)
    if weights_match and close(got, want):
        return
    if not weights_match:
        fail_if(training_problem(log) or say(lessons.TRAINING_DIFFERS, got=got, want=[list(h) for h in want]))
    fail_if(measured_wrong(log, got, 3, train_dl, valid_dl)
            or say(lessons.HISTORIES_DIFFER, got=got, want=[list(h) for h in want]))


@pytest.mark.audit("types", observed=N_("which mode each forward pass ran in, and whether with gradients"))
def test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad(training):
    model, train_dl, valid_dl, log = setup()
    run_train(training, model, 2, train_dl, valid_dl)
    phases = {phase for phase, *_rest in log.calls}
    if "valid" not in phases:
        fail_if(_(lessons.NO_VALIDATION))
    assert phases == {"train", "valid"}, say(
        "train must run the model on every training batch and every validation batch\n"
        "  the model ran on the {phases} batches only", phases=sorted(map(str, phases)))
    for phase, is_training, grad, _moved in log.calls:
        if phase == "train":
            assert is_training, _(
                "a training batch ran with the model in eval() mode: call model.train() at the start of every "
                "epoch (validation put the model in eval mode, and it stays there until told otherwise)")
            assert grad, _("a training batch ran without gradients; backward() needs them")
        else:
            assert not is_training, _(
                "a validation batch ran in train() mode: call model.eval() before validating, or Dropout "
                "keeps dropping units and the score is noisy")
            assert not grad, _(
                "a validation batch ran with gradients enabled: wrap validation in `with torch.no_grad():` "
                "(or torch.inference_mode()), so no autograd graph is built for nothing")


@pytest.mark.parametrize("device", [None, "cpu"], ids=["device=None", "device=cpu"])
@pytest.mark.audit("types", observed=N_("whether each batch was moved before it reached the model"))
def test_every_batch_is_moved_to_the_device(training, device):
    model, train_dl, valid_dl, log = setup()
    run_train(training, model, 1, train_dl, valid_dl, device=device and torch.device(device))
    for phase, _training, _grad, moved in log.calls:
        if not moved:
            fail_if(say(PHASE_BATCH_NOT_MOVED, cause=_(BATCH_NOT_MOVED), phase=_(PHASES[phase]), device=device))


class Moved(Exception):
    """Raised by a spy on the model's .to: the move was asked for, and the check has seen enough."""


@pytest.mark.audit("types", observed=N_("whether train called model.to(device)"))
def test_the_model_is_moved_to_the_given_device_in_place(training):
    # The model lives elsewhere than the device given: on PyTorch's meta device (shapes, no data), so
    # that a loop which moves it only where needed moves it too. The spy stops the run at the move
    # (a meta tensor has no values to copy): that it was asked for is all this check needs.
    first, first_train, first_valid, _first_log = setup()
    run_train(training, first, 1, first_train, first_valid)   # histories of the contract's kind, as in every check
    model, train_dl, valid_dl, _log = setup()
    model.to("meta")
    moves = []

    def spy(*args, **kwargs):
        moves.append(args or kwargs)
        raise Moved

    for method in ("to", "cpu"):
        setattr(model, method, spy)
    try:
        training.train(model, 1, train_dl, valid_dl, device=torch.device("cpu"))
    except Moved:
        pass
    except (NotImplementedError, TargetError):   # the stub, or a module that can't be loaded: said as such
        raise
    except Exception:   # noqa: BLE001 - the run failed before any move: the check says so
        pass
    if not moves:
        fail_if(say(MODEL_NOT_MOVED_FIRST, function="train") + "\n" + _(
            "  train(..., device=torch.device('cpu')) never moved a model that was on the meta device (PyTorch's "
            "device of shapes without data, standing for a device that is not the CPU)"))


@pytest.mark.audit("trained")
def test_the_callers_model_is_the_one_trained(training):
    model, train_dl, valid_dl, log = setup()
    before = copy.deepcopy(model.state_dict())
    run_train(training, model, 1, train_dl, valid_dl, log=log, device=torch.device("cpu"))
    changed = [k for k in before if not torch.equal(before[k], model.state_dict()[k])]
    if not changed:
        fail_if(training_problem(log) or _(
            "after train() the caller's model is unchanged: train the model object you were given (no "
            "copy.deepcopy, and `model.to(device)` moves it in place) and call optimizer.step()"))


@pytest.mark.audit("last_validation", "evaluate")
def test_last_validation_entry_equals_evaluate_of_the_final_model(training):
    model, train_dl, valid_dl, log = setup()
    history = run_train(training, model, 2, train_dl, valid_dl, log=log)
    problem = training_problem(log)
    if problem in (lessons.ANOTHER_MODEL, _(lessons.ANOTHER_MODEL)):    # the validation scores of a copy
        fail_if(problem)
    if not log.forwards("valid"):
        fail_if(_(lessons.NO_VALIDATION))
    model.eval()
    with torch.no_grad():
        want = book_epoch(model, valid_dl)
    log.events.clear()
    result = call_evaluate(training, model, valid_dl)
    fail_if(value_problem(dict(zip((_(EVALUATE_LOSS), _(EVALUATE_ACCURACY)), result))))
    got_loss, got_acc = result
    fail_if(means_problem(measures(log, "valid", N_VALID), _(EVALUATE_LOSS), got_loss, "loss")
            or means_problem(measures(log, "valid", N_VALID), _(EVALUATE_ACCURACY), got_acc, "accuracy"))
    if (got_loss, got_acc) != (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=(got_loss, got_acc), want=want))
    assert (history[1][-1], history[3][-1]) == (pytest.approx(got_loss, rel=1e-5), pytest.approx(got_acc)), say(
        "validate after the epoch's training, on valid_dl, with the model as it is then\n"
        "  the last epoch reports validation loss {loss:.6f} and accuracy {accuracy:.4f}, but "
        "evaluate(model, valid_dl) of the final model gives {got_loss:.6f} and {got_acc:.4f}", loss=history[1][-1],
        accuracy=history[3][-1], got_loss=got_loss, got_acc=got_acc)


@pytest.mark.audit("on_epoch")
def test_on_epoch_is_called_once_per_epoch_with_the_history_so_far(training):
    model, train_dl, valid_dl, _log = setup()
    calls = []
    history = run_train(training, model, 3, train_dl, valid_dl,
                        on_epoch=lambda epoch, h: calls.append((epoch, [list(x) for x in h])))
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


@pytest.mark.audit("evaluate", observed=N_("evaluate's mode, gradients and batch moves"))
def test_evaluate_returns_the_books_measures_as_floats_without_training(training):
    model, _train_dl, valid_dl, log = setup()
    before = copy.deepcopy(model.state_dict())
    result = call_evaluate(training, model, valid_dl)
    assert isinstance(result, tuple) and len(result) == 2, say(
        "evaluate returns a tuple (loss, accuracy)\n  it returned {result}", result=describe(result))
    problem = value_problem(dict(zip((_(EVALUATE_LOSS), _(EVALUATE_ACCURACY)), result)))
    fail_if(problem)
    m = measures(log, "valid", N_VALID)
    problem = (means_problem(m, _(EVALUATE_LOSS), result[0], "loss")
               or means_problem(m, _(EVALUATE_ACCURACY), result[1], "accuracy"))
    fail_if(problem)
    model.eval()
    with torch.no_grad():
        want = book_epoch(model, valid_dl)
    if result != (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=result, want=want))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), _(
        "evaluate changed the weights: it only measures (no optimizer, no backward)")
    assert log.calls, _("evaluate must run the model on the batches of dl")
    for _phase, training_, grad, moved in log.calls:
        if not moved:
            fail_if(_(BATCH_NOT_MOVED) + "\n" + _("  a batch of evaluate(model, dl)"))
        assert not training_, _(
            "evaluate must run the model in eval() mode (model.eval()), or Dropout keeps dropping units and the "
            "score is noisy")
        assert not grad, _(
            "evaluate must run the model without gradients (`with torch.no_grad():`, or torch.inference_mode()), "
            "so no autograd graph is built for nothing")


@pytest.mark.audit("half")
def test_a_probability_of_one_half_counts_as_a_smile(training):
    # A model that says exactly 0.5 for every image (and never learns): the book's `pred >= 0.5`
    # predicts 1 for each, so the accuracy is the share of labels that are 1.
    model, train_dl, valid_dl, log = setup(model=HalfModel())
    history = run_train(training, model, 1, train_dl, valid_dl, log=log)
    train_log = list(log.events)
    log.events.clear()
    result = [float(v) for v in call_evaluate(training, model, valid_dl)]
    ones = {"train": train_dl.y.float().mean().item(), "valid": valid_dl.y.float().mean().item()}
    for who, got, phase in ((N_("train's accuracy_hist_train[0]"), history[2][0], "train"),
                            (N_("train's accuracy_hist_valid[0]"), history[3][0], "valid"),
                            ("evaluate(model, valid_dl)", result[1], "valid")):
        if got == pytest.approx(ones[phase]):
            continue
        if got == pytest.approx(1 - ones[phase]):    # every 0.5 taken for a 0
            fail_if(say(lessons.ACCURACY_AT_ONE_HALF, who=_(who), got=f"{got:.4f}", share=f"{ones[phase]:.4f}"))
        if who.startswith("train"):   # another cause: said as the other checks say it
            log.events[:] = train_log
            fail_if(measured_wrong(log, history, 1, train_dl, valid_dl))
        else:
            fail_if(means_problem(measures(log, "valid", N_VALID), _(EVALUATE_ACCURACY), got, "accuracy"))
        fail_if(say(lessons.ACCURACY_AT_ONE_HALF, who=_(who), got=f"{got:.4f}", share=f"{ones[phase]:.4f}"))


@pytest.mark.audit("types")
def test_trains_the_books_cnn_on_a_real_dataloader(training, celeba_root):
    from kata.celeba import CelebA

    ds = CelebA(celeba_root, split="train", target_type="attr", transform=book_eval_transform(),
                target_transform=smile_of)
    torch.manual_seed(1)
    net = book_cnn()
    train_dl = DataLoader(ds, batch_size=16, shuffle=True)
    valid_dl = DataLoader(ds, batch_size=16)
    run_train(training, net, 1, train_dl, valid_dl)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


def train_on(training, accelerator, epochs=2, **kwargs):
    """train() the tiny setup on the accelerator, explaining PyTorch's device errors."""
    model, train_dl, valid_dl, log = setup()
    history = call_train(training, model, epochs, train_dl, valid_dl, log=log, **{"device": accelerator, **kwargs})
    return model, history, log


@pytest.mark.cuda
@pytest.mark.audit("device.types")
def test_training_on_the_accelerator_keeps_float_histories(training, accelerator):
    _model, history, _log = train_on(training, accelerator)
    check_history_shape(history, 2)


@pytest.mark.cuda
@pytest.mark.audit("device.moved", observed=N_("whether each batch was moved to the accelerator"))
def test_training_on_the_accelerator_moves_the_model_and_every_batch(training, accelerator):
    model, _history, log = train_on(training, accelerator, epochs=1)
    devices = {p.device.type for p in model.parameters()}
    if devices != {accelerator.type}:
        call = f"train(model, ..., device={accelerator})"
        fail_if(say(MODEL_NOT_MOVED, function="train", before="cpu", after=", ".join(sorted(devices)), call=call))
    for phase, _training, _grad, moved in log.calls:
        if not moved:
            fail_if(say(PHASE_BATCH_NOT_MOVED, cause=_(BATCH_NOT_MOVED), phase=_(PHASES[phase]), device=accelerator))


@pytest.mark.cuda
@pytest.mark.audit("device.numbers", "device.optimizer", "device.loss")
def test_training_on_the_accelerator_gives_the_cpus_numbers(training, accelerator):
    model, history, log = train_on(training, accelerator)
    check_history_lists(history, 2)
    got = as_floats(history)
    want_model, want = replay(epochs=2)
    if close(got, [list(h) for h in want]) and same_weights(model, want_model, atol=1e-5):
        return
    # What is wrong on the CPU too is said as the CPU's checks say it: the device is not the cause.
    problem = training_problem(log)
    fail_if(problem)
    cpu_model, train_dl, valid_dl, cpu_log = setup()
    on_cpu = run_train(training, cpu_model, 2, train_dl, valid_dl, log=cpu_log)
    if not (close(on_cpu, want) and same_weights(cpu_model, want_model)):
        fail_if(training_problem(cpu_log) or measured_wrong(cpu_log, on_cpu, 2, train_dl, valid_dl)
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
@pytest.mark.audit("device_none")
def test_device_none_trains_where_the_model_already_is(training, accelerator):
    model, train_dl, valid_dl, log = setup()
    model.to(accelerator)
    run_train(training, model, 1, train_dl, valid_dl)
    devices = {p.device.type for p in model.parameters()}
    if devices != {accelerator.type}:
        fail_if(_(DEVICE_NONE) + "\n" + say("  a model on {accelerator} ended up on {devices}",
                                             accelerator=accelerator, devices=", ".join(sorted(devices))))


@pytest.mark.cuda
@pytest.mark.audit("evaluate.accelerator")
def test_evaluate_on_the_accelerator_returns_floats(training, accelerator):
    model, _train_dl, valid_dl, log = setup()
    model.to(accelerator)
    result = call_evaluate(training, model, valid_dl, device=accelerator)
    problem = value_problem({_(EVALUATE_LOSS): result[0], _(EVALUATE_ACCURACY): result[1]})
    fail_if(problem)
    m = measures(log, "valid", N_VALID)
    problem = means_problem(m, _(EVALUATE_LOSS), result[0], "loss") or means_problem(
        m, _(EVALUATE_ACCURACY), result[1], "accuracy")
    fail_if(problem)
    cpu_model, _cpu_train_dl, cpu_dl, _cpu_log = setup()
    cpu_model.eval()
    with torch.no_grad():
        want = book_epoch(cpu_model, cpu_dl)
    if result == (pytest.approx(want[0], rel=1e-4), pytest.approx(want[1])):
        return
    # What is wrong on the CPU too is said as the CPU's check says it: the device is not the cause.
    on_cpu = call_evaluate(training, cpu_model, cpu_dl)
    if tuple(on_cpu) != (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=tuple(on_cpu), want=want))
    pytest.fail(say("the same evaluate gives other numbers on the accelerator than on the CPU: the device changes "
                    "where the numbers are computed, not what they are, so something in evaluate depends on the "
                    "device\n  evaluate on {accelerator} gave {result}, on the CPU {on_cpu}", accelerator=accelerator,
                    result=result, on_cpu=tuple(on_cpu)), pytrace=False)


@pytest.mark.cuda
@pytest.mark.audit("evaluate.device")
def test_evaluate_moves_the_model_to_the_given_device(training, accelerator):
    # A model that lives elsewhere than the device given (here the CPU, the device the accelerator):
    # evaluate moves it there first, in place, and measures it there as on the CPU.
    model, _train_dl, valid_dl, _log = setup()
    cpu_model, _cpu_train_dl, cpu_dl, _cpu_log = setup()
    cpu_model.eval()
    with torch.no_grad():
        want = book_epoch(cpu_model, cpu_dl)
    call = f"evaluate(model, dl, device={accelerator})"
    try:
        result = call_evaluate(training, model, valid_dl, device=accelerator)
    except pytest.fail.Exception:
        result = None
    after = {p.device.type for p in model.parameters()}
    if after != {accelerator.type}:
        fail_if(say(MODEL_NOT_MOVED, function="evaluate", call=call, before="cpu", after=", ".join(sorted(after))))
    if result is None:
        call_evaluate(training, model, valid_dl, device=accelerator)   # the error again, explained
    fail_if(value_problem({_(EVALUATE_LOSS): result[0], _(EVALUATE_ACCURACY): result[1]}))
    if tuple(result) != (pytest.approx(want[0], rel=1e-4), pytest.approx(want[1])):
        fail_if(say(EVALUATE_MEASURES, got=tuple(result), want=want))
