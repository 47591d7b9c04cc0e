"""Checks for exercise 3, model: the book's CNN, layer for layer.

The book (chapter 14) builds the smile classifier as one nn.Sequential; these
checks hold `build_model()` to it: the same layers in the same order, 388,673
parameters, an (N, 1) output of probabilities, and no device moves inside.
"""

import torch
from hypothesis import given
from torch import nn
from torch.nn.modules.utils import _pair

from kata.reference import BOOK_PARAMETERS, book_cnn
from kata.strategies import batch_sizes


def describe(layer: nn.Module) -> str:
    """A layer as a person would write it, with the settings that matter here."""
    name = type(layer).__name__
    if isinstance(layer, nn.Conv2d):
        return (f"Conv2d({layer.in_channels} -> {layer.out_channels}, kernel_size={layer.kernel_size[0]}"
                f"{'' if layer.kernel_size[0] == layer.kernel_size[1] else 'x' + str(layer.kernel_size[1])}, "
                f"stride={_pair(layer.stride)[0]}, padding={_pair(layer.padding)[0]}, bias={layer.bias is not None})")
    if isinstance(layer, (nn.MaxPool2d, nn.AvgPool2d)):
        return (f"{name}(kernel_size={_pair(layer.kernel_size)[0]}, "
                f"stride={_pair(layer.stride or layer.kernel_size)[0]}, padding={_pair(layer.padding)[0]})")
    if isinstance(layer, nn.Dropout):
        return f"Dropout(p={layer.p})"
    if isinstance(layer, nn.Linear):
        return f"Linear({layer.in_features} -> {layer.out_features}, bias={layer.bias is not None})"
    if isinstance(layer, nn.Flatten):
        return f"Flatten(start_dim={layer.start_dim}, end_dim={layer.end_dim})"
    return f"{name}()"


def layers(net: nn.Module) -> list[nn.Module]:
    """The leaf layers in order (a nested nn.Sequential is looked into)."""
    return [m for m in net.modules() if not list(m.children())]


def test_build_model_returns_an_nn_sequential(model):
    net = model.build_model()
    assert isinstance(net, nn.Sequential), (
        f"build_model() returned {type(net).__name__}; the contract asks for the book's "
        "nn.Sequential (one stack of layers, called in order)")


def test_layers_match_the_book_in_order(model):
    found = [describe(m) for m in layers(model.build_model())]
    expected = [describe(m) for m in layers(book_cnn())]
    for i, (want, got) in enumerate(zip(expected, found)):
        assert got == want, (
            f"layer {i} is {got}, the book has {want} there.\n"
            f"The book's layers, in order:\n  " + "\n  ".join(expected))
    assert len(found) == len(expected), (
        f"build_model() has {len(found)} layers, the book's CNN has {len(expected)}: "
        + (f"missing {expected[len(found):]}" if len(found) < len(expected)
           else f"extra {found[len(expected):]}"))


def test_parameter_count_is_the_books_388673(model):
    n = sum(p.numel() for p in model.build_model().parameters())
    assert n == BOOK_PARAMETERS, (
        f"the model has {n:,} parameters, the book's CNN has {BOOK_PARAMETERS:,}: check the "
        "channel counts (3->32->64->128->256), kernel_size=3, and Linear(256, 1)")


@given(batch=batch_sizes)
def test_output_is_one_probability_per_image(model, batch):
    torch.manual_seed(batch)
    net = model.build_model().eval()
    x = torch.rand(batch, 3, 64, 64)
    with torch.no_grad():
        y = net(x)
    assert isinstance(y, torch.Tensor), f"the model returned {type(y).__name__}, not a tensor"
    assert y.shape == (batch, 1), (
        f"for a batch of {batch} images of 3x64x64 the output has shape {tuple(y.shape)}, expected "
        f"({batch}, 1): AvgPool2d(8) takes the 8x8 maps to 1x1, Flatten makes (N, 256), Linear(256, 1) "
        "gives one score per image")
    assert y.dtype == torch.float32, f"output dtype is {y.dtype}, expected torch.float32"
    assert bool(((y > 0) & (y < 1)).all()), (
        f"outputs {y.flatten().tolist()} are not all in (0, 1): the last layer must be nn.Sigmoid(), "
        "so that BCELoss gets probabilities")


def test_initial_weights_are_the_books_under_manual_seed_1(model):
    torch.manual_seed(1)
    got = model.build_model()
    torch.manual_seed(1)
    want = book_cnn()
    got_params = [p for m in layers(got) for p in m.parameters(recurse=False)]
    want_params = [p for m in layers(want) for p in m.parameters(recurse=False)]
    assert len(got_params) == len(want_params), "the model's parameter tensors differ from the book's"
    for i, (g, w) in enumerate(zip(got_params, want_params)):
        assert g.shape == w.shape and torch.equal(g.detach(), w.detach()), (
            f"parameter tensor {i} ({tuple(g.shape)}) differs from the book's model built after "
            "torch.manual_seed(1): build the layers in the book's order, and don't re-initialise or "
            "draw random numbers in between (the seed fixes the initial weights, and so the run)")


def test_build_model_leaves_placement_to_the_caller(model, monkeypatch):
    moves = []
    for method in ("to", "cuda", "cpu", "to_empty"):
        original = getattr(nn.Module, method)

        def spy(self, *args, _method=method, _original=original, **kwargs):
            moves.append(f".{_method}({', '.join(map(repr, args))})")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(nn.Module, method, spy)
    net = model.build_model()
    monkeypatch.undo()
    assert not moves, (
        f"build_model() called {', '.join(moves)} on the model: a model is built on the CPU and the "
        "caller moves it (`model.to(device)`, which moves the same object in place)")
    devices = {p.device.type for p in net.parameters()}
    assert devices == {"cpu"}, f"the new model's parameters are on {devices}; build it on the CPU"


def test_each_call_builds_a_new_model(model):
    first, second = model.build_model(), model.build_model()
    assert first is not second, (
        "build_model() returned the same object twice: training one would change the other. "
        "Build the layers inside the function")
    shared = {id(p) for p in first.parameters()} & {id(p) for p in second.parameters()}
    assert not shared, "two models from build_model() share parameter tensors; create new layers each call"


def test_dropout_is_active_in_train_mode_only(model):
    net = model.build_model()
    x = torch.rand(4, 3, 64, 64)
    torch.manual_seed(0)
    net.train()
    a, b = net(x), net(x)
    assert not torch.equal(a, b), (
        "in train() mode two forward passes gave the same output: the model has no active Dropout(0.5) "
        "after the first two blocks")
    net.eval()
    with torch.no_grad():
        c, d = net(x), net(x)
    assert torch.equal(c, d), "in eval() mode the output changes between calls: nothing random may run in eval mode"
