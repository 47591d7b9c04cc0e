"""Checks for exercise 4, training: the book's loop, with histories of floats.

Most checks train a tiny deterministic model (Flatten, Linear, Sigmoid: no
dropout, so every run is the same) on tiny tensors, and compare the learner's
`train` with an exact replay of the book's algorithm: BCELoss, Adam(lr=0.001),
per-sample means, accuracy as a share of `pred >= 0.5` that match, validation
in eval mode without gradients. Hooks on the model record how each forward
pass ran (train or eval mode, gradients on or off, batch moved or not).
"""

import copy
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DataLoader

from kata.reference import (BATCH, N_TRAIN, book_cnn, book_epoch, describe, explained_device_mismatch,
                            replay, tiny_model, tiny_setup as setup)

HISTORY_NAMES = ("loss_hist_train", "loss_hist_valid", "accuracy_hist_train", "accuracy_hist_valid")


def run_train(training, model, epochs, train_dl, valid_dl, **kwargs):
    result = training.train(model, epochs, train_dl, valid_dl, **kwargs)
    check_history_shape(result, epochs)
    return [list(h) for h in result]


# --- what a history must be ----------------------------------------------------


def check_history_shape(result, epochs):
    assert isinstance(result, (tuple, list)) and len(result) == 4, (
        "train() must return the four histories (loss_hist_train, loss_hist_valid, accuracy_hist_train, "
        f"accuracy_hist_valid); it returned {type(result).__name__}"
        + (f" of {len(result)}" if isinstance(result, (tuple, list)) else ""))
    for name, h in zip(HISTORY_NAMES, result):
        assert isinstance(h, list), f"{name} is a {type(h).__name__}; each history is a list"
        assert len(h) == epochs, f"{name} has {len(h)} entries after {epochs} epochs: one per epoch"
        for i, v in enumerate(h):
            assert type(v) is float, (
                f"{name}[{i}] is {describe(v)}. The histories must hold plain Python floats: `.item()` "
                "turns a 0-d tensor into a Python number on the host (`.float()` only changes the dtype and "
                "keeps the device). On a GPU, a history of tensors is the seed's crash: matplotlib can only "
                "plot host values")


# --- the checks ----------------------------------------------------------------


def test_histories_are_four_lists_of_python_floats(training):
    model, train_dl, valid_dl, _ = setup()
    run_train(training, model, 2, train_dl, valid_dl)


@given(n_train=st.integers(1, 12), batch=st.integers(1, 5), epochs=st.integers(1, 3), seed=st.integers(0, 99))
def test_histories_hold_a_mean_loss_and_a_share_for_any_sizes(training, n_train, batch, epochs, seed):
    model, train_dl, valid_dl, _ = setup(n_train=n_train, n_valid=max(1, n_train // 2), batch=batch, seed=seed)
    history = run_train(training, model, epochs, train_dl, valid_dl)
    for name, h in zip(HISTORY_NAMES, history):
        for i, v in enumerate(h):
            assert math.isfinite(v), f"{name}[{i}] is {v}"
            if name.startswith("accuracy"):
                assert 0.0 <= v <= 1.0, (
                    f"{name}[{i}] = {v} with {n_train} samples in batches of {batch}: accuracy is the SHARE of "
                    "correct predictions, the count divided by the number of samples (len(dl.dataset)), "
                    "in [0, 1]")
            else:
                assert v >= 0.0, f"{name}[{i}] = {v}: a binary cross-entropy is never negative"


def test_loss_and_accuracy_are_means_over_samples(training):
    model, train_dl, valid_dl, _ = setup()
    got = run_train(training, model, 1, train_dl, valid_dl)
    _, want = replay(epochs=1)
    assert got[0][0] == pytest.approx(want[0][0], rel=1e-5), (
        f"loss_hist_train[0] = {got[0][0]:.6f}, the book's mean over samples is {want[0][0]:.6f}. With "
        f"{N_TRAIN} samples in batches of {BATCH}, the last batch is smaller: add loss.item() * batch size for "
        "each batch and divide by len(train_dl.dataset), not by the number of batches")
    for i, name in ((2, "accuracy_hist_train"), (3, "accuracy_hist_valid"), (1, "loss_hist_valid")):
        assert got[i][0] == pytest.approx(want[i][0], rel=1e-5, abs=1e-7), (
            f"{name}[0] = {got[i][0]:.6f}, the book's algorithm gives {want[i][0]:.6f}: count the correct "
            "predictions (pred >= 0.5 equals the label) and the loss times batch size, over all samples, "
            "and divide by len(dl.dataset)")


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
            pytest.fail(f"the trained weights are what {label} gives: the book uses nn.BCELoss(), "
                        "torch.optim.Adam(model.parameters(), lr=0.001), and zeroes the gradients after "
                        "each step", pytrace=False)
    pytest.fail("the histories or the trained weights differ from the book's algorithm: per batch forward, "
                "BCELoss, backward, optimizer.step(), optimizer.zero_grad() with Adam(lr=0.001); then "
                f"validation.\n  yours: {got}\n  book:  {want}", pytrace=False)


def test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad(training):
    model, train_dl, valid_dl, log = setup()
    run_train(training, model, 2, train_dl, valid_dl)
    phases = {phase for phase, *_ in log.calls}
    assert phases == {"train", "valid"}, f"the model ran on the {sorted(map(str, phases))} batches only"
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
def test_every_batch_is_moved_to_the_device(training, device):
    model, train_dl, valid_dl, log = setup()
    run_train(training, model, 1, train_dl, valid_dl, device=device and torch.device(device))
    for phase, _, _, moved in log.calls:
        assert moved, (
            f"a {phase} batch reached the model without being moved: `x_batch.to(device)` RETURNS the moved "
            "tensor and leaves x_batch where it was, so write `x_batch = x_batch.to(device)`"
            + (" (device=None means the model's own device: next(model.parameters()).device)" if device is None
               else ""))


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


def test_the_callers_model_is_the_one_trained(training):
    model, train_dl, valid_dl, _ = setup()
    before = copy.deepcopy(model.state_dict())
    run_train(training, model, 1, train_dl, valid_dl, device=torch.device("cpu"))
    changed = [k for k in before if not torch.equal(before[k], model.state_dict()[k])]
    assert changed, (
        "after train() the caller's model is unchanged: train the model object you were given (no "
        "copy.deepcopy, and `model.to(device)` moves it in place) and call optimizer.step()")


def test_last_validation_entry_equals_evaluate_of_the_final_model(training):
    model, train_dl, valid_dl, _ = setup()
    history = run_train(training, model, 2, train_dl, valid_dl)
    model.eval()
    with torch.no_grad():
        want_loss, want_acc = book_epoch(model, valid_dl)
    got_loss, got_acc = training.evaluate(model, valid_dl)
    assert (history[1][-1], history[3][-1]) == (pytest.approx(want_loss, rel=1e-5), pytest.approx(want_acc)), (
        f"the last epoch reports validation loss {history[1][-1]:.6f} and accuracy {history[3][-1]:.4f}, but the "
        f"final model scores {want_loss:.6f} and {want_acc:.4f} on the validation set: validate after the "
        "epoch's training, on valid_dl, with the model as it is then")
    assert (got_loss, got_acc) == (pytest.approx(want_loss, rel=1e-5), pytest.approx(want_acc)), (
        f"evaluate(model, valid_dl) gave ({got_loss:.6f}, {got_acc:.4f}); the book's measures give "
        f"({want_loss:.6f}, {want_acc:.4f})")


def test_on_epoch_is_called_once_per_epoch_with_the_history_so_far(training):
    model, train_dl, valid_dl, _ = setup()
    calls = []
    history = run_train(training, model, 3, train_dl, valid_dl,
                        on_epoch=lambda epoch, h: calls.append((epoch, [list(x) for x in h])))
    assert [epoch for epoch, _ in calls] == [0, 1, 2], (
        f"on_epoch was called with epochs {[e for e, _ in calls]}; it is called once after each epoch, with "
        "the 0-based epoch number: 0, 1, 2 for three epochs")
    for epoch, seen in calls:
        assert [len(h) for h in seen] == [epoch + 1] * 4, (
            f"at epoch {epoch}, on_epoch saw histories of lengths {[len(h) for h in seen]}; it gets the four "
            f"lists so far ({epoch + 1} entries each), after the epoch's validation")
        assert seen == [h[:epoch + 1] for h in history], f"at epoch {epoch}, on_epoch saw other values than returned"


def test_evaluate_returns_the_books_measures_as_floats_without_training(training):
    model, _, valid_dl, log = setup()
    before = copy.deepcopy(model.state_dict())
    result = training.evaluate(model, valid_dl)
    assert isinstance(result, tuple) and len(result) == 2, "evaluate returns a tuple (loss, accuracy)"
    for name, v in zip(("loss", "accuracy"), result):
        assert type(v) is float, f"evaluate's {name} is {describe(v)}; return Python floats (.item())"
    model.eval()
    with torch.no_grad():
        want = book_epoch(model, valid_dl)
    assert result == (pytest.approx(want[0], rel=1e-5), pytest.approx(want[1])), (
        f"evaluate gave {result}, the book's measures give {want}: loss times batch size summed and divided "
        "by len(dl.dataset); accuracy the share of (pred >= 0.5) == label")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "evaluate changed the weights"
    assert log.calls and all(not training_ and not grad and moved for _, training_, grad, moved in log.calls), (
        "evaluate must run the model in eval() mode under torch.no_grad(), with each batch moved to the device")


def test_trains_the_books_cnn_on_a_real_dataloader(training, celeba_root):
    from torchvision import transforms as T

    from kata.celeba import CelebA

    tf = T.Compose([T.CenterCrop([178, 178]), T.Resize([64, 64]), T.ToTensor()])
    ds = CelebA(celeba_root, split="train", target_type="attr", transform=tf, target_transform=lambda a: a[31])
    torch.manual_seed(1)
    net = book_cnn()
    train_dl = DataLoader(ds, batch_size=16, shuffle=True)
    valid_dl = DataLoader(ds, batch_size=16)
    result = training.train(net, 1, train_dl, valid_dl)
    check_history_shape(result, 1)


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


def train_on(training, accelerator, epochs=2, **kwargs):
    """train() the tiny setup on the accelerator, explaining PyTorch's device errors."""
    model, train_dl, valid_dl, log = setup()
    with explained_device_mismatch(f"training on {accelerator}",
                                   "Every batch must be moved with `x_batch = x_batch.to(device)` (Tensor.to returns "
                                   "the moved tensor), and the model with model.to(device)"):
        history = training.train(model, epochs, train_dl, valid_dl, **{"device": accelerator, **kwargs})
    return model, history, log


@pytest.mark.cuda
def test_training_on_the_accelerator_keeps_float_histories(training, accelerator):
    _, history, _ = train_on(training, accelerator)
    check_history_shape(history, 2)


@pytest.mark.cuda
def test_training_on_the_accelerator_moves_the_model_and_every_batch(training, accelerator):
    model, _, log = train_on(training, accelerator, epochs=1)
    devices = {p.device.type for p in model.parameters()}
    assert devices == {accelerator.type}, (
        f"after train(model, ..., device={accelerator}) the caller's model is on {devices}: model.to(device) "
        "moves it in place")
    assert all(moved for *_, moved in log.calls), "a batch reached the model without being moved"


@pytest.mark.cuda
def test_training_on_the_accelerator_gives_the_cpus_numbers(training, accelerator):
    _, history, _ = train_on(training, accelerator)
    _, want = replay(epochs=2)
    for name, got_h, want_h in zip(HISTORY_NAMES, history, want):
        assert [float(v) for v in got_h] == pytest.approx(want_h, rel=1e-4, abs=1e-6), (
            f"{name} on {accelerator} is {list(got_h)}, on the CPU the book's algorithm gives {want_h}: the "
            "device changes where the numbers are computed, not what they are")


@pytest.mark.cuda
def test_device_none_trains_where_the_model_already_is(training, accelerator):
    model, train_dl, valid_dl, log = setup()
    model.to(accelerator)
    with explained_device_mismatch(f"train(model_on_{accelerator.type}, ..., device=None)",
                                   "device=None means the model's own device: next(model.parameters()).device"):
        history = training.train(model, 1, train_dl, valid_dl)
    check_history_shape(history, 1)
    assert {p.device.type for p in model.parameters()} == {accelerator.type}


@pytest.mark.cuda
def test_evaluate_on_the_accelerator_returns_floats(training, accelerator):
    model, _, valid_dl, _ = setup()
    model.to(accelerator)
    loss, accuracy = training.evaluate(model, valid_dl, device=accelerator)
    model.to("cpu").eval()
    with torch.no_grad():
        want = book_epoch(model, valid_dl)
    for name, v in (("loss", loss), ("accuracy", accuracy)):
        assert type(v) is float, f"evaluate's {name} on {accelerator} is {describe(v)}; return Python floats (.item())"
    assert (loss, accuracy) == (pytest.approx(want[0], rel=1e-4), pytest.approx(want[1])), (
        f"evaluate on {accelerator} gave {(loss, accuracy)}, on the CPU {want}")
