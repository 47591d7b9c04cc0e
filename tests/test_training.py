"""Checks for exercise 4, training: the book's loop, with histories of floats.

Most checks train a tiny deterministic model (Flatten, Linear, Sigmoid: no
dropout, so every run is the same) on tiny tensors, and compare the learner's
`train` with an exact replay of the book's algorithm: BCELoss, Adam(lr=0.001),
per-sample means, accuracy as a share of `pred >= 0.5` that match, validation
in eval mode without gradients. Hooks on the model record how each forward
pass ran (train or eval mode, gradients on or off, batch moved or not).

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
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DataLoader

from kata.checks.book import book_cnn, book_epoch, book_eval_transform, smile_of
from kata.checks.doubles import BATCH, N_TRAIN, replay, tiny_model
from kata.checks.doubles import tiny_setup as setup
from kata.checks.history import HISTORY_NAMES
from kata.checks.messages import describe, explained_learner_errors, history_entry_problem, value_problem

MOVE_ADVICE = ("every batch must be moved with `x_batch = x_batch.to(device)` (Tensor.to returns the moved tensor), "
               "and the model with model.to(device)")
PLOT_ADVICE = ("Code in train that plots or converts to NumPy gets the raw sums: make each history entry a Python "
               "float while training (.item()), and leave the drawing to plotting.py "
               "(train(..., on_epoch=live.update)).")


def call_train(training, model, epochs, train_dl, valid_dl, **kwargs):
    """training.train(...), with the learner's device and NumPy errors explained."""
    __tracebackhide__ = True
    device = kwargs.get("device")
    who = f"train(model, {epochs}, train_dl, valid_dl{f', device={device}' if device is not None else ''})"
    with explained_learner_errors(training, who, MOVE_ADVICE, PLOT_ADVICE):
        return training.train(model, epochs, train_dl, valid_dl, **kwargs)


def call_evaluate(training, model, dl, **kwargs):
    __tracebackhide__ = True
    device = kwargs.get("device")
    who = f"evaluate(model, dl{f', device={device}' if device is not None else ''})"
    with explained_learner_errors(training, who, MOVE_ADVICE, PLOT_ADVICE):
        return training.evaluate(model, dl, **kwargs)


def run_train(training, model, epochs, train_dl, valid_dl, **kwargs):
    result = call_train(training, model, epochs, train_dl, valid_dl, **kwargs)
    check_history_shape(result, epochs)
    return [list(h) for h in result]


# --- what a history must be ----------------------------------------------------


def check_history_shape(result, epochs):
    __tracebackhide__ = True
    check_history_lists(result, epochs)
    problem = history_entry_problem(result, HISTORY_NAMES)
    assert problem is None, problem


def check_history_lists(result, epochs):
    __tracebackhide__ = True
    assert isinstance(result, (tuple, list)) and len(result) == 4, (
        "train() must return the four histories (loss_hist_train, loss_hist_valid, accuracy_hist_train, "
        f"accuracy_hist_valid)\n  it returned {describe(result)}")
    for name, h in zip(HISTORY_NAMES, result):
        assert isinstance(h, list), f"each history is a list, one entry per epoch\n  {name} is {describe(h)}"
        assert len(h) == epochs, (
            f"each history has one entry per epoch\n  {name} has {len(h)} entries after {epochs} epochs")


# --- the checks ----------------------------------------------------------------


@pytest.mark.audit("types")
def test_histories_are_four_lists_of_python_floats(training):
    model, train_dl, valid_dl, _ = setup()
    run_train(training, model, 2, train_dl, valid_dl)


@given(n_train=st.integers(1, 12), batch=st.integers(1, 5), epochs=st.integers(1, 3), seed=st.integers(0, 99))
@pytest.mark.audit("types", "ranges")
def test_histories_hold_a_mean_loss_and_a_share_for_any_sizes(training, n_train, batch, epochs, seed):
    model, train_dl, valid_dl, _ = setup(n_train=n_train, n_valid=max(1, n_train // 2), batch=batch, seed=seed)
    history = run_train(training, model, epochs, train_dl, valid_dl)
    for name, h in zip(HISTORY_NAMES, history):
        for i, v in enumerate(h):
            assert math.isfinite(v), f"a history entry is not a finite number\n  {name}[{i}] is {v}"
            if name.startswith("accuracy"):
                assert 0.0 <= v <= 1.0, (
                    "accuracy is the SHARE of correct predictions: the count divided by the number of samples "
                    f"(len(dl.dataset)), in [0, 1]\n  {name}[{i}] = {v} with {n_train} samples in batches of {batch}")
            else:
                assert v >= 0.0, f"a binary cross-entropy is never negative\n  {name}[{i}] = {v}"


@pytest.mark.audit("first_epoch")
def test_loss_and_accuracy_are_means_over_samples(training):
    model, train_dl, valid_dl, _ = setup()
    got = run_train(training, model, 1, train_dl, valid_dl)
    _, want = replay(epochs=1)
    assert got[0][0] == pytest.approx(want[0][0], rel=1e-5), (
        "the loss is a mean over samples: add loss.item() * batch size for each batch and divide by "
        f"len(train_dl.dataset), not by the number of batches (with {N_TRAIN} samples in batches of {BATCH}, the "
        f"last batch is smaller)\n  loss_hist_train[0] = {got[0][0]:.6f}, the book's mean over samples is "
        f"{want[0][0]:.6f}")
    for i, name in ((2, "accuracy_hist_train"), (3, "accuracy_hist_valid"), (1, "loss_hist_valid")):
        assert got[i][0] == pytest.approx(want[i][0], rel=1e-5, abs=1e-7), (
            "count the correct predictions (pred >= 0.5 equals the label) and the loss times batch size, over all "
            f"samples, and divide by len(dl.dataset)\n  {name}[0] = {got[i][0]:.6f}, the book's algorithm gives "
            f"{want[i][0]:.6f}")


@pytest.mark.audit("numbers", "weights")
def test_training_follows_the_books_algorithm_exactly(training):
    model, train_dl, valid_dl, _ = setup()
    got = run_train(training, model, 3, train_dl, valid_dl)
    want_model, want = replay(epochs=3)
    weights_match = all(torch.allclose(a, b, atol=1e-6) for a, b in zip(model.parameters(), want_model.parameters()))
    if weights_match and all(g == pytest.approx(w, rel=1e-5, abs=1e-7) for gh, wh in zip(got, want)
                             for g, w in zip(gh, wh)):
        return
    untouched = all(torch.equal(a, b) for a, b in zip(model.parameters(), tiny_model(0).parameters()))
    assert not untouched, (
        "after 3 epochs the caller's model still has its initial weights: either optimizer.step() is never "
        "called, or a copy of the model was trained (train the object you were given; Module.to moves it in "
        "place, so there is nothing to copy)")
    for label, kwargs in (("Adam with lr=0.01", dict(lr=0.01)), ("Adam with lr=0.0001", dict(lr=0.0001)),
                          ("no optimizer.zero_grad(), so gradients pile up", dict(zero_grad=False)),
                          ("nn.MSELoss()", dict(loss_fn=nn.MSELoss()))):
        other_model, _ = replay(epochs=3, **kwargs)
        if all(torch.allclose(a, b, atol=1e-6) for a, b in zip(model.parameters(), other_model.parameters())):
            pytest.fail("the training differs from the book's: it uses nn.BCELoss(), "
                        "torch.optim.Adam(model.parameters(), lr=0.001), and zeroes the gradients after each step\n"
                        f"  the trained weights are what {label} gives", pytrace=False)
    pytest.fail("the histories or the trained weights differ from the book's algorithm: per batch forward, "
                "BCELoss, backward, optimizer.step(), optimizer.zero_grad() with Adam(lr=0.001); then "
                f"validation.\n  yours: {got}\n  book:  {want}", pytrace=False)


@pytest.mark.audit("types", observed="which mode each forward pass ran in, and whether with gradients")
def test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad(training):
    model, train_dl, valid_dl, log = setup()
    run_train(training, model, 2, train_dl, valid_dl)
    phases = {phase for phase, *_ in log.calls}
    assert phases == {"train", "valid"}, (
        "train must run the model on every training batch and every validation batch\n"
        f"  the model ran on the {sorted(map(str, phases))} batches only")
    for phase, is_training, grad, _ in log.calls:
        if phase == "train":
            assert is_training, (
                "a training batch ran with the model in eval() mode: call model.train() at the start of every "
                "epoch (validation put the model in eval mode, and it stays there until told otherwise)")
            assert grad, "a training batch ran without gradients; backward() needs them"
        else:
            assert not is_training, (
                "a validation batch ran in train() mode: call model.eval() before validating, or Dropout "
                "keeps dropping units and the score is noisy")
            assert not grad, (
                "a validation batch ran with gradients enabled: wrap validation in `with torch.no_grad():` "
                "(or torch.inference_mode()), so no autograd graph is built for nothing")


@pytest.mark.parametrize("device", [None, "cpu"], ids=["device=None", "device=cpu"])
@pytest.mark.audit("types", observed="whether each batch was moved before it reached the model")
def test_every_batch_is_moved_to_the_device(training, device):
    model, train_dl, valid_dl, log = setup()
    run_train(training, model, 1, train_dl, valid_dl, device=device and torch.device(device))
    for phase, _, _, moved in log.calls:
        assert moved, (
            "a batch reached the model without being moved: `x_batch.to(device)` RETURNS the moved tensor and "
            "leaves x_batch where it was, so write `x_batch = x_batch.to(device)`"
            f"\n  a {phase} batch, with device={device}"
            + (" (device=None means the model's own device: next(model.parameters()).device)" if device is None
               else ""))


@pytest.mark.audit("types", observed="whether train called model.to(device)")
def test_the_model_is_moved_to_the_given_device_in_place(training):
    model, train_dl, valid_dl, _ = setup()
    moves = []
    original_to = model.to

    def spy(*args, **kwargs):
        moves.append(args or kwargs)
        return original_to(*args, **kwargs)

    model.to = spy
    run_train(training, model, 1, train_dl, valid_dl, device=torch.device("cpu"))
    assert moves, (
        "train(..., device=torch.device('cpu')) never called model.to(device): when a device is given, "
        "move the model there first (Module.to moves its parameters in place, so the caller's model goes too)")


@pytest.mark.audit("trained")
def test_the_callers_model_is_the_one_trained(training):
    model, train_dl, valid_dl, _ = setup()
    before = copy.deepcopy(model.state_dict())
    run_train(training, model, 1, train_dl, valid_dl, device=torch.device("cpu"))
    changed = [k for k in before if not torch.equal(before[k], model.state_dict()[k])]
    assert changed, (
        "after train() the caller's model is unchanged: train the model object you were given (no "
        "copy.deepcopy, and `model.to(device)` moves it in place) and call optimizer.step()")


@pytest.mark.audit("last_validation", "evaluate")
def test_last_validation_entry_equals_evaluate_of_the_final_model(training):
    model, train_dl, valid_dl, _ = setup()
    history = run_train(training, model, 2, train_dl, valid_dl)
    model.eval()
    with torch.no_grad():
        want_loss, want_acc = book_epoch(model, valid_dl)
    got_loss, got_acc = call_evaluate(training, model, valid_dl)
    assert (history[1][-1], history[3][-1]) == (pytest.approx(want_loss, rel=1e-5), pytest.approx(want_acc)), (
        "validate after the epoch's training, on valid_dl, with the model as it is then\n"
        f"  the last epoch reports validation loss {history[1][-1]:.6f} and accuracy {history[3][-1]:.4f}, but the "
        f"final model scores {want_loss:.6f} and {want_acc:.4f} on the validation set")
    assert (got_loss, got_acc) == (pytest.approx(want_loss, rel=1e-5), pytest.approx(want_acc)), (
        "evaluate(model, dl) must give the book's measures: the mean loss over samples and the share correct\n"
        f"  evaluate(model, valid_dl) gave ({got_loss:.6f}, {got_acc:.4f}); the book's measures give "
        f"({want_loss:.6f}, {want_acc:.4f})")


@pytest.mark.audit("on_epoch")
def test_on_epoch_is_called_once_per_epoch_with_the_history_so_far(training):
    model, train_dl, valid_dl, _ = setup()
    calls = []
    history = run_train(training, model, 3, train_dl, valid_dl,
                        on_epoch=lambda epoch, h: calls.append((epoch, [list(x) for x in h])))
    assert [epoch for epoch, _ in calls] == [0, 1, 2], (
        "on_epoch is called once after each epoch, with the 0-based epoch number: 0, 1, 2 for three epochs\n"
        f"  it was called with epochs {[e for e, _ in calls]}")
    for epoch, seen in calls:
        assert [len(h) for h in seen] == [epoch + 1] * 4, (
            "on_epoch gets the four lists so far, after the epoch's validation (epoch + 1 entries each)\n"
            f"  at epoch {epoch}, on_epoch saw histories of lengths {[len(h) for h in seen]}")
        assert seen == [h[:epoch + 1] for h in history], (
            f"on_epoch must see the same values train returns\n  at epoch {epoch}, it saw {seen}")


@pytest.mark.audit("evaluate", observed="evaluate's mode, gradients and batch moves")
def test_evaluate_returns_the_books_measures_as_floats_without_training(training):
    model, _, valid_dl, log = setup()
    before = copy.deepcopy(model.state_dict())
    result = call_evaluate(training, model, valid_dl)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"evaluate returns a tuple (loss, accuracy)\n  it returned {describe(result)}")
    problem = value_problem(dict(zip(("evaluate's loss", "evaluate's accuracy"), result)))
    assert problem is None, problem
    model.eval()
    with torch.no_grad():
        want = book_epoch(model, valid_dl)
    assert result == (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])), (
        "evaluate must give the loss times batch size summed and divided by len(dl.dataset), and the share of "
        f"(pred >= 0.5) == label\n  evaluate gave {result}, the book's measures give {want}")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), (
        "evaluate changed the weights: it only measures (no optimizer, no backward)")
    assert log.calls and all(not training_ and not grad and moved for _, training_, grad, moved in log.calls), (
        "evaluate must run the model in eval() mode under torch.no_grad(), with each batch moved to the device")


@pytest.mark.audit("types")
def test_trains_the_books_cnn_on_a_real_dataloader(training, celeba_root):
    from kata.celeba import CelebA

    ds = CelebA(celeba_root, split="train", target_type="attr", transform=book_eval_transform(),
                target_transform=smile_of)
    torch.manual_seed(1)
    net = book_cnn()
    train_dl = DataLoader(ds, batch_size=16, shuffle=True)
    valid_dl = DataLoader(ds, batch_size=16)
    result = call_train(training, net, 1, train_dl, valid_dl)
    check_history_shape(result, 1)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


def train_on(training, accelerator, epochs=2, **kwargs):
    """train() the tiny setup on the accelerator, explaining PyTorch's device errors."""
    model, train_dl, valid_dl, log = setup()
    history = call_train(training, model, epochs, train_dl, valid_dl, **{"device": accelerator, **kwargs})
    return model, history, log


@pytest.mark.cuda
@pytest.mark.audit("device.types")
def test_training_on_the_accelerator_keeps_float_histories(training, accelerator):
    _, history, _ = train_on(training, accelerator)
    check_history_shape(history, 2)


@pytest.mark.cuda
@pytest.mark.audit("device.moved", observed="whether each batch was moved to the accelerator")
def test_training_on_the_accelerator_moves_the_model_and_every_batch(training, accelerator):
    model, _, log = train_on(training, accelerator, epochs=1)
    devices = {p.device.type for p in model.parameters()}
    assert devices == {accelerator.type}, (
        "train(model, ..., device=device) must move the caller's model there: model.to(device) moves it in place\n"
        f"  after train(..., device={accelerator}) the model is on {devices}")
    assert all(moved for *_, moved in log.calls), (
        "a batch reached the model without being moved: write `x_batch = x_batch.to(device)`")


@pytest.mark.cuda
@pytest.mark.audit("device.numbers")
def test_training_on_the_accelerator_gives_the_cpus_numbers(training, accelerator):
    _, history, _ = train_on(training, accelerator)
    check_history_lists(history, 2)
    _, want = replay(epochs=2)
    for name, got_h, want_h in zip(HISTORY_NAMES, history, want):
        assert [float(v) for v in got_h] == pytest.approx(want_h, rel=1e-4, abs=1e-6), (
            "the device changes where the numbers are computed, not what they are\n"
            f"  {name} on {accelerator} is {list(got_h)}, on the CPU the book's algorithm gives {want_h}")


@pytest.mark.cuda
@pytest.mark.audit("device_none")
def test_device_none_trains_where_the_model_already_is(training, accelerator):
    model, train_dl, valid_dl, log = setup()
    model.to(accelerator)
    history = call_train(training, model, 1, train_dl, valid_dl)
    check_history_shape(history, 1)
    devices = {p.device.type for p in model.parameters()}
    assert devices == {accelerator.type}, (
        "device=None means the model's own device (next(model.parameters()).device): the model stays there\n"
        f"  a model on {accelerator} ended up on {devices}")


@pytest.mark.cuda
@pytest.mark.audit("evaluate.accelerator")
def test_evaluate_on_the_accelerator_returns_floats(training, accelerator):
    model, _, valid_dl, _ = setup()
    model.to(accelerator)
    loss, accuracy = call_evaluate(training, model, valid_dl, device=accelerator)
    model.to("cpu").eval()
    with torch.no_grad():
        want = book_epoch(model, valid_dl)
    problem = value_problem({"evaluate's loss": loss, "evaluate's accuracy": accuracy})
    assert problem is None, problem
    assert (loss, accuracy) == (pytest.approx(want[0], rel=1e-4), pytest.approx(want[1])), (
        "the device changes where the numbers are computed, not what they are\n"
        f"  evaluate on {accelerator} gave {(loss, accuracy)}, on the CPU {want}")
